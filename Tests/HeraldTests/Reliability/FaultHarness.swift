import Foundation
@testable import Herald
import HeraldTesting
import Testing

/// Runs one failing request the way the fault suite needs it, and checks the contract every fault shares
/// (Docs/Notifications.md, ordering and exactly-once): the task completes exactly once (`resume`, `complete`) with a typed error, its
/// completion handler runs once, a task running next to it and a task started after it on the same session
/// succeed, the pool holds no transfer afterwards, and once the session is invalidated no socket of this
/// process is still connected to the server.
struct FaultHarness {
    /// A host name no resolver can answer and none is asked about: its first label is 64 octets, over DNS's
    /// limit of 63, so the system resolver refuses it before building a query and no packet leaves the
    /// machine (a name under `.invalid` would still be sent to the configured name server). libcurl reports
    /// it as `CURLE_COULDNT_RESOLVE_HOST`, as it does a name that doesn't exist.
    static let unresolvableHost = String(repeating: "h", count: 64) + ".invalid"

    let fixture: SessionFixture

    static func make(configuration: SessionConfiguration = .default) async throws -> FaultHarness {
        FaultHarness(
            fixture: try await SessionFixture.make(configuration: configuration, serializer: DataResponseSerializer()))
    }

    var server: TestServer { fixture.server }

    /// Runs `request` to its failure and returns its single completion-handler call.
    ///
    /// - Parameters:
    ///   - request: The request that must fail.
    ///   - code: The error it must fail with; `nil` to check the error with `verify` alone.
    ///   - alsoCheckingPorts: Other ports the failing request connected to, whose sockets must be gone too.
    ///   - verify: Further checks on the failure.
    /// - Returns: The completion handler's call.
    @discardableResult
    func expectFailure(
        _ request: Request, code: HeraldError.Code?, alsoCheckingPorts: [Int] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> CompletionLog.Call {
        let session = fixture.session
        let recorder = fixture.recorder
        let log = CompletionLog()
        let failing = try session.dataTask(with: request, completionHandler: log.handler)
        let neighbourLog = CompletionLog()
        let neighbour = try session.dataTask(
            with: Request(url: server.url("/bytes/4096?chunkSize=512")), completionHandler: neighbourLog.handler)
        failing.resume()
        neighbour.resume()
        try await recorder.waitForCompletions(2, timeout: .seconds(60))
        let successor = try session.dataTask(with: Request(url: server.url("/json")))
        successor.resume()
        try await recorder.waitForCompletions(3, timeout: .seconds(60))

        let call = try #require(log.all.first, "no completion handler call", sourceLocation: sourceLocation)
        let error = try #require(call.error, "the task succeeded", sourceLocation: sourceLocation)
        if let code { #expect(error.code == code, "\(error)", sourceLocation: sourceLocation) }
        for task in [neighbour, successor] {
            #expect(task.error == nil, "\(task.error.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
            #expect(task.response?.statusCode == 200, sourceLocation: sourceLocation)
        }
        let neighbourBody = neighbourLog.all.first?.object as? Data
        #expect(neighbourBody.map(Array.init) == TestServer.expectedBytes(in: 0..<4096), sourceLocation: sourceLocation)
        #expect((await session.poolCounts()).transfers == 0, sourceLocation: sourceLocation)

        session.invalidate(cancelingTasks: false)
        try await recorder.waitForInvalidation(timeout: .seconds(60))
        // Checked after everything else happened, so a late second completion would have shown up.
        #expect(
            recorder.timeline(ofTask: failing.taskIdentifier) == [.resume, .complete], sourceLocation: sourceLocation)
        #expect(
            recorder.completions.filter { $0.taskIdentifier == failing.taskIdentifier }.count == 1,
            sourceLocation: sourceLocation)
        #expect(log.all.count == 1, sourceLocation: sourceLocation)
        // The pool's close was handed to the engine before `sessionDidInvalidate` was posted, and
        // curl_multi_cleanup closes every connection synchronously: once the engine has run everything
        // queued so far, no socket of this session can remain. No polling needed.
        await session.engineBarrier()
        for port in [server.port] + alsoCheckingPorts {
            let left = ClientSockets.count(connectedTo: port)
            #expect(left == 0, "\(left) socket(s) still connected to port \(port)", sourceLocation: sourceLocation)
        }
        try await server.shutdown()
        return call
    }
}
