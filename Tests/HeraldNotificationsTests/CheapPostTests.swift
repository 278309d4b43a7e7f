import HeraldNotifications
import Testing

@Suite("Cheap posting")
struct CheapPostTests {
    let hub = NotificationHub()
    let name = NotificationName<Int>("test.cheap.event")

    @Test("posting a name nobody observes never builds the payload")
    func unobservedSkipsPayload() {
        let built = Counter()
        func payload() -> Int {
            built.increment()
            return 1
        }
        let other = hub.addObserver(for: NotificationName<Int>("test.cheap.other")) { _ in }
        hub.post(name, userInfo: payload())
        #expect(built.count == 0)
        let token = hub.addObserver(for: name) { _ in }
        hub.post(name, userInfo: payload())
        #expect(built.count == 1)
        token.cancel()
        hub.post(name, userInfo: payload())
        #expect(built.count == 1)
        _ = other
    }

    @Test("hasObservers follows registration, sender-filtered or not, and cancellation")
    func hasObserversFollowsRegistration() {
        #expect(!hub.hasObservers(for: name))
        let sender = Sender("s")
        let filtered = hub.addObserver(for: name, object: sender) { _ in }
        #expect(hub.hasObservers(for: name))
        let unfiltered = hub.addObserver(for: name) { _ in }
        filtered.cancel()
        #expect(hub.hasObservers(for: name))
        unfiltered.cancel()
        #expect(!hub.hasObservers(for: name))
    }

    @Test("hubs are independent: observing one does not make the name observed on another")
    func hubsAreIndependent() {
        let other = NotificationHub()
        let token = other.addObserver(for: name) { _ in }
        #expect(!hub.hasObservers(for: name))
        #expect(other.hasObservers(for: name))
        _ = token
    }
}
