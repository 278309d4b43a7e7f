import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald

/// A redirect or a Basic challenge is kept from the data-task hooks while it arrives, since Herald may follow it
/// with another transfer. When it ends up the task's result (the redirection hook returns `nil`, no credential
/// answers the challenge), the hooks see it like any final response, in order, before the completion handler.
@Suite("Data-task hooks and a redirect or challenge that becomes the result")
struct HopResponseHookTests {
    /// The body whatever the status: the completion carries the 401's or the 302's body.
    private static let anyStatus = DataResponseSerializer(validation: ResponseValidation(acceptableStatusCodes: nil))

    /// A session whose data-task hooks log into `log`; the response hook answers `disposition`.
    private static func hookedFixture(
        log: OrderedLog, body: Collected<Data>, disposition: ResponseDisposition = .allow,
        completionQueue: DispatchQueue? = nil
    ) async throws -> SessionFixture {
        var fixture = try await SessionFixture.make(serializer: Self.anyStatus)
        if let completionQueue {
            fixture.session.invalidate(cancelingTasks: true)
            let session = SessionManager(notificationCenter: fixture.center, completionQueue: completionQueue)
            session.responseSerializer = Self.anyStatus
            fixture = SessionFixture(
                server: fixture.server, center: fixture.center, recorder: fixture.recorder, session: session)
        }
        fixture.session.dataTaskDidReceiveResponse = { _, response in
            log.append("response \(response.statusCode)")
            return disposition
        }
        fixture.session.dataTaskDidReceiveData = { _, data in
            log.append("data")
            body.append(data)
        }
        return fixture
    }

    private static func start(_ path: String, in fixture: SessionFixture, log: OrderedLog) throws -> DataTask {
        let request = Request(url: fixture.server.url(path))
        let task = try fixture.session.dataTask(with: request) { response, object, error in
            let outcome: String
            switch error?.code {
            case nil: outcome = "none"
            case .cancelled?: outcome = "cancelled"
            case .invalidRequest?: outcome = "invalidRequest"
            case let other?: outcome = "\(other)"
            }
            log.append("completion \(response?.statusCode ?? 0) \(outcome) \((object as? Data)?.count ?? -1)")
        }
        task.resume()
        return task
    }

    @Test("a 401 whose challenge is rejected: the response hook, then its body, then the completion")
    func rejectedChallenge() async throws {
        let log = OrderedLog()
        let body = Collected<Data>()
        let fixture = try await Self.hookedFixture(log: log, body: body)
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in
            log.append("challenge")
            return .rejectProtectionSpace
        }
        let task = try Self.start("/auth/basic?user=alice&password=s3cret", in: fixture, log: log)
        _ = try await fixture.recorder.waitForCompletions(1)
        await fixture.session.completionQueueBarrier()
        #expect(log.all == ["challenge", "response 401", "data", "completion 401 none 17"])
        #expect(body.all.reduce(Data(), +) == Data("401 Unauthorized\n".utf8))
        #expect(task.response?.statusCode == 401)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a redirect the redirection hook declines: the hooks see the 302 and its body")
    func declinedRedirect() async throws {
        let log = OrderedLog()
        let body = Collected<Data>()
        let fixture = try await Self.hookedFixture(log: log, body: body)
        fixture.session.taskWillPerformHTTPRedirection = { _, _, _ in
            log.append("redirect")
            return nil
        }
        let task = try Self.start("/redirect/2", in: fixture, log: log)
        _ = try await fixture.recorder.waitForCompletions(1)
        await fixture.session.completionQueueBarrier()
        #expect(log.all == ["redirect", "response 302", "data", "completion 302 none 10"])
        #expect(body.all.reduce(Data(), +) == Data("302 Found\n".utf8))
        #expect(fixture.server.requests(forPath: "/redirect/1").isEmpty)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a 401 whose only Digest challenge can't be answered: the hooks see it and its body, then the completion")
    func unanswerableChallenge() async throws {
        let log = OrderedLog()
        let body = Collected<Data>()
        let fixture = try await Self.hookedFixture(log: log, body: body)
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in
            log.append("challenge")
            return .performDefaultHandling
        }
        // qop=auth-int alone: libcurl has no answer for it.
        let challenge = #"Digest realm="r", nonce="n", qop="auth-int""#
        let query = challenge.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let task = try Self.start("/status/401?authenticate=\(query)", in: fixture, log: log)
        _ = try await fixture.recorder.waitForCompletions(1)
        await fixture.session.completionQueueBarrier()
        // Before, the engine kept the 401 from the hooks and the task completed with it directly: the response
        // hook was never asked and the body never reached the data hook.
        #expect(log.all == ["response 401", "data", "completion 401 none 17"])
        #expect(body.all.reduce(Data(), +) == Data("401 Unauthorized\n".utf8))
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test(".cancel on such a response: the task completes once, cancelled, and its body reaches no hook")
    func cancelled() async throws {
        let log = OrderedLog()
        let body = Collected<Data>()
        let fixture = try await Self.hookedFixture(log: log, body: body, disposition: .cancel)
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in .rejectProtectionSpace }
        let task = try Self.start("/auth/basic?user=alice&password=s3cret", in: fixture, log: log)
        _ = try await fixture.recorder.waitForCompletions(1)
        await fixture.session.completionQueueBarrier()
        #expect(log.all.first == "response 401")
        #expect(log.all.filter { $0.hasPrefix("completion") }.count == 1)
        #expect(log.all.last?.hasPrefix("completion 401 cancelled") == true)
        #expect(body.all.isEmpty)
        #expect(task.error?.code == .cancelled)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test(".becomeDownload on such a response fails the task with invalidRequest, saying why")
    func becomeDownloadRefused() async throws {
        let log = OrderedLog()
        let body = Collected<Data>()
        let fixture = try await Self.hookedFixture(log: log, body: body, disposition: .becomeDownload)
        fixture.session.taskWillPerformHTTPRedirection = { _, _, _ in nil }
        let task = try Self.start("/redirect/1", in: fixture, log: log)
        _ = try await fixture.recorder.waitForCompletions(1)
        await fixture.session.completionQueueBarrier()
        #expect(log.all == ["response 302", "completion 302 invalidRequest -1"])
        #expect(task.error?.code == .invalidRequest)
        #expect(task.error?.message.contains("already arrived") == true)
        #expect(body.all.isEmpty)
        try await fixture.tearDown()
    }

    @Test("without the data hooks, a rejected challenge completes with the 401 and its body as before")
    func withoutHooks() async throws {
        let fixture = try await SessionFixture.make(serializer: Self.anyStatus)
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in .rejectProtectionSpace }
        let calls = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/auth/basic?user=alice&password=s3cret")),
            completionHandler: calls.handler)
        task.resume()
        _ = try await fixture.recorder.waitForCompletions(1)
        await fixture.session.completionQueueBarrier()
        #expect(calls.all.first?.response?.statusCode == 401)
        #expect((calls.all.first?.object as? Data) == Data("401 Unauthorized\n".utf8))
        try await fixture.tearDown()
    }

    @Test(
        "a task cancelled while its redirection or challenge hook decides completes at once, whoever owns the completion queue; the hook's answer is ignored",
        arguments: ["redirect", "challenge"], [false, true])
    func cancelledWhileTheHookDecides(hop: String, callerQueue: Bool) async throws {
        let log = OrderedLog()
        let body = Collected<Data>()
        let fixture = try await Self.hookedFixture(
            log: log, body: body, completionQueue: callerQueue ? DispatchQueue(label: "caller's") : nil)
        let entered = OneShot<Void>()
        let release = DispatchSemaphore(value: 0)
        fixture.session.taskWillPerformHTTPRedirection = { _, _, _ in
            entered.send(())
            release.wait()
            log.append("redirect returns")
            return nil
        }
        fixture.session.taskDidReceiveAuthenticationChallenge = { _, _ in
            entered.send(())
            release.wait()
            log.append("challenge returns")
            return .rejectProtectionSpace
        }
        let path = hop == "redirect" ? "/redirect/1" : "/auth/basic?user=alice&password=s3cret"
        let task = try Self.start(path, in: fixture, log: log)
        try await entered.value()
        task.cancel()
        _ = try await fixture.recorder.waitForCompletions(1)
        await fixture.session.completionQueueBarrier()
        release.signal()
        // What the hook's answer would lead to runs on the task's hook queue, right after the hook.
        task.hookQueue.sync {}
        await fixture.session.completionQueueBarrier()
        // Before, the declined hop's response went to the response hook and its body to the data hook after the
        // completion handler had run; and with the caller's completion queue, the completion waited on the task's
        // hook queue behind the hook, so the wait for it above timed out.
        let status = hop == "redirect" ? 302 : 401
        #expect(log.all == ["completion \(status) cancelled -1", "\(hop) returns"])
        #expect(body.all.isEmpty)
        #expect(task.error?.code == .cancelled)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }
}
