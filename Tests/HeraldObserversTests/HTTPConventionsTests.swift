import Foundation
import Herald
@testable import HeraldObservers
import Testing

/// The bounded values metrics and tracing observers put in dimensions and attributes.
@Suite("HTTP conventions for dimensions")
struct HTTPConventionsTests {
    @Test(
        "a status code from 100 to 599 is kept, anything else is _OTHER",
        arguments: [
            (100, "100"), (200, "200"), (404, "404"), (599, "599"), (99, "_OTHER"), (600, "_OTHER"), (0, "_OTHER"),
            (-200, "_OTHER"), (1_000, "_OTHER"),
        ])
    func statusCode(_ status: Int, _ expected: String) {
        #expect(HTTPAttributeValue.statusCode(status) == expected)
    }

    @Test(
        "the protocol version is 1.0, 1.1, 2 or 3, anything else _OTHER",
        arguments: [
            ("HTTP/1.1", "1.1"), ("HTTP/1.0", "1.0"), ("HTTP/2", "2"), ("HTTP/2.0", "2"), ("HTTP/3", "3"),
            ("HTTP/0.9", "_OTHER"), ("", "_OTHER"), ("SPDY/3", "_OTHER"),
        ])
    func protocolVersion(_ version: String, _ expected: String) {
        #expect(HTTPAttributeValue.protocolVersion(version) == expected)
    }

    @Test("url.scheme is http or https, anything else _OTHER")
    func scheme() throws {
        #expect(HTTPAttributeValue.scheme(of: try #require(URL(string: "HTTPS://127.0.0.1/"))) == "https")
        #expect(HTTPAttributeValue.scheme(of: try #require(URL(string: "http://127.0.0.1/"))) == "http")
        #expect(HTTPAttributeValue.scheme(of: try #require(URL(string: "ftp://127.0.0.1/"))) == "_OTHER")
    }

    @Test("error.type is the status for a failed response, else the error code, else absent")
    func errorType() throws {
        let url = try #require(URL(string: "http://127.0.0.1/"))
        let notFound = HTTPResponse(url: url, statusCode: 404, headers: [:])
        let fine = HTTPResponse(url: url, statusCode: 200, headers: [:])
        let unacceptable = HeraldError(.unacceptableStatusCode, "404.")
        #expect(HTTPAttributeValue.errorType(error: nil, response: fine) == nil)
        #expect(HTTPAttributeValue.errorType(error: nil, response: notFound) == "404")
        #expect(HTTPAttributeValue.errorType(error: unacceptable, response: notFound) == "404")
        #expect(HTTPAttributeValue.errorType(error: unacceptable, response: nil) == "unacceptable_status_code")
        let lost = HeraldError(.networkConnectionLost, "Reset.")
        #expect(HTTPAttributeValue.errorType(error: lost, response: fine) == "network_connection_lost")
        #expect(HTTPAttributeValue.errorType(error: lost, response: nil) == "network_connection_lost")
        // A failed status wins over a transport error that came after its head (a 404 whose body broke off).
        #expect(HTTPAttributeValue.errorType(error: lost, response: notFound) == "404")
    }

    @Test("error.type is absent when the task refused a response below 400 that arrived: the request succeeded")
    func refusedResponseIsNoFailedRequest() throws {
        let url = try #require(URL(string: "http://127.0.0.1/"))
        let fine = HTTPResponse(url: url, statusCode: 200, headers: [:])
        let notModified = HTTPResponse(url: url, statusCode: 304, headers: [:])
        let notFound = HTTPResponse(url: url, statusCode: 404, headers: [:])
        let refusals = [
            HeraldError(.serializationFailed, "Not JSON."), HeraldError(.unacceptableContentType, "text/html."),
            HeraldError(.unacceptableStatusCode, "304."),
        ]
        for refusal in refusals {
            #expect(HTTPAttributeValue.errorType(error: refusal, response: fine) == nil)
            #expect(HTTPAttributeValue.errorType(error: refusal, response: notModified) == nil)
            #expect(HTTPAttributeValue.errorType(error: refusal, response: notFound) == "404")
            // Without a response it is all there is to say.
            #expect(HTTPAttributeValue.errorType(error: refusal, response: nil) == refusal.code.description)
        }
        // A failure of the exchange itself after a good head still counts.
        let tooLarge = HeraldError(.responseTooLarge, "Too large.")
        #expect(HTTPAttributeValue.errorType(error: tooLarge, response: fine) == "response_too_large")
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
