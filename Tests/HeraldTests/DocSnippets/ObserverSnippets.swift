import Dispatch
import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Synchronization
import Testing

// The code of `Docs/WritingAnObserver.md`, block for block. `SnippetCoverageTests` checks that the page
// shows exactly these lines; the page's test runs as part of this target.

/// Reports tasks whose completion came more than `threshold` seconds after their first resume.
final class SlowRequestDetector: SessionObserver {
    struct Key: Hashable {
        let session: Int
        let task: Int
    }

    let threshold: TimeInterval
    private let report: @Sendable (_ url: URL?, _ seconds: TimeInterval) -> Void
    private let firstResume = Mutex<[Key: Date]>([:])

    init(threshold: TimeInterval, report: @escaping @Sendable (_ url: URL?, _ seconds: TimeInterval) -> Void) {
        self.threshold = threshold
        self.report = report
    }

    func taskDidResume(_ notification: TypedNotification<TaskLifecycleEvent>) {
        let event = notification.userInfo
        let key = Key(session: event.sessionIdentifier, task: event.taskIdentifier)
        firstResume.withLock { started in
            if started[key] == nil { started[key] = event.date }
        }
    }

    func taskDidComplete(_ notification: TypedNotification<TaskCompletion>) {
        let done = notification.userInfo
        let key = Key(session: done.sessionIdentifier, task: done.taskIdentifier)
        // A task cancelled before it ever resumed completes without a resume: nothing to report.
        guard let start = firstResume.withLock({ $0.removeValue(forKey: key) }) else { return }
        let seconds = done.date.timeIntervalSince(start)
        let url = done.finalURL ?? done.request.url  // the payload says which request: no cast of `object`
        if seconds > threshold { report(url, seconds) }  // outside the lock: user code never runs under it
    }

    func observationDidEnd(_ end: ObservationEnd) {
        // The token ended while these ran: their completions won't come through it.
        let keys = end.openTasks.map { Key(session: $0.sessionIdentifier, task: $0.taskIdentifier) }
        firstResume.withLock { started in
            for key in keys { started[key] = nil }
        }
    }
}

final class Reports: Sendable {
    let paths = Mutex<[String]>([])
}

@Test("a request slower than the threshold is reported exactly once")
func reportsSlowRequests() async throws {
    let server = try await TestServer.start()
    let center = NotificationHub()
    let session = SessionManager(notificationCenter: center)
    let reports = Reports()
    let detector = SlowRequestDetector(threshold: 3.0) { url, _ in
        reports.paths.withLock { $0.append(url?.path ?? "?") }
    }
    let token = center.addObserver(detector)  // .posting: done with an event before the next observer
    let recorder = RecordingObserver(center: center)  // registered second, so it sees each event after

    let fast = try session.dataTask(with: Request(url: server.url("/json")))
    let slow = try session.dataTask(with: Request(url: server.url("/delay/5000")))
    fast.resume()
    slow.resume()
    try await recorder.waitForCompletions(2)

    // Only the slow request is certain to cross the threshold; on a starved machine the fast one may
    // too, so it is not asserted either way.
    #expect(reports.paths.withLock { $0 }.filter { $0 == "/delay/5000" }.count == 1)
    #expect(recorder.timeline(ofTask: slow.taskIdentifier) == [.resume, .complete])
    token.cancel()
    session.invalidate(cancelingTasks: true)
    try await server.shutdown()
}

@Suite("Docs/WritingAnObserver.md snippets")
struct ObserverSnippets {
    @Test("the closure form and registering the detector on a queue")
    func closureAndRegistration() async throws {
        let server = try await TestServer.start()
        let session = SessionManager(notificationCenter: NotificationHub())
        let center = session.notificationCenter
        let recorder = RecordingObserver(center: center)

        let token = center.addObserver(for: .taskDidComplete) { note in
            if let error = note.userInfo.error { print("task \(note.userInfo.taskIdentifier) failed: \(error.code)") }
        }

        let detector = SlowRequestDetector(threshold: 2.0) { url, seconds in
            print("slow request:", url?.absoluteString ?? "?", "took", seconds, "s")
        }
        let detectorQueue = DispatchQueue(label: "example.slow-requests")
        let detectorToken = session.notificationCenter.addObserver(detector, delivery: .queue(detectorQueue))

        let task = try session.dataTask(with: Request(url: server.url("/status/404")))
        task.resume()
        try await recorder.waitForCompletions(1)
        withExtendedLifetime((token, detectorToken)) {}
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
