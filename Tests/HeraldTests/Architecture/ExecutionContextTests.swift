import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// libdispatch's label of the queue the calling block runs on (`DISPATCH_CURRENT_QUEUE_LABEL` is `NULL`); the
/// Swift overlay on Linux doesn't expose it.
@_silgen_name("dispatch_queue_get_label")
private func dispatchQueueLabel(_ queue: OpaquePointer?) -> UnsafePointer<CChar>

/// Where a hook, handler or observer ran, as a maintainer counts the contexts: besides the caller's, at most
/// the loop thread, the hook queue, the completion queue and the event queue.
enum ExecutionContext: Hashable, Sendable, CustomStringConvertible {
    case loopThread
    case hookQueue
    case completionQueue
    case eventQueue
    case other(String)

    /// The context of the calling code, told from its queue's label and its thread's name.
    static var current: ExecutionContext {
        // The loop thread is a Foundation thread the engine names; dispatch's workers have no name of ours.
        let thread = Thread.current.name ?? ""
        if thread.hasPrefix("herald.engine") { return .loopThread }
        let label = String(cString: dispatchQueueLabel(nil))
        if label == "herald.hooks" { return .hookQueue }
        if label.hasPrefix("herald.session."), label.hasSuffix(".completion") { return .completionQueue }
        if label.hasPrefix("herald.session."), label.hasSuffix(".events") { return .eventQueue }
        return .other("queue \(label), thread \(thread)")
    }

    var description: String {
        switch self {
        case .loopThread: "the loop thread"
        case .hookQueue: "the hook queue"
        case .completionQueue: "the completion queue"
        case .eventQueue: "the event queue"
        case .other(let place): place
        }
    }
}

/// Every context a kind of callback was seen in.
final class ContextLog: Sendable {
    private let seen = Locked<[String: Set<ExecutionContext>]>([:])

    func record(_ kind: String) {
        let context = ExecutionContext.current
        seen.withLock { _ = $0[kind, default: []].insert(context) }
    }

    var all: [String: Set<ExecutionContext>] { seen.withLock { $0 } }
}

@Suite("Execution contexts")
struct ExecutionContextTests {
    /// Where each kind of callback must run.
    static let table: [String: ExecutionContext] = [
        "taskWillPerformHTTPRedirection": .hookQueue,
        "taskDidReceiveAuthenticationChallenge": .hookQueue,
        "taskNeedNewBodyStream": .hookQueue,
        "BodyStream read": .hookQueue,
        "dataTaskDidReceiveResponse": .hookQueue,
        "dataTaskDidBecomeDownloadTask": .hookQueue,
        "adapt": .hookQueue,
        "retry": .hookQueue,
        "completion handler": .completionQueue,
        "download progress": .completionQueue,
        "upload progress": .completionQueue,
        "taskDidSendBodyData": .completionQueue,
        "dataTaskDidReceiveData": .completionQueue,
        "downloadTaskDidWriteData": .completionQueue,
        "downloadTaskDidFinishDownloading": .completionQueue,
        "dataTaskWillCacheResponse": .completionQueue,
        "taskDidComplete hook": .completionQueue,
        ".posting taskDidResume": .eventQueue,
        ".posting taskDidComplete": .eventQueue,
        ".posting taskWillRetry": .eventQueue,
        ".posting sessionDidInvalidate": .eventQueue,
        "sessionDidBecomeInvalid": .eventQueue,
    ]

    /// An in-memory cache that records where each of its methods ran: a cache is user code.
    final class RecordingCache: ResponseCache {
        let inner = InMemoryResponseCache(capacity: 1 << 20)
        let places = Locked<[String]>([])

        private func record(_ method: String) {
            places.withLock { $0.append("\(method) on \(ExecutionContext.current)") }
        }
        func cachedResponse(for request: Request) -> CachedResponse? {
            record("cachedResponse")
            return inner.cachedResponse(for: request)
        }
        func storeCachedResponse(_ cachedResponse: CachedResponse, for request: Request) {
            record("store")
            inner.storeCachedResponse(cachedResponse, for: request)
        }
        func removeCachedResponse(for request: Request) {
            record("remove")
            inner.removeCachedResponse(for: request)
        }
        func removeAllCachedResponses() { inner.removeAllCachedResponses() }
    }

    @Test("an async upload's cache invalidation runs on the completion queue, where every cache call runs")
    func asyncUploadInvalidatesOnCompletionQueue() async throws {
        let cache = RecordingCache()
        var configuration = SessionConfiguration()
        configuration.responseCache = cache
        let fixture = try await SessionFixture.make(configuration: configuration)
        let session = fixture.session
        let request = Request(url: fixture.server.url("/echo"), method: "POST")
        // Detached: a caller without a task executor preference, whom Herald may answer without a hand-off.
        _ = try await Task.detached { try await session.upload(for: request, from: Data("x".utf8)) }.value
        let places = cache.places.withLock { $0 }
        #expect(places.contains { $0.hasPrefix("remove") }, "\(places)")
        #expect(places.allSatisfy { $0.hasSuffix("on \(ExecutionContext.completionQueue)") }, "\(places)")
        try await fixture.tearDown()
    }

    @Test("every hook, handler and observer runs in its one context of four, and none on the loop thread")
    func contextsMatchTheTable() async throws {
        let server = try await TestServer.start()
        var configuration = SessionConfiguration.default
        configuration.responseCache = InMemoryResponseCache()
        let center = NotificationHub()
        let session = SessionManager(configuration: configuration, notificationCenter: center)
        session.responseSerializer = DataResponseSerializer()
        let log = ContextLog()

        session.taskWillPerformHTTPRedirection = { _, _, proposed in
            log.record("taskWillPerformHTTPRedirection")
            return proposed
        }
        session.taskDidReceiveAuthenticationChallenge = { _, _ in
            log.record("taskDidReceiveAuthenticationChallenge")
            return .useCredential(Credential(user: "bob", password: "pw"))
        }
        session.taskNeedNewBodyStream = { _ in
            log.record("taskNeedNewBodyStream")
            return Self.recordingStream(Data("streamed".utf8), log: log)
        }
        session.dataTaskDidReceiveResponse = { task, _ in
            log.record("dataTaskDidReceiveResponse")
            return task.originalRequest.url.path == "/bytes/2048" ? .becomeDownload : .allow
        }
        session.dataTaskDidBecomeDownloadTask = { _, _ in log.record("dataTaskDidBecomeDownloadTask") }
        session.sessionDidBecomeInvalid = { _, _ in log.record("sessionDidBecomeInvalid") }
        session.dataTaskDidReceiveData = { _, _ in log.record("dataTaskDidReceiveData") }
        session.taskDidSendBodyData = { _, _, _, _ in log.record("taskDidSendBodyData") }
        session.downloadTaskDidWriteData = { _, _, _, _ in log.record("downloadTaskDidWriteData") }
        session.downloadTaskDidFinishDownloading = { _, _, _ in
            log.record("downloadTaskDidFinishDownloading")
            return nil
        }
        session.dataTaskWillCacheResponse = { _, proposed in
            log.record("dataTaskWillCacheResponse")
            return proposed
        }
        session.taskDidComplete = { _, _ in log.record("taskDidComplete hook") }
        let tokens = [
            center.addObserver(for: .taskDidResume, delivery: .posting) { _ in log.record(".posting taskDidResume") },
            center.addObserver(for: .taskDidComplete, delivery: .posting) { _ in
                log.record(".posting taskDidComplete")
            },
            center.addObserver(for: .taskWillRetry, delivery: .posting) { _ in log.record(".posting taskWillRetry") },
            center.addObserver(for: .sessionDidInvalidate, delivery: .posting) { _ in
                log.record(".posting sessionDidInvalidate")
            },
        ]

        let done = Countdown(7)
        let completion: TaskCompletionHandler = { _, _, _ in
            log.record("completion handler")
            done.countDown()
        }
        var tasks: [SessionTask] = []
        // A redirect, and a response the cache may keep.
        tasks.append(
            try session.dataTask(
                with: Request(url: server.url("/redirect/1")),
                downloadProgress: { _ in log.record("download progress") }, completionHandler: completion))
        tasks.append(
            try session.dataTask(
                with: Request(url: server.url("/headers?Cache-Control=max-age%3D60")), completionHandler: completion))
        // A data task that becomes a download when its response arrives.
        tasks.append(
            try session.dataTask(with: Request(url: server.url("/bytes/2048")), completionHandler: completion))
        // An authentication round-trip.
        tasks.append(
            try session.dataTask(
                with: Request(url: server.url("/auth/basic?user=bob&password=pw")), completionHandler: completion))
        // A streamed body that a 307 must send again.
        let echo = server.url("/echo").absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics)
        tasks.append(
            try session.uploadTask(
                withStreamedRequest: Request(
                    url: server.url("/redirect-to?url=\(echo ?? "")&status=307"), method: "POST"),
                bodyProvider: Self.recordingStream(Data("streamed".utf8), log: log),
                progress: { _ in log.record("upload progress") }, completionHandler: completion))
        // An interceptor that adapts each attempt and retries a failed one once.
        let retried = try session.dataTask(with: Request(url: server.url("/status/500")), completionHandler: completion)
        retried.interceptor = Interceptor(
            adapt: { request, _ in
                log.record("adapt")
                return request
            },
            retry: { context in
                log.record("retry")
                return context.attempt < 2 ? .retry : .doNotRetry
            })
        tasks.append(retried)
        // A download.
        let download = try session.downloadTask(
            with: Request(url: server.url("/bytes/4096")),
            completionHandler: { _, _, _ in
                log.record("completion handler")
                done.countDown()
            })
        tasks.append(download)

        for task in tasks { task.resume() }
        #expect(await done.wait(timeout: .seconds(30)), "\(done.remaining) tasks never completed")
        await session.invalidateAndWait(cancelingTasks: true)
        for token in tokens { token.cancel() }
        try await server.shutdown()

        let seen = log.all
        for (kind, expected) in Self.table {
            let contexts = try #require(seen[kind], "\(kind) never ran")
            #expect(contexts == [expected], "\(kind) ran on \(contexts), expected only \(expected)")
        }
        let everywhere = Set(seen.values.flatMap { $0 })
        #expect(!everywhere.contains(.loopThread), "user code ran on the loop thread: \(seen)")
        #expect(everywhere.count <= 4, "more than four contexts besides the caller's: \(everywhere)")
    }

    /// A stream of `data` that records where each of its reads runs.
    static func recordingStream(_ data: Data, log: ContextLog) -> BodyStream {
        let offset = Locked(0)
        return BodyStream { buffer in
            log.record("BodyStream read")
            return offset.withLock { offset in
                let count = min(buffer.count, data.count - offset)
                buffer.copyBytes(from: data[offset..<(offset + count)])
                offset += count
                return count
            }
        }
    }
}
