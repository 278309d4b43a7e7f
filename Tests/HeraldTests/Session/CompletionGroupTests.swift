import Dispatch
import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Completion group")
struct CompletionGroupTests {
    /// What one completion handler saw of the group and the queue it ran on.
    struct Sighting: Sendable {
        let groupWasHeld: Bool
        let queueMarker: String?
    }

    /// Runs `count` GETs on a session with a completion group and returns what each handler saw, once every
    /// handler has run and the group has emptied.
    static func run(count: Int, completionQueue: DispatchQueue?) async throws -> [Sighting] {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let recorder = RecordingObserver(center: center)
        let group = DispatchGroup()
        let session = SessionManager(
            notificationCenter: center, completionQueue: completionQueue, completionGroup: group)
        session.completionQueue.setSpecific(key: CompletionLog.queueKey, value: "completion")
        let sightings = Locked<[Sighting]>([])
        for _ in 0..<count {
            let task = try session.dataTask(with: Request(url: server.url("/json"))) { _, _, _ in
                // Inside the group, nothing but this handler can be holding it.
                let held = group.wait(timeout: .now()) == .timedOut
                let marker = DispatchQueue.getSpecific(key: CompletionLog.queueKey)
                sightings.withLock { $0.append(Sighting(groupWasHeld: held, queueMarker: marker)) }
            }
            task.resume()
        }
        try await recorder.waitForCompletions(count)
        let emptied = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: group.wait(timeout: .now() + 30)) }
        }
        #expect(emptied == .success, "every handler leaves the group it entered")
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
        return sightings.withLock { $0 }
    }

    @Test("on the session's own queue, every completion handler runs inside the group, on that queue")
    func ownQueue() async throws {
        let sightings = try await Self.run(count: 8, completionQueue: nil)
        #expect(sightings.count == 8)
        for sighting in sightings {
            #expect(sighting.groupWasHeld)
            #expect(sighting.queueMarker == "completion")
        }
    }

    @Test("on a caller's queue, every completion handler runs inside the group, on that queue")
    func callersQueue() async throws {
        let queue = DispatchQueue(label: "test.completion-group.callers")
        let sightings = try await Self.run(count: 8, completionQueue: queue)
        #expect(sightings.count == 8)
        for sighting in sightings {
            #expect(sighting.groupWasHeld)
            #expect(sighting.queueMarker == "completion")
        }
    }
}
