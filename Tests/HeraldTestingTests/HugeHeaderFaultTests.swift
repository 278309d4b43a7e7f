import Foundation
@testable import HeraldTesting
import Testing

@Suite("Fault: huge response head")
struct HugeHeaderFaultTests {
    @Test("/fault/huge-header sends K header fields whose values add up to exactly N bytes, then ok and a close")
    func hugeHeader() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/fault/huge-header?bytes=10001&lines=3"), port: server.port)
            #expect(response.statusCode == 200)
            let values = (0..<3).map { response.header("X-Huge-\($0)") }
            #expect(values.map { $0?.count } == [3334, 3334, 3333])
            #expect(values.allSatisfy { $0?.allSatisfy { $0 == "h" } == true })
            #expect(response.header("X-Huge-3") == nil)
            #expect(String(decoding: response.body, as: UTF8.self) == "ok\n")
            #expect(response.ending == .closed)
        }
    }

    @Test("/fault/huge-header defaults to one 1 MiB field")
    func hugeHeaderDefault() async throws {
        try await withTestServer { server in
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/fault/huge-header"), port: server.port)
            #expect(response.statusCode == 200)
            #expect(response.header("X-Huge-0")?.utf8.count == 1 << 20)
            #expect(String(decoding: response.body, as: UTF8.self) == "ok\n")
        }
    }

    @Test("/fault/huge-header parameters are validated")
    func hugeHeaderParameters() {
        let parsed = Route.parse(uri: "/fault/huge-header?bytes=5&lines=2").route.hugeHeader
        #expect(parsed?.bytes == 5)
        #expect(parsed?.lines == 2)
        for uri in ["/fault/huge-header?bytes=0", "/fault/huge-header?bytes=4&lines=5", "/fault/huge-header?bytes=x"] {
            guard case .badRequest = Route.parse(uri: uri).route else {
                Issue.record("\(uri) should be a bad request")
                continue
            }
        }
    }
}

extension Route {
    fileprivate var hugeHeader: (bytes: Int, lines: Int)? {
        if case .fault(.hugeHeader(let bytes, let lines)) = self { return (bytes, lines) }
        return nil
    }
}
