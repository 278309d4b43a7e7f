import HeraldNotifications
import Testing

/// The package's ordered-delivery helper: items produced under a lock are carried out outside it by one
/// thread at a time, in the order of the changes that produced them. A task's effects and the activity
/// indicator's changes rely on it.
@Suite("Ordered turns")
struct OrderedTurnsTests {
    @Test("the first submitter carries out its items; later ones queue theirs for it, in order")
    func oneRunnerInOrder() {
        var turns = OrderedTurns<Int>()
        let first = turns.submit([1, 2])
        let second = turns.submit([3])
        let third = turns.submit([4, 5])
        let queued = turns.next()
        let end = turns.next()
        #expect(first == [1, 2])
        #expect(second.isEmpty && third.isEmpty)
        #expect(queued == [3, 4, 5])
        #expect(end.isEmpty)
        // The turn has ended: the next submitter carries out its own items.
        let next = turns.submit([6])
        let nextEnd = turns.next()
        #expect(next == [6])
        #expect(nextEnd.isEmpty)
    }

    @Test("submitting nothing never takes the turn")
    func emptySubmission() {
        var turns = OrderedTurns<Int>()
        let nothing = turns.submit([])
        let first = turns.submit([1])
        #expect(nothing.isEmpty)
        #expect(first == [1])
    }

    @Test("4 threads submitting 2,000 items each: every item carried out once, each thread's in its order")
    func concurrentSubmitters() async {
        let turns = Locked(OrderedTurns<Int>())
        let carriedOut = Locked<[Int]>([])
        let threads = 4
        let perThread = 2_000
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    for index in 0..<perThread {
                        var batch = turns.withLock { $0.submit([thread * perThread + index]) }
                        while !batch.isEmpty {
                            let items = batch
                            carriedOut.withLock { $0 += items }
                            batch = turns.withLock { $0.next() }
                        }
                    }
                }
            }
        }
        let all = carriedOut.withLock { $0 }
        #expect(all.count == threads * perThread)
        #expect(Set(all).count == threads * perThread)
        for thread in 0..<threads {
            let range = (thread * perThread)..<((thread + 1) * perThread)
            let own = all.filter { range.contains($0) }
            #expect(own == own.sorted(), "thread \(thread)'s items were carried out out of order")
        }
    }

    @Test("OrderedDelivery: 4 threads count; the consumer sees every value once, in order, never re-entered")
    func deliveryInOrderOneAtATime() async {
        let seen = Locked<[Int]>([])
        let inConsumer = Locked(0)
        let overlaps = Locked(0)
        let delivery = OrderedDelivery<Int, Int>(0) { value in
            let depth = inConsumer.withLock { depth -> Int in
                depth += 1
                return depth
            }
            if depth > 1 { overlaps.withLock { $0 += 1 } }
            seen.withLock { $0.append(value) }
            inConsumer.withLock { $0 -= 1 }
        }
        let threads = 4
        let perThread = 1_000
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<threads {
                group.addTask {
                    for _ in 0..<perThread {
                        delivery.update { count -> ((), [Int]) in
                            count += 1
                            return ((), [count])
                        }
                    }
                }
            }
        }
        let values = seen.withLock { $0 }
        #expect(values == Array(1...(threads * perThread)))
        #expect(overlaps.withLock { $0 } == 0)
        #expect(delivery.read { $0 } == threads * perThread)
    }
}
