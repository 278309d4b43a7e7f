import Foundation
import Herald
import HeraldNotifications
import HeraldTesting

/// Reads `body` to its end in a task of its own, failing after `timeout` instead of hanging the suite.
func readAll(_ body: ResponseBodyStream, timeout: Duration = .seconds(30)) async throws -> Result<Data, HeraldError> {
    let call = startCall { () async throws(HeraldError) -> Data in
        var received = Data()
        for try await chunk in body { received.append(chunk) }
        return received
    }
    return try await outcome(of: call, timeout: timeout)
}

/// Collects every event of `events` (to its end or its error) in a task of its own, with a timeout.
func readAll(
    _ events: ServerSentEvents, timeout: Duration = .seconds(30)
) async throws -> (events: [ServerSentEvent], error: HeraldError?) {
    let collected = Locked<[ServerSentEvent]>([])
    let call = startCall { () async throws(HeraldError) -> Void in
        for try await event in events { collected.withLock { $0.append(event) } }
    }
    let result = try await outcome(of: call, timeout: timeout)
    if case .failure(let error) = result { return (collected.withLock { $0 }, error) }
    return (collected.withLock { $0 }, nil)
}

/// Reads `events` in a task of its own, throwing every event away, until the sequence ends (the error it ended
/// with, `nil` for none) or the task is cancelled.
func readUntilEnd(_ events: ServerSentEvents) -> Task<HeraldError?, Never> {
    Task {
        do throws(HeraldError) {
            for try await _ in events {}
            return nil
        } catch {
            return error
        }
    }
}

/// Records every `eventSourceWillReconnect` posted on `center`.
final class ReconnectionLog: Sendable {
    private let payloads = Locked<[EventSourceReconnection]>([])
    private let token = Locked<ObservationToken?>(nil)

    init(center: NotificationHub) {
        let token = center.addObserver(for: .eventSourceWillReconnect) { [payloads] notification in
            payloads.withLock { $0.append(notification.userInfo) }
        }
        self.token.withLock { $0 = token }
    }

    var all: [EventSourceReconnection] { payloads.withLock { $0 } }
}

/// Checks streamed chunks against the test server's `/bytes` pattern (byte `i` is `UInt8(i % 251)`) as they
/// arrive, with `memcmp` against one precomputed period: a debug build checks a GiB in well under a second.
struct PatternCheck {
    private static let period = 251
    private static let reference: [UInt8] = TestServer.expectedBytes(in: 0..<(251 * 1024 + (1 << 20)))
    private(set) var offset = 0
    private(set) var mismatchAt: Int?

    /// Makes the reference period now, so that a memory measurement doesn't count it.
    static func prepare() { _ = reference.count }

    /// Checks `chunk`, the bytes from ``offset`` on.
    mutating func check(_ chunk: Data) {
        chunk.withUnsafeBytes { bytes in
            var done = 0
            while done < bytes.count {
                let length = min(bytes.count - done, 1 << 20)
                let start = (offset + done) % Self.period
                let same = Self.reference.withUnsafeBytes { reference in
                    memcmp(bytes.baseAddress! + done, reference.baseAddress! + start, length) == 0
                }
                if !same, mismatchAt == nil { mismatchAt = offset + done }
                done += length
            }
        }
        offset += chunk.count
    }

    /// Whether exactly `count` bytes, all matching, were checked.
    func matches(count: Int) -> Bool { mismatchAt == nil && offset == count }
}

/// Reads `body` to its end, checking it against the `/bytes` pattern, in a task of its own with a timeout.
func readAndCheck(_ body: ResponseBodyStream, timeout: Duration = .seconds(60)) async throws -> Result<
    PatternCheck, HeraldError
> {
    let call = startCall { () async throws(HeraldError) -> PatternCheck in
        var check = PatternCheck()
        for try await chunk in body { check.check(chunk) }
        return check
    }
    return try await outcome(of: call, timeout: timeout)
}
