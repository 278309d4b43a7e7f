import Dispatch
import HeraldNotifications
import Testing

// The worked example of the HeraldNotifications catalog (ObservingDownloads.md), block for block.
// `SnippetCoverageTests` checks that the article shows exactly these lines.

struct DownloadProgress: Sendable {
    var file: String
    var bytes: Int
}

extension NotificationName where UserInfo == DownloadProgress {
    static let downloadDidProgress = NotificationName("example.download.progress")
}

final class Download: Sendable, CustomStringConvertible {
    let file: String
    init(file: String) { self.file = file }
    var description: String { "Download(\(file))" }
}

@Suite("HeraldNotifications catalog snippets")
struct NotificationsCatalogSnippets {
    @Test("ObservingDownloads: by name, by sender, on a queue, as a sequence")
    func observingDownloads() async {
        let hub = NotificationHub()
        let report = Download(file: "report.pdf")
        let photo = Download(file: "photo.jpg")

        // Every sender, synchronously on the posting thread.
        let everyDownload = hub.addObserver(for: .downloadDidProgress) { note in
            print("[any sender]   \(note.object.map { "\($0)" } ?? "nil"): \(note.userInfo.bytes) bytes")
        }

        // Only `report`; observing it never keeps it alive.
        let reportOnly = hub.addObserver(for: .downloadDidProgress, object: report) { note in
            print("[report only]  \(note.userInfo.file): \(note.userInfo.bytes) bytes")
        }

        // Asynchronously on a queue, in post order.
        let queue = DispatchQueue(label: "example.progress")
        let queueDone = DispatchSemaphore(value: 0)
        let onQueue = hub.addObserver(for: .downloadDidProgress, delivery: .queue(queue)) { note in
            print("[on queue]     \(note.userInfo.file): \(note.userInfo.bytes) bytes")
            if note.userInfo.bytes == 300 { queueDone.signal() }
        }

        // As an async sequence: observing starts now, so nothing posted below is missed.
        let sequence = hub.notifications(named: .downloadDidProgress, bufferingPolicy: .bufferingOldest(16))

        hub.post(.downloadDidProgress, object: report, userInfo: DownloadProgress(file: "report.pdf", bytes: 100))
        hub.post(.downloadDidProgress, object: photo, userInfo: DownloadProgress(file: "photo.jpg", bytes: 200))
        hub.post(.downloadDidProgress, object: report, userInfo: DownloadProgress(file: "report.pdf", bytes: 300))

        queueDone.wait()

        var received = 0
        for await note in sequence {
            print("[sequence]     \(note.userInfo.file): \(note.userInfo.bytes) bytes")
            received += 1
            if received == 3 { break }
        }
        print("sequence dropped \(sequence.droppedCount) notification(s)")

        reportOnly.cancel()
        onQueue.cancel()
        hub.post(.downloadDidProgress, object: report, userInfo: DownloadProgress(file: "report.pdf", bytes: 400))
        everyDownload.cancel()
        #expect(received == 3)
    }
}
