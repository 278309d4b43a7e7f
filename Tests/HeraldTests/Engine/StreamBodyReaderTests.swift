import Foundation
import HeraldNotifications
import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("A streamed body's reader: off the loop thread, bounded, rewound without waiting")
struct StreamBodyReaderTests {
    /// A stream over `count` pattern bytes that counts its reads.
    static func patternStream(count: Int, reads: Locked<Int>? = nil) -> PulledBody {
        let offset = Locked(0)
        return PulledBody { buffer in
            reads?.withLock { $0 += 1 }
            return offset.withLock { offset in
                let length = min(buffer.count, count - offset)
                for index in 0..<max(0, length) { buffer[index] = UInt8((offset + index) % 251) }
                offset += max(0, length)
                return max(0, length)
            }
        }
    }

    /// Drains `source` the way curl's read callback does: on `wait`, until woken.
    static func drain(_ source: StreamedBodySource, woken: WakeCounter) async throws -> (
        bytes: [UInt8], end: BodySourceRead
    ) {
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            let read = source.read(into: buffer)
            switch read {
            case .bytes(let count):
                bytes += buffer[..<count]
            case .wait:
                try await woken.next()
            case .end, .failed:
                return (bytes, read)
            }
        }
    }

    /// Counts the reader's wakes and lets a test await the next one.
    final class WakeCounter: Sendable {
        private let stream: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation

        init() { (stream, continuation) = AsyncStream.makeStream(of: Void.self) }

        var wake: @Sendable () -> Void { { [continuation] in continuation.yield(()) } }

        struct TimedOut: Error {}

        /// Waits for the next wake (one already delivered counts).
        func next(timeout: Duration = .seconds(30)) async throws {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask { [stream] in
                    for await _ in stream { return true }
                    return false
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return false
                }
                defer { group.cancelAll() }
                guard try await group.next() == true else { throw TimedOut() }
            }
        }
    }

    @Test("an empty buffer answers wait, the reader's bytes wake the consumer, and the whole body arrives in order")
    func waitThenBytes() async throws {
        let count = 1_000_000
        let source = StreamedBodySource.onTestQueue(
            first: Self.patternStream(count: count), origin: .unsized(renew: { nil }))
        let woken = WakeCounter()
        source.startReading(wake: woken.wake)
        let (bytes, end) = try await Self.drain(source, woken: woken)
        guard case .end = end else {
            Issue.record("expected the end, got \(end)")
            return
        }
        #expect(bytes == TestServerPattern.bytes(0..<count))
        source.stopReading()
    }

    @Test("the reader never reads more than its capacity ahead of what was taken, whatever the body's size")
    func boundedReadAhead() async throws {
        let count = 4 * 1024 * 1024
        let produced = Locked(0)
        let taken = Locked(0)
        let mostAhead = Locked(0)
        let source = StreamedBodySource.onTestQueue(
            first: PulledBody { buffer in
                let ahead = produced.withLock { $0 } - taken.withLock { $0 }
                mostAhead.withLock { $0 = max($0, ahead) }
                return produced.withLock { offset in
                    let length = min(buffer.count, count - offset)
                    for index in 0..<length { buffer[index] = UInt8((offset + index) % 251) }
                    offset += length
                    return length
                }
            }, origin: .unsized(renew: { nil }))
        let woken = WakeCounter()
        source.startReading(wake: woken.wake)
        // A slow consumer: 1000 bytes at a time.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 1)
        defer { buffer.deallocate() }
        var received = 0
        reading: while true {
            switch source.read(into: buffer) {
            case .bytes(let length):
                received += length
                taken.withLock { $0 += length }
            case .wait:
                try await woken.next()
            case .end:
                break reading
            case .failed(let error):
                Issue.record("the stream failed: \(error)")
                break reading
            }
        }
        #expect(received == count)
        // When a read starts, at least a chunk of the buffer is free; the consumer may have taken one more
        // buffer's worth (1000 bytes) that it hasn't counted yet.
        #expect(mostAhead.withLock { $0 } <= StreamBodyReader.capacity - StreamBodyReader.chunk + buffer.count)
        #expect(mostAhead.withLock { $0 } > 0)
        source.stopReading()
    }

    @Test("a rewind returns at once and the next reads come from the fresh stream, asked for off the calling thread")
    func rewindAsksOffThread() async throws {
        let callingThread = pthread_self()
        let renewedOnCaller = Locked<Bool?>(nil)
        let source = StreamedBodySource.onTestQueue(
            first: Self.patternStream(count: 200_000),
            origin: .unsized(renew: {
                renewedOnCaller.withLock { $0 = pthread_equal(pthread_self(), callingThread) != 0 }
                return Self.patternStream(count: 200_000)
            }))
        let woken = WakeCounter()
        source.startReading(wake: woken.wake)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            if case .bytes = source.read(into: buffer) { break }
            try await woken.next()
        }
        #expect(source.rewind(to: 0) == nil)
        let (bytes, end) = try await Self.drain(source, woken: woken)
        guard case .end = end else {
            Issue.record("expected the end, got \(end)")
            return
        }
        #expect(bytes == TestServerPattern.bytes(0..<200_000))
        #expect(renewedOnCaller.withLock { $0 } == false)
        source.stopReading()
    }

    @Test("no fresh stream: the read after the rewind fails with bodyStream, naming the hook")
    func rewindWithoutFreshStream() async throws {
        let source = StreamedBodySource.onTestQueue(
            first: Self.patternStream(count: 100), origin: .unsized(renew: { nil }))
        let woken = WakeCounter()
        source.startReading(wake: woken.wake)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 10, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            if case .bytes = source.read(into: buffer) { break }
            try await woken.next()
        }
        #expect(source.rewind(to: 0) == nil)
        let (_, end) = try await Self.drain(source, woken: woken)
        guard case .failed(let error) = end else {
            Issue.record("expected a failure, got \(end)")
            return
        }
        #expect(error.code == .bodyStream)
        #expect(error.message.contains("taskNeedNewBodyStream"))
    }

    @Test("a sized body that ends early fails after the bytes it gave; one that throws fails with its error")
    func sizedFailures() async throws {
        let short = StreamedBodySource.onTestQueue(
            first: Self.patternStream(count: 30_000),
            origin: .sized(length: 50_000, open: { Self.patternStream(count: 30_000) }))
        let woken = WakeCounter()
        short.startReading(wake: woken.wake)
        let (bytes, end) = try await Self.drain(short, woken: woken)
        #expect(bytes.count == 30_000)
        guard case .failed(let error) = end else {
            Issue.record("expected a failure, got \(end)")
            return
        }
        #expect(error.code == .bodyStream)
        #expect(error.message.contains("30000 of the 50000"))

        struct Broken: Error {}
        let throwing = StreamedBodySource.onTestQueue(
            first: PulledBody { _ in throw Broken() },
            origin: .sized(length: 10, open: { PulledBody { _ in throw Broken() } }))
        let woken2 = WakeCounter()
        throwing.startReading(wake: woken2.wake)
        let (_, end2) = try await Self.drain(throwing, woken: woken2)
        guard case .failed(let error2) = end2 else {
            Issue.record("expected a failure, got \(end2)")
            return
        }
        #expect(error2.code == .bodyStream)
        #expect(error2.underlying is Broken)
    }

    @Test("sending continues in the direction that waited only: a user's pause and a paused receive stand")
    func resumeDirections() {
        var machine = TransferStateMachine()
        #expect(machine.bodyResumeAction == .continueAll)
        #expect(machine.consumerIsBehind() == true)
        #expect(machine.bodyResumeAction == .continueSendingOnly)
        #expect(machine.consumerDidDrain() == .continueCurl)
        #expect(machine.pause() == .pauseCurl)
        machine.didTryPause(accepted: true)
        #expect(machine.bodyResumeAction == .none)
        #expect(machine.unpause() == .continueCurl)
        #expect(machine.bodyResumeAction == .continueAll)
        machine.abort(with: TransferError(.bodyStream, "stop"))
        #expect(machine.bodyResumeAction == .none)
    }
}

/// The test server's byte pattern (byte `i` is `i % 251`), without importing the server.
enum TestServerPattern {
    static func bytes(_ range: Range<Int>) -> [UInt8] { range.map { UInt8($0 % 251) } }
}

extension StreamedBodySource {
    /// A source read on a serial queue of the test's own, as a task's hook queue would.
    static func onTestQueue(first: PulledBody, origin: StreamBodyReader.Origin) -> StreamedBodySource {
        StreamedBodySource(first: first, origin: origin, queue: DispatchQueue(label: "test.body-stream"))
    }
}
