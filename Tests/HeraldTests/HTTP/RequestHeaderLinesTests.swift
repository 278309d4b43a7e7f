import Foundation
import HeraldTesting
import Testing

@testable import Herald

@Suite("Request header lines as the server receives them")
struct RequestHeaderLinesTests {
    @Test("each field arrives as given: an empty value stays a field, a UTF-8 value keeps its bytes, order is kept")
    func fieldsArriveAsGiven() async throws {
        let fixture = try await SessionFixture.make()
        var headers = HTTPHeaders()
        headers.add(name: "X-Empty", value: "")
        headers.add(name: "X-Text", value: "caf\u{E9} \u{1F600}")
        headers.add(name: "X-Repeated", value: "one")
        headers.add(name: "X-Repeated", value: "two")
        let request = Request(url: fixture.server.url("/echo"), headers: headers)
        let (_, response) = try await fixture.session.data(for: request)
        #expect(response.statusCode == 200)
        let recorded = try #require(fixture.server.requests.first)
        let sent = recorded.headers.filter { $0.name.lowercased().hasPrefix("x-") }
        #expect(sent.map(\.name) == ["X-Empty", "X-Text", "X-Repeated", "X-Repeated"])
        #expect(sent.map(\.value) == ["", "caf\u{E9} \u{1F600}", "one", "two"])
        try await fixture.tearDown()
    }
}
