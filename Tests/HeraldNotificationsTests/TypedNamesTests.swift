import HeraldNotifications
import Testing

extension NotificationName where UserInfo == Progress5 {
    static let progressed = NotificationName("test.typed.progressed")
}

@Suite("Typed names and payloads")
struct TypedNamesTests {
    // Promise 1's compile-time half — posting `userInfo: "text"` under `.progressed`, or reading
    // `note.userInfo.missingField` — is a type error, so it cannot be a runtime test. These tests pin the
    // runtime half: the payload arrives with its static type, and raw values are stable.

    @Test("a handler receives the payload with its declared type, field by field")
    func payloadArrivesTyped() async {
        let hub = NotificationHub()
        let received = Recorder<Progress5>()
        let token = hub.addObserver(for: .progressed) { note in
            let payload: Progress5 = note.userInfo  // no cast: the name fixed the type
            received.append(payload)
        }
        let sent = Progress5(taskID: 1, sessionID: 2, bytesSent: 3, bytesReceived: 4, label: "five")
        hub.post(.progressed, userInfo: sent)
        #expect(received.elements == [sent])
        token.cancel()
    }

    @Test("a name's raw value and description are exactly the string it was created with")
    func rawValuesAreStable() {
        #expect(NotificationName<Progress5>.progressed.rawValue == "test.typed.progressed")
        #expect(NotificationName<Int>("herald.task.resume").rawValue == "herald.task.resume")
        #expect(NotificationName<Int>("herald.task.resume").description == "herald.task.resume")
    }

    @Test("names are equal when their raw values are, and hash alike")
    func namesAreValues() {
        let a = NotificationName<Int>("test.typed.same")
        let b = NotificationName<Int>("test.typed.same")
        let c = NotificationName<Int>("test.typed.other")
        #expect(a == b)
        #expect(a != c)
        #expect(Set([a, b, c]).count == 2)
    }

    @Test("the same raw value with a different payload type is a different name")
    func payloadTypeSeparatesNames() {
        let hub = NotificationHub()
        let ints = Counter()
        let strings = Counter()
        let t1 = hub.addObserver(for: NotificationName<Int>("test.typed.shared")) { _ in ints.increment() }
        let t2 = hub.addObserver(for: NotificationName<String>("test.typed.shared")) { _ in strings.increment() }
        hub.post(NotificationName<Int>("test.typed.shared"), userInfo: 1)
        #expect(ints.count == 1)
        #expect(strings.count == 0)
        _ = (t1, t2)
    }

    @Test("a posted notification carries its name and sender")
    func notificationCarriesNameAndSender() {
        let hub = NotificationHub()
        let sender = Sender("s")
        let name = NotificationName<Int>("test.typed.carries")
        let received = Recorder<String>()
        let token = hub.addObserver(for: name) { note in
            received.append("\(note.name.rawValue) \(note.object.map { "\($0)" } ?? "nil") \(note.userInfo)")
        }
        hub.post(name, object: sender, userInfo: 7)
        hub.post(name, userInfo: 8)
        #expect(received.elements == ["test.typed.carries s 7", "test.typed.carries nil 8"])
        token.cancel()
    }
}
