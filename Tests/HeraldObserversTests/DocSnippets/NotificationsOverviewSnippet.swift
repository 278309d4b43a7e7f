import HeraldNotifications
import Testing

// The overview example of the HeraldNotifications catalog (HeraldNotifications.md). It lives in this
// test target because its `Download` payload would clash with the `Download` sender of the worked
// example, compiled in HeraldTests. `SnippetCoverageTests` (HeraldTests) checks both.

struct Download: Sendable { var bytes: Int }

extension NotificationName where UserInfo == Download {
    static let downloadDidFinish = NotificationName("example.download.finish")
}

@Suite("HeraldNotifications overview snippet")
struct NotificationsOverviewSnippet {
    @Test("a typed name, a handler and a post")
    func overview() {
        let hub = NotificationHub()
        let token = hub.addObserver(for: .downloadDidFinish) { note in
            print(note.userInfo.bytes)  // `note.userInfo` is a `Download`
        }
        hub.post(.downloadDidFinish, userInfo: Download(bytes: 42))
        #expect(!token.isCancelled)
    }
}
