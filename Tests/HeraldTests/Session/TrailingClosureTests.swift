import Foundation
import Herald
import HeraldTesting
import Testing

@Suite("Factory call forms")
struct TrailingClosureTests {
    @Test("a trailing closure after dataTask(with:) is the completion handler")
    func trailingCompletion() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let handler = log.handler
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json"))) {
            response, object, error in
            handler(response, object, error)
        }
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.count == 1)
        #expect(log.all.first?.response?.statusCode == 200)
        try await fixture.tearDown()
    }
}
