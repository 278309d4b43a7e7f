import Dispatch
import Foundation
import HeraldNotifications
import Testing

@testable import HeraldObservers

@Suite("SinkWriter: a consumer thread woken only when it waits", .timeLimit(.minutes(1)))
struct SinkWriterTests {
    @Test("items from several threads, submitted while the writer sleeps and wakes, are all consumed in order")
    func everyItemConsumedAcrossIdlePeriods() async {
        let consumed = Locked<[[Int]]>(Array(repeating: [], count: 4))
        let writer = SinkWriter<(thread: Int, value: Int)>(name: "test.sink") { item in
            // Slow now and then (some microseconds of work), so that submits meet a busy writer as well
            // as a waiting one.
            var work = UInt64(item.value)
            if item.value % 97 == 0 {
                for step in 0..<20_000 { work = (work ^ UInt64(step)) &* 0x100_0000_01B3 }
            }
            consumed.withLock { $0[item.thread].append(item.value + Int(work & 0)) }
            return true
        }
        let perThread = 5_000
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    for value in 0..<perThread {
                        writer.submit((thread, value))
                        // Bursts with gaps: the writer drains and goes back to waiting between them.
                        if value % 500 == 499 { await writer.flush() }
                    }
                }
            }
        }
        await writer.flush()
        let result = consumed.withLock { $0 }
        for thread in 0..<4 {
            #expect(result[thread] == Array(0..<perThread))
        }
    }

    @Test("a flush of an idle writer returns at once, and one after a single item waits for it")
    func flushOfIdleWriter() async {
        let consumed = Locked<[String]>([])
        let writer = SinkWriter<String>(name: "test.sink") { item in
            consumed.withLock { $0.append(item) }
            return true
        }
        await writer.flush()
        #expect(consumed.withLock { $0 }.isEmpty)
        writer.submit("one")
        await writer.flush()
        #expect(consumed.withLock { $0 } == ["one"])
        // The writer is waiting again: a second item must wake it.
        writer.submit("two")
        await writer.flush()
        #expect(consumed.withLock { $0 } == ["one", "two"])
    }

    @Test("items submitted just before the writer is released are consumed before its thread ends")
    func releasedWriterDrains() async throws {
        let consumed = Locked<[Int]>([])
        let finished = DispatchSemaphore(value: 0)
        do {
            let writer = SinkWriter<Int>(name: "test.sink") { item in
                consumed.withLock { $0.append(item) }
                if item == 999 { finished.signal() }
                return true
            }
            for value in 0..<1_000 { writer.submit(value) }
        }
        let signalled = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: finished.wait(timeout: .now() + 10) == .success)
            }
        }
        #expect(signalled)
        #expect(consumed.withLock { $0 } == Array(0..<1_000))
    }
}
