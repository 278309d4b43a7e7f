import Foundation
import Testing

@testable import HeraldTesting

@Suite("Event stream gates (/events/{n}?gate=K)")
struct EventGateTests {
    @Test("gated responses send their heads, then one body per pass granted")
    func onePassPerResponse() async throws {
        try await withTestServer { server in
            let first = try await RawHTTPClient.connect(port: server.port)
            let second = try await RawHTTPClient.connect(port: server.port)
            try await first.send(RawHTTPClient.get("/events/1?gate=k&retry=5"))
            try await second.send(RawHTTPClient.get("/events/1?gate=k&retry=5"))
            // Both heads are written; the bodies wait at the gate.
            try await server.waitUntil { statistics in
                statistics.requests.count == 2 && statistics.requests.allSatisfy { $0.responseStatus == 200 }
            }
            #expect(server.requests.allSatisfy { $0.responseStartedAt != nil && !$0.isComplete })
            server.openGate("k")
            server.openGate("k")
            for client in [first, second] {
                let response = try await client.response()
                #expect(response.statusCode == 200)
                #expect(response.header("Content-Type") == "text/event-stream")
                let body = String(decoding: response.body, as: UTF8.self)
                // The retry line is body too: it waited at the gate with the event.
                #expect(body.contains("retry: 5\n\n"))
                #expect(body.contains("id: 1\nevent: tick\n"))
            }
        }
    }

    @Test("a pass granted before any response arrives is kept for the next one")
    func passGrantedEarly() async throws {
        try await withTestServer { server in
            server.openGate("early")
            let response = try await RawHTTPClient.exchange(
                RawHTTPClient.get("/events/2?gate=early"), port: server.port)
            #expect(response.statusCode == 200)
            #expect(String(decoding: response.body, as: UTF8.self).contains("id: 2\n"))
        }
    }
}
