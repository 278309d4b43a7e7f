// NotificationBasics: the typed notification hub in five steps.
//
//     swift run notification-basics
//
// Observes a name, one sender, a queue and an async sequence, prints what each receives, and exits 0.
// Every wait is on a delivery, never on a clock.
import Dispatch
import HeraldNotifications

/// A payload: the name below fixes it, so posting anything else does not compile.
struct DownloadProgress: Sendable {
    var file: String
    var bytes: Int
}

extension NotificationName where UserInfo == DownloadProgress {
    static let downloadDidProgress = NotificationName("example.download.progress")
}

/// A sender. Observers can filter on it; observing it never keeps it alive.
final class Download: Sendable, CustomStringConvertible {
    let file: String
    init(file: String) { self.file = file }
    var description: String { "Download(\(file))" }
}

let hub = NotificationHub()
let report = Download(file: "report.pdf")
let photo = Download(file: "photo.jpg")

// 1. By name: every sender, synchronously on the posting thread (the default delivery).
let everyDownload = hub.addObserver(for: .downloadDidProgress) { note in
    print("[any sender]   \(note.object.map { "\($0)" } ?? "nil"): \(note.userInfo.bytes) bytes")
}

// 2. By sender: only `report`'s notifications.
let reportOnly = hub.addObserver(for: .downloadDidProgress, object: report) { note in
    print("[report only]  \(note.userInfo.file): \(note.userInfo.bytes) bytes")
}

// 3. On a queue: asynchronous, one at a time, in post order (even if the queue were concurrent).
let queue = DispatchQueue(label: "example.progress")
let queueDone = DispatchSemaphore(value: 0)
let onQueue = hub.addObserver(for: .downloadDidProgress, delivery: .queue(queue)) { note in
    print("[on queue]     \(note.userInfo.file): \(note.userInfo.bytes) bytes")
    if note.userInfo.bytes == 300 { queueDone.signal() }
}

// 4. As an async sequence: observing starts now, so nothing posted below is missed.
let sequence = hub.notifications(named: .downloadDidProgress, bufferingPolicy: .bufferingOldest(16))

hub.post(.downloadDidProgress, object: report, userInfo: DownloadProgress(file: "report.pdf", bytes: 100))
hub.post(.downloadDidProgress, object: photo, userInfo: DownloadProgress(file: "photo.jpg", bytes: 200))
hub.post(.downloadDidProgress, object: report, userInfo: DownloadProgress(file: "report.pdf", bytes: 300))

queueDone.wait()  // The queue observer has seen the last notification.

var received = 0
for await note in sequence {
    print("[sequence]     \(note.userInfo.file): \(note.userInfo.bytes) bytes")
    received += 1
    if received == 3 { break }  // Observing stops once the sequence and its iterator are released.
}
print("sequence dropped \(sequence.droppedCount) notification(s)")

// 5. Tokens: cancel (or drop) one to stop observing. Only the "any sender" observer is left.
reportOnly.cancel()
onQueue.cancel()
hub.post(.downloadDidProgress, object: report, userInfo: DownloadProgress(file: "report.pdf", bytes: 400))
everyDownload.cancel()
// `sequence` (a global here) still exists, so its observer is the one still registered.
print("still observed (by the sequence): \(hub.hasObservers(for: .downloadDidProgress))")
