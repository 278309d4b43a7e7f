import Dispatch
import Foundation
import HeraldNotifications
import Synchronization
import Testing

/// Each thread's posting state (breadth-first delivery, the registry snapshot it reads) is its own, is made
/// on the thread's first post and goes when the thread exits.
@Suite("Posting threads")
struct PostingThreadTests {
    let hub = NotificationHub()
    let name = NotificationName<Int>("test.posting-thread.event")

    @Test("a handler running on one thread is seen as running there, and on no other thread")
    func stateIsPerThread() async {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let seenInside = Guarded<Bool?>(nil)
        let seenAfter = Guarded<Bool?>(nil)
        let token = hub.addObserver(for: name) { _ in
            seenInside.withLock { $0 = NotificationHub.isHandlerRunningOnCurrentThread }
            entered.signal()
            _ = release.wait(timeout: .now() + 10)
        }
        startThread(named: "test.posting-thread.poster") { [hub, name] in
            hub.post(name, userInfo: 1)
            seenAfter.withLock { $0 = NotificationHub.isHandlerRunningOnCurrentThread }
            finished.signal()
        }
        // The waits run on threads of their own: see `onThreadOfItsOwn`.
        #expect(await onThreadOfItsOwn { entered.wait(timeout: .now() + 10) == .success } == true)
        // The handler is still running on the other thread.
        #expect(!NotificationHub.isHandlerRunningOnCurrentThread)
        let elsewhere = Guarded<Bool?>(nil)
        let checked = DispatchSemaphore(value: 0)
        startThread(named: "test.posting-thread.bystander") {
            elsewhere.withLock { $0 = NotificationHub.isHandlerRunningOnCurrentThread }
            checked.signal()
        }
        #expect(await onThreadOfItsOwn { checked.wait(timeout: .now() + 10) == .success } == true)
        release.signal()
        #expect(await onThreadOfItsOwn { finished.wait(timeout: .now() + 10) == .success } == true)
        #expect(seenInside.withLock { $0 } == true)
        #expect(elsewhere.withLock { $0 } == false)
        #expect(seenAfter.withLock { $0 } == false)
        token.cancel()
    }

    @Test("64 threads that each post and exit deliver every post, and posting goes on afterwards")
    func threadsThatExit() async {
        let threads = 64
        let postsPerThread = 100
        let delivered = Atomic<Int>(0)
        let token = hub.addObserver(for: name) { _ in delivered.add(1, ordering: .relaxed) }
        let done = DispatchSemaphore(value: 0)
        for index in 0..<threads {
            startThread(named: "test.posting-thread.\(index)") { [hub, name] in
                for post in 0..<postsPerThread { hub.post(name, userInfo: post) }
                done.signal()
            }
        }
        let finished = await onThreadOfItsOwn {
            var finished = 0
            while finished < threads, done.wait(timeout: .now() + 10) == .success { finished += 1 }
            return finished
        }
        #expect(finished == threads)
        #expect(delivered.load(ordering: .relaxed) == threads * postsPerThread)
        hub.post(name, userInfo: -1)
        #expect(delivered.load(ordering: .relaxed) == threads * postsPerThread + 1)
        token.cancel()
    }
}
