import Foundation
import Herald
import HeraldTesting
import Testing

/// libcurl rejects a status line it cannot parse with `CURLE_UNSUPPORTED_PROTOCOL` (1), the code it also uses for
/// a URL scheme it does not speak. Herald checks the scheme before a transfer starts, so once the request went out
/// that code means the server's answer is broken: `badServerResponse`, never `unsupportedURL`.
@Suite("A malformed status line completes with badServerResponse")
struct MalformedStatusLineTests {
    @Test(
        "each malformed status line variant is a bad server response",
        arguments: [
            "HTTP/1.1 abc",  // a code that is not digits
            "HTTP/9.9 200 OK",  // a version no one speaks
            "HTTP/1.1 20",  // two digits
            "HTTP/1.1 2000 OK",  // four digits
            "HTTP/1.1",  // no code at all
            "HELLO",  // not a status line (curl calls it HTTP/0.9)
        ])
    func malformedStatusLine(_ line: String) async throws {
        let fixture = try await SessionFixture.make()
        let (task, log) = try await Self.fetch(answeredWith: line, on: fixture)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        let error = try #require(log.all.first?.error)
        #expect(error.code == .badServerResponse)
        #expect(error.curlCode == 1)
        #expect(log.all.count == 1)
        try await fixture.tearDown()
    }

    @Test(
        "a reason phrase that follows the code without a space is still that code's response, as libcurl reads it",
        arguments: ["HTTP/1.1 200OK", "HTTP/1.1 200\tOK"])
    func reasonWithoutSpace(_ line: String) async throws {
        let fixture = try await SessionFixture.make()
        let (_, log) = try await Self.fetch(answeredWith: line, on: fixture)
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        #expect(call.response?.statusCode == 200)
        try await fixture.tearDown()
    }

    /// Runs a data task to `/fault/garbage-status`, whose answer is `line` and a blank line; returns once it
    /// completed, with its completion handler's calls.
    private static func fetch(
        answeredWith line: String, on fixture: SessionFixture
    ) async throws -> (DataTask, CompletionLog) {
        let log = CompletionLog()
        var components = URLComponents(url: fixture.server.url("/fault/garbage-status"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "line", value: line)]
        let url = try #require(components?.url)
        let task = try fixture.session.dataTask(with: Request(url: url), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        return (task, log)
    }

    @Test("a scheme the session does not allow is still unsupportedURL, before any request is sent")
    func unsupportedSchemeStaysUnsupportedURL() async throws {
        let fixture = try await SessionFixture.make()
        var thrown: HeraldError?
        do {
            _ = try fixture.session.dataTask(with: Request(url: URL(fileURLWithPath: "/etc/hostname")))
        } catch {
            thrown = error
        }
        #expect(thrown?.code == .unsupportedURL)
        #expect(fixture.server.requests.isEmpty)
        try await fixture.tearDown()
    }
}
