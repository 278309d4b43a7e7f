import Foundation
import Herald
@testable import HeraldObservers
import Testing

/// The bounded values metrics and tracing observers put in dimensions and attributes.
@Suite("HTTP conventions for dimensions")
struct HTTPConventionsTests {
    @Test(
        "a status class per hundred from 100 to 599, other outside",
        arguments: [
            (100, "1xx"), (199, "1xx"), (200, "2xx"), (204, "2xx"), (299, "2xx"), (300, "3xx"), (399, "3xx"),
            (400, "4xx"), (499, "4xx"), (500, "5xx"), (599, "5xx"), (99, "other"), (600, "other"),
            (0, "other"), (-200, "other"), (1_000, "other"),
        ])
    func statusClass(_ status: Int, _ expected: String) throws {
        let url = try #require(URL(string: "http://127.0.0.1/"))
        #expect(HTTPResponse(url: url, statusCode: status, headers: [:]).statusClass == expected)
    }

    @Test(
        "known methods are kept, anything else is _OTHER",
        arguments: [
            ("GET", "GET"), ("POST", "POST"), ("HEAD", "HEAD"), ("PUT", "PUT"), ("DELETE", "DELETE"),
            ("CONNECT", "CONNECT"), ("OPTIONS", "OPTIONS"), ("TRACE", "TRACE"), ("PATCH", "PATCH"),
            ("get", "_OTHER"), ("PROPFIND", "_OTHER"), ("", "_OTHER"), ("GET ", "_OTHER"),
        ])
    func method(_ method: String, _ expected: String) {
        #expect(KnownHTTPMethod.bounded(method) == expected)
    }

    @Test("no method is _OTHER")
    func missingMethod() {
        #expect(KnownHTTPMethod.bounded(nil) == "_OTHER")
    }
}
