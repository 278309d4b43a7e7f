import Dispatch
import Foundation
import HeraldNotifications

/// One line of the results table.
struct Row {
    let name: String
    /// Herald's cost, nanoseconds per post (or per delivery / per notification, as the name says).
    let ns: Double
    let foundationNs: Double
    /// How many times faster Herald is: `foundationNs / ns`.
    var ratio: Double { foundationNs / ns }
}

let postIterations = 2_000_000

/// A post to one observer of every sender; with `sender`, each post names it, as every lifecycle
/// notification does: the baseline of the filtered row, which differs from it only by the sender filter.
func postToOneObserver(naming sender: BenchSender? = nil) -> Row {
    let hub = NotificationHub()
    let token = hub.addObserver(for: .benchOne) { sink &+= $0.userInfo }
    let herald = bestNanoseconds(iterations: postIterations) { n in
        for i in 0..<n { hub.post(.benchOne, object: sender, userInfo: i) }
    }
    token.cancel()

    let center = NotificationCenter()
    let observer = center.addObserver(forName: .benchOne, object: nil, queue: nil) { _ in sink &+= 1 }
    let foundation = bestNanoseconds(iterations: postIterations / 10) { n in
        for _ in 0..<n { center.post(name: .benchOne, object: sender) }
    }
    center.removeObserver(observer)
    return Row(
        name: sender == nil ? "post, 1 observer" : "post, 1 observer, naming a sender", ns: herald,
        foundationNs: foundation)
}

func postToOneOfTenThousand() -> Row {
    let senders = (0..<10_001).map { _ in BenchSender() }
    let target = senders[5_000]

    let hub = NotificationHub()
    let tokens = senders.map { sender in hub.addObserver(for: .benchFiltered, object: sender) { sink &+= $0.userInfo } }
    let herald = bestNanoseconds(iterations: postIterations) { n in
        for i in 0..<n { hub.post(.benchFiltered, object: target, userInfo: i) }
    }
    tokens.forEach { $0.cancel() }

    let center = NotificationCenter()
    let observers = senders.map { sender in
        center.addObserver(forName: .benchFiltered, object: sender, queue: nil) { _ in sink &+= 1 }
    }
    let foundation = bestNanoseconds(runs: 3, iterations: 2_000) { n in
        for _ in 0..<n { center.post(name: .benchFiltered, object: target) }
    }
    observers.forEach { center.removeObserver($0) }
    return Row(name: "post, 1 matching of 10,000 filtered", ns: herald, foundationNs: foundation)
}

func postToThousandObservers() -> Row {
    let count = 1_000
    let hub = NotificationHub()
    let tokens = (0..<count).map { _ in hub.addObserver(for: .benchMany) { sink &+= $0.userInfo } }
    let herald = bestNanoseconds(iterations: 20_000, unitsPerIteration: count) { n in
        for i in 0..<n { hub.post(.benchMany, userInfo: i) }
    }
    tokens.forEach { $0.cancel() }

    let center = NotificationCenter()
    let observers = (0..<count).map { _ in
        center.addObserver(forName: .benchMany, object: nil, queue: nil) { _ in sink &+= 1 }
    }
    let foundation = bestNanoseconds(runs: 3, iterations: 2_000, unitsPerIteration: count) { n in
        for _ in 0..<n { center.post(name: .benchMany, object: nil) }
    }
    observers.forEach { center.removeObserver($0) }
    return Row(name: "post, 1,000 matching (per delivery)", ns: herald, foundationNs: foundation)
}

func postFiveFieldPayload() -> Row {
    let hub = NotificationHub()
    let token = hub.addObserver(for: .benchFive) { sink &+= $0.userInfo.taskIdentifier }
    let herald = bestNanoseconds(iterations: postIterations) { n in
        for i in 0..<n {
            hub.post(
                .benchFive,
                userInfo: FivePayload(
                    taskIdentifier: i, sessionIdentifier: 1, bytesSent: 1_024, bytesReceived: 4_096, method: "GET"))
        }
    }
    token.cancel()

    let center = NotificationCenter()
    let observer = center.addObserver(forName: .benchFive, object: nil, queue: nil) { note in
        sink &+= note.userInfo?["taskIdentifier"] as? Int ?? 0
    }
    let foundation = bestNanoseconds(iterations: postIterations / 20) { n in
        for i in 0..<n {
            center.post(
                name: .benchFive, object: nil,
                userInfo: [
                    "taskIdentifier": i, "sessionIdentifier": 1, "bytesSent": Int64(1_024),
                    "bytesReceived": Int64(4_096), "method": "GET",
                ])
        }
    }
    center.removeObserver(observer)
    return Row(name: "post, 5-field payload vs 5-key userInfo", ns: herald, foundationNs: foundation)
}

func postToNobody() -> Row {
    let hub = NotificationHub()
    // Another name is observed, so the hub is not trivially empty.
    let token = hub.addObserver(for: .benchOne) { sink &+= $0.userInfo }
    let herald = bestNanoseconds(iterations: postIterations * 5) { n in
        for i in 0..<n { hub.post(.benchNobody, userInfo: i) }
    }
    token.cancel()

    let center = NotificationCenter()
    let observer = center.addObserver(forName: .benchOne, object: nil, queue: nil) { _ in sink &+= 1 }
    let foundation = bestNanoseconds(iterations: postIterations / 4) { n in
        for _ in 0..<n { center.post(name: .benchNobody, object: nil) }
    }
    center.removeObserver(observer)
    return Row(name: "post, nobody observing", ns: herald, foundationNs: foundation)
}

/// Posts `count` notifications to one queue observer and returns nanoseconds per notification, from the
/// first post until the handler has seen the last one.
func queueThroughput() -> Row {
    let count = 1_000_000
    let hub = NotificationHub()
    let queue = DispatchQueue(label: "bench.queue")
    let done = DispatchSemaphore(value: 0)
    let token = hub.addObserver(for: .benchQueue, delivery: .queue(queue)) { note in
        if note.userInfo == count - 1 { done.signal() }
    }
    let herald = bestNanoseconds(runs: 5, iterations: count) { n in
        for i in (count - n)..<count { hub.post(.benchQueue, userInfo: i) }
        done.wait()
    }
    token.cancel()

    let foundationCount = 20_000
    let center = NotificationCenter()
    let operations = OperationQueue()
    operations.maxConcurrentOperationCount = 1
    let foundationDone = DispatchSemaphore(value: 0)
    let observer = center.addObserver(forName: .benchQueue, object: nil, queue: operations) { note in
        if note.object as? Int == foundationCount - 1 { foundationDone.signal() }
    }
    let foundation = bestNanoseconds(runs: 3, iterations: foundationCount) { n in
        for i in (foundationCount - n)..<foundationCount { center.post(name: .benchQueue, object: i) }
        foundationDone.wait()
    }
    center.removeObserver(observer)
    return Row(name: ".queue delivery to 1 observer (per notification)", ns: herald, foundationNs: foundation)
}
