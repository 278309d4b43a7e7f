import Dispatch
import Foundation
import Herald
import HeraldNotifications
@testable import HeraldObservers
import HeraldTesting
import InMemoryLogging
import Logging
import Synchronization
import Testing

/// A pipe whose read end a thread drains to the end, for sinks writing to a file descriptor.
private final class DrainedPipe: Sendable {
    let pipe = Pipe()
    private let received = Locked(Data())
    private let done = DispatchSemaphore(value: 0)

    init() {
        let reader = pipe.fileHandleForReading
        Thread { [received, done] in
            while let chunk = try? reader.read(upToCount: 65_536), !chunk.isEmpty {
                received.withLock { $0.append(chunk) }
            }
            done.signal()
        }.start()
    }

    /// Closes the write end and returns everything read.
    func finish() -> String {
        try? pipe.fileHandleForWriting.close()
        done.wait()
        return String(decoding: received.withLock { $0 }, as: UTF8.self)
    }
}

/// The `SIGPIPE` signals delivered to this process while counting.
private let deliveredSIGPIPEs = Atomic<Int>(0)

/// Runs `body` with a `SIGPIPE` handler that counts deliveries instead of the current disposition
/// (which a test runner may have set to ignore, hiding what the default action — ending the process —
/// would do), then restores the disposition.
private func countingSIGPIPE<Result>(_ body: () async throws -> Result) async rethrows -> Result {
    var counting = sigaction()
    counting.__sigaction_handler.sa_handler = { _ in deliveredSIGPIPEs.wrappingAdd(1, ordering: .relaxed) }
    sigemptyset(&counting.sa_mask)
    var previous = sigaction()
    sigaction(SIGPIPE, &counting, &previous)
    defer { sigaction(SIGPIPE, &previous, nil) }
    return try await body()
}

private enum TestContext {
    @TaskLocal static var requestID = "none"
}

@Suite("Sinks keep the contract to the end")
struct SinkContractTests {
    @Test(
        "3 sessions at once on one log: after invalidateAndWait and flush, one complete per task and each invalidate, whole lines"
    )
    func drainedShutdownLeavesNoLineUnwritten() async throws {
        let server = try await TestServer.start()
        let center = NotificationHub()
        let output = DrainedPipe()
        let log = JSONLinesEventLog(fileHandle: output.pipe.fileHandleForWriting)
        let token = log.observe(center, delivery: .queue(DispatchQueue(label: "test.sink", attributes: .concurrent)))
        let paths = ["/json", "/status/404", "/fault/reset", "/bytes/3000", "/delay/30"]
        var expected: [Int: Set<Int>] = [:]
        try await withThrowingTaskGroup(of: (Int, Set<Int>).self) { group in
            for _ in 0..<3 {
                group.addTask {
                    let session = SessionManager(notificationCenter: center)
                    var identifiers = Set<Int>()
                    for path in paths {
                        let task = try session.dataTask(with: Request(url: server.url(path)))
                        identifiers.insert(task.taskIdentifier)
                        task.resume()
                    }
                    await session.invalidateAndWait()
                    return (session.identifier, identifiers)
                }
            }
            for try await (session, identifiers) in group { expected[session] = identifiers }
        }
        await log.flush()
        let text = output.finish()
        #expect(text.hasSuffix("\n"))
        let records = try text.split(separator: "\n").map {
            try JSONDecoder().decode(EventRecord.self, from: Data($0.utf8))
        }
        for (session, identifiers) in expected {
            let mine = records.filter { $0.session == session }
            let completes = mine.filter { $0.event == "herald.task.complete" }.compactMap(\.task)
            #expect(completes.sorted() == identifiers.sorted())
            #expect(mine.filter { $0.event == "herald.session.invalidate" }.count == 1)
            #expect(mine.last?.event == "herald.session.invalidate")
        }
        token.cancel()
        try await server.shutdown()
    }

    @Test("lines longer than a pipe's atomic write, from 4 threads at once, arrive whole and never interleave")
    func longLinesNeverCut() async throws {
        let output = DrainedPipe()
        let log = JSONLinesEventLog(fileHandle: output.pipe.fileHandleForWriting)
        let message = String(repeating: "0123456789", count: 2_000)  // 20 kB: many partial writes.
        let writers = Recorder()
        for thread in 0..<4 {
            Thread {
                for task in 0..<50 {
                    log.taskDidComplete(
                        Payloads.complete(
                            task: task, session: thread, error: HeraldError(.timedOut, "\(thread)/\(task) \(message)")))
                }
                writers.done()
            }.start()
        }
        #expect(await writers.wait(for: 4))
        await log.flush()
        let lines = output.finish().split(separator: "\n")
        #expect(lines.count == 200)
        let records = try lines.map { try JSONDecoder().decode(EventRecord.self, from: Data($0.utf8)) }
        for record in records {
            #expect(record.errorMessage == "\(record.session ?? -1)/\(record.task ?? -1) \(message)")
        }
        #expect(!log.hasEnded)
    }

    @Test("a sink that stops keeping up holds at most its capacity: later lines are dropped and counted")
    func stalledSinkDropsBeyondCapacity() async throws {
        let started = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let written = Locked<[String]>([])
        let log = JSONLinesEventLog(redaction: .default, capacity: 4) { line in
            started.signal()
            gate.wait()  // A sink stalled until the test lets it go.
            written.withLock { $0.append(line) }
            return true
        }
        log.taskDidResume(Payloads.resume(task: 0))
        started.wait()  // The writer holds line 0; nothing waits.
        for task in 1...10 { log.taskDidResume(Payloads.resume(task: task)) }
        #expect(log.droppedLines == 6)
        for _ in 0..<5 { gate.signal() }
        await log.flush()
        #expect(written.withLock { $0.count } == 5)
        #expect(log.droppedLines == 6)
        #expect(!log.hasEnded)
    }

    @Test("the event log writes on a thread of its own: a stalled sink never holds the posting thread")
    func eventLogWritesOffThePostingThread() async throws {
        let gate = DispatchSemaphore(value: 0)
        let writers = Locked<[pthread_t]>([])
        let log = JSONLinesEventLog { line in
            gate.wait()  // A sink stalled until the test lets it go.
            writers.withLock { $0.append(pthread_self()) }
        }
        let poster = await withCheckedContinuation { continuation in
            Thread {
                for task in 0..<3 { log.taskDidResume(Payloads.resume(task: task)) }
                // The three handlers returned while the sink is stalled on its first line.
                continuation.resume(returning: pthread_self())
            }.start()
        }
        for _ in 0..<3 { gate.signal() }
        await log.flush()
        let threads = writers.withLock { $0 }
        #expect(threads.count == 3)
        #expect(Set(threads.map(UInt.init)).count == 1)
        #expect(!threads.contains(poster))
    }

    @Test(
        "the logging observer hands entries to the logger on its own thread, with the metadata provider's values from the posting thread"
    )
    func loggingOffThePostingThread() async throws {
        var handler = InMemoryLogHandler()
        handler.metadataProvider = Logger.MetadataProvider { ["request.id": .string(TestContext.requestID)] }
        let logHandler = handler
        var logger = Logger(label: "herald.test") { _ in logHandler }
        logger.logLevel = .debug
        let observer = LoggingObserver(logger: logger)
        TestContext.$requestID.withValue("abc") {
            observer.taskDidResume(Payloads.resume(task: 1))
            observer.sessionDidInvalidate(Payloads.invalidate())
        }
        await observer.flush()
        let entries = handler.entries
        #expect(entries.map(\.message.description) == ["task resumed", "session invalidated"])
        #expect(entries.allSatisfy { $0.metadata["request.id"] == "abc" })
    }
}

extension SinkContractTests {
    /// A log handler that records the thread each entry reached it on.
    struct ThreadRecordingLogHandler: LogHandler {
        let threads: Locked<[pthread_t]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            threads.withLock { $0.append(pthread_self()) }
        }
    }

    @Test("the logger's handler never runs on the posting thread")
    func loggerHandlerOffThePostingThread() async throws {
        let threads = Locked<[pthread_t]>([])
        var logger = Logger(label: "herald.test") { _ in ThreadRecordingLogHandler(threads: threads) }
        logger.logLevel = .debug
        let observer = LoggingObserver(logger: logger)
        let poster = pthread_self()
        for task in 1...20 { observer.taskDidResume(Payloads.resume(task: task)) }
        observer.sessionDidInvalidate(Payloads.invalidate())
        await observer.flush()
        let seen = threads.withLock { $0 }
        #expect(seen.count == 21)
        #expect(!seen.contains { pthread_equal($0, poster) != 0 })
    }
}

/// Counts threads that finished and lets the test await a number of them.
private final class Recorder: Sendable {
    private let finished = Locked(0)
    private let changed = DispatchSemaphore(value: 0)

    func done() {
        finished.withLock { $0 += 1 }
        changed.signal()
    }

    /// Waits (off the cooperative pool) until `count` threads finished, for at most 30 s.
    func wait(for count: Int) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { [self] in
                let deadline = DispatchTime.now() + .seconds(30)
                while finished.withLock({ $0 }) < count {
                    if changed.wait(timeout: deadline) == .timedOut { return continuation.resume(returning: false) }
                }
                continuation.resume(returning: true)
            }.start()
        }
    }
}

/// The closed-pipe test counts every `SIGPIPE` the process receives while it runs. SwiftNIO ignores
/// `SIGPIPE` process-wide and lets its socket writes raise it, so a test server writing to a closed
/// connection elsewhere in the process would be counted too: `make test` runs this suite in a process of its
/// own.
@Suite("A sink on a closed pipe")
struct ClosedPipeSignalTests {
    @Test("writing to a pipe whose reader has gone ends the log quietly: no SIGPIPE, flush returns, lines dropped")
    func closedPipeEndsTheSink() async throws {
        try await countingSIGPIPE {
            let pipe = Pipe()
            try pipe.fileHandleForReading.close()
            // The detector works: a plain write to the closed pipe raises SIGPIPE (which would end the
            // process under the default action).
            let before = deliveredSIGPIPEs.load(ordering: .relaxed)
            let byte: UInt8 = 0x0A
            #expect(withUnsafePointer(to: byte) { write(pipe.fileHandleForWriting.fileDescriptor, $0, 1) } == -1)
            #expect(deliveredSIGPIPEs.load(ordering: .relaxed) == before + 1)

            let log = JSONLinesEventLog(fileHandle: pipe.fileHandleForWriting)
            for task in 0..<10 { log.taskDidResume(Payloads.resume(task: task)) }
            await log.flush()
            #expect(log.hasEnded)
            log.taskDidResume(Payloads.resume(task: 10))
            await log.flush()
            // The sink's writes failed with EPIPE and raised no signal.
            #expect(deliveredSIGPIPEs.load(ordering: .relaxed) == before + 1)
            try pipe.fileHandleForWriting.close()
        }
    }
}
