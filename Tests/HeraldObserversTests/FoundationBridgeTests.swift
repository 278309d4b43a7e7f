import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import HeraldTesting
import Testing

/// What Foundation observers receive, in order.
private final class FoundationLog: Sendable {
    struct Entry: @unchecked Sendable {
        // Safety: written once on the posting thread, read by the test after the posts; the userInfo
        // values are immutable payload values.
        let name: Notification.Name
        let object: AnyObject?
        let userInfo: [AnyHashable: Any]?
    }

    private let entries = Locked<[Entry]>([])
    private let tokens = Locked<[any NSObjectProtocol]>([])

    init(center: NotificationCenter, names: [Notification.Name]) {
        let observers = names.map { name in
            center.addObserver(forName: name, object: nil, queue: nil) { [weak self] note in
                self?.entries.withLock {
                    $0.append(Entry(name: note.name, object: note.object as AnyObject?, userInfo: note.userInfo))
                }
            }
        }
        tokens.withLock { $0 = observers }
    }

    var all: [Entry] { entries.withLock { $0 } }
    var names: [String] { all.map(\.name.rawValue) }
}

@Suite("Foundation notification bridge")
struct FoundationBridgeTests {
    static let names = [
        AFNetworkingNotifications.taskDidResume, AFNetworkingNotifications.taskDidSuspend,
        AFNetworkingNotifications.taskDidComplete, AFNetworkingNotifications.sessionDidInvalidate,
        AFNetworkingNotifications.downloadTaskDidFailToMoveFile,
        AFNetworkingNotifications.downloadTaskDidMoveFileSuccessfully,
    ]

    /// A server, and a session whose hub is bridged to a Foundation center that `log` observes under
    /// ``names``. The recorder is registered after the bridge: once it has seen an event, the bridge has
    /// re-posted it (same thread).
    private static func bridgedSession() async throws -> (
        server: TestServer, log: FoundationLog, bridging: ObservationToken, recorder: RecordingObserver,
        session: SessionManager
    ) {
        let server = try await TestServer.start()
        let hub = NotificationHub()
        let foundation = NotificationCenter()
        let log = FoundationLog(center: foundation, names: names)
        let bridging = FoundationNotificationBridge(center: foundation).observe(hub)
        let recorder = RecordingObserver(center: hub)
        return (server, log, bridging, recorder, SessionManager(notificationCenter: hub))
    }

    @Test("AFNetworking's names and keys have AFNetworking's string values")
    func stringValues() {
        #expect(AFNetworkingNotifications.taskDidResume.rawValue == "com.alamofire.networking.task.resume")
        #expect(AFNetworkingNotifications.taskDidSuspend.rawValue == "com.alamofire.networking.task.suspend")
        #expect(AFNetworkingNotifications.taskDidComplete.rawValue == "com.alamofire.networking.task.complete")
        #expect(
            AFNetworkingNotifications.sessionDidInvalidate.rawValue == "com.alamofire.networking.session.invalidate")
        #expect(
            AFNetworkingNotifications.downloadTaskDidFailToMoveFile.rawValue
                == "com.alamofire.networking.session.download.file-manager-error")
        #expect(AFNetworkingNotifications.responseDataKey == "com.alamofire.networking.complete.finish.responsedata")
        #expect(
            AFNetworkingNotifications.serializedResponseKey
                == "com.alamofire.networking.task.complete.serializedresponse")
        #expect(
            AFNetworkingNotifications.responseSerializerKey
                == "com.alamofire.networking.task.complete.responseserializer")
        #expect(AFNetworkingNotifications.errorKey == "com.alamofire.networking.task.complete.error")
        #expect(AFNetworkingNotifications.assetPathKey == "com.alamofire.networking.task.complete.assetpath")
        #expect(
            AFNetworkingNotifications.sessionTaskMetricsKey == "com.alamofire.networking.complete.sessiontaskmetrics")
    }

    @Test("a session's lifecycle reaches Foundation observers under AFNetworking's names, in order, with its keys")
    func lifecycleOnFoundation() async throws {
        let (server, log, bridging, recorder, session) = try await Self.bridgedSession()

        // The response waits at a gate until the task has been suspended and resumed, so that the transfer
        // can't finish between resume() and suspend() however the threads are scheduled (only the first request
        // waits: a resume that starts the transfer again is answered at once).
        let ok = try session.dataTask(with: Request(url: server.url("/json?gate=bridge")))
        ok.resume()
        ok.suspend()
        try await recorder.waitUntil { $0.count == 2 }
        ok.resume()
        server.openGate("bridge")
        try await recorder.waitForCompletions(1)
        let failing = try session.dataTask(with: Request(url: server.url("/status/500")))
        failing.resume()
        try await recorder.waitForCompletions(2)
        // Moved to a destination, as AFNetworking's downloads are: `file-manager-succeed` comes first.
        let moved = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bridge-\(UUID().uuidString)")
        let download = try session.downloadTask(
            with: Request(url: server.url("/bytes/64")), destination: { _, _ in moved })
        download.resume()
        try await recorder.waitForCompletions(3)
        // Left in the session's temporary folder: nothing was moved, and AFNetworking posts no success then.
        let kept = try session.downloadTask(with: Request(url: server.url("/bytes/16")))
        kept.resume()
        try await recorder.waitForCompletions(4)
        session.invalidate(cancelingTasks: false)
        try await recorder.waitForInvalidation()

        let resume = "com.alamofire.networking.task.resume"
        let complete = "com.alamofire.networking.task.complete"
        #expect(
            log.names == [
                resume, "com.alamofire.networking.task.suspend", resume, complete, resume, complete, resume,
                "com.alamofire.networking.session.download.file-manager-succeed", complete, resume, complete,
                "com.alamofire.networking.session.invalidate",
            ])
        let entries = log.all
        #expect(entries.count == 12)
        guard entries.count == 12 else { return }
        #expect(entries[0].object === ok && entries[3].object === ok)
        #expect(entries[0].userInfo == nil)

        let success = try #require(entries[3].userInfo)
        #expect(success[AFNetworkingNotifications.responseSerializerKey] is JSONResponseSerializer)
        #expect(success[AFNetworkingNotifications.responseDataKey] as? Data == Data(#"{"hello":"world","n":1}"#.utf8))
        #expect((success[AFNetworkingNotifications.serializedResponseKey] as? JSONValue)?["hello"] == "world")
        #expect(success[AFNetworkingNotifications.errorKey] == nil)
        #expect(success[AFNetworkingNotifications.sessionTaskMetricsKey] is TransferMetrics)

        #expect(entries[5].object === failing)
        let failure = try #require(entries[5].userInfo)
        #expect((failure[AFNetworkingNotifications.errorKey] as? HeraldError)?.code == .unacceptableStatusCode)
        #expect(failure[AFNetworkingNotifications.serializedResponseKey] == nil)
        #expect(failure[AFNetworkingNotifications.responseDataKey] as? Data == Data("500 Internal Server Error\n".utf8))

        #expect(entries[7].object === download && entries[8].object === download)
        let downloaded = try #require(entries[8].userInfo)
        let asset = try #require(downloaded[AFNetworkingNotifications.assetPathKey] as? URL)
        #expect(asset == moved)
        // A download's serialized response is its file's URL, as AFNetworking posts it.
        #expect(downloaded[AFNetworkingNotifications.serializedResponseKey] as? URL == moved)
        #expect(downloaded[AFNetworkingNotifications.responseDataKey] == nil)
        #expect(try Data(contentsOf: asset).count == 64)
        try? FileManager.default.removeItem(at: asset)
        #expect(entries[10].object === kept)
        let keptFile = try #require(entries[10].userInfo?[AFNetworkingNotifications.assetPathKey] as? URL)
        #expect(try Data(contentsOf: keptFile).count == 16)

        #expect(entries[11].object === session)
        #expect(entries[11].userInfo == nil)
        bridging.cancel()
        try await server.shutdown()
    }

    @Test("a serializer's empty output (JSON's for a 204) is left out of the userInfo, as AFNetworking leaves nil out")
    func emptySerializedResponseLeftOut() async throws {
        let (server, log, bridging, recorder, session) = try await Self.bridgedSession()
        let task = try session.dataTask(with: Request(url: server.url("/empty")))
        task.resume()
        try await recorder.waitForCompletions(1)
        session.invalidate(cancelingTasks: false)
        try await recorder.waitForInvalidation()
        let completion = try #require(log.all.first { $0.name == AFNetworkingNotifications.taskDidComplete })
        let userInfo = try #require(completion.userInfo)
        #expect(userInfo[AFNetworkingNotifications.errorKey] == nil)
        // Before, an `Optional` holding nothing was posted, so the key was there with no value behind it.
        #expect(userInfo[AFNetworkingNotifications.serializedResponseKey] == nil)
        bridging.cancel()
        try await server.shutdown()
    }

    @Test("a failed download move is re-posted with the error, the kept file and the destination")
    func moveFailure() async throws {
        let (server, log, bridging, recorder, session) = try await Self.bridgedSession()
        // A destination whose directory does not exist: the move fails and the file is kept.
        let download = try session.downloadTask(
            with: Request(url: server.url("/bytes/32")),
            destination: { temporaryURL, _ in
                temporaryURL.deletingLastPathComponent().appendingPathComponent("missing/file")
            })
        download.resume()
        try await recorder.waitForCompletions(1)
        #expect(
            log.names == [
                "com.alamofire.networking.task.resume",
                "com.alamofire.networking.session.download.file-manager-error",
                "com.alamofire.networking.task.complete",
            ])
        let failure = try #require(log.all.dropFirst().first)
        #expect(failure.object === download)
        let userInfo = try #require(failure.userInfo)
        // The file system's error, as AFNetworking's file manager error carried it: no such directory.
        #expect((userInfo[NSUnderlyingErrorKey] as? POSIXError)?.code == .ENOENT, "\(userInfo)")
        let kept = try #require(userInfo[NSFilePathErrorKey] as? String)
        #expect(FileManager.default.fileExists(atPath: kept))
        #expect((userInfo[NSURLErrorKey] as? URL)?.lastPathComponent == "file")
        // A failed move is no success: no file-manager-succeed, and the completion carries the error.
        let completion = try #require(log.all.last?.userInfo)
        #expect((completion[AFNetworkingNotifications.errorKey] as? HeraldError)?.code == .downloadMoveFailed)
        try? FileManager.default.removeItem(atPath: kept)
        bridging.cancel()
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
