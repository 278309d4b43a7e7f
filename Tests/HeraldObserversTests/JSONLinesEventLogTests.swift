import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import Testing

/// A text stream collecting what is written, shared with the test.
struct SharedText: TextOutputStream, Sendable {
    let storage = Locked("")
    var text: String { storage.withLock { $0 } }
    mutating func write(_ string: String) { storage.withLock { $0 += string } }
}

@Suite("JSON-lines event log")
struct JSONLinesEventLogTests {
    let tasks = OfflineTasks()

    @Test("one well-formed JSON object per notification, parsed back")
    func linesParseBack() async throws {
        let output = SharedText()
        let log = JSONLinesEventLog(stream: output)
        let task = try tasks.task("http://user:pw@example.com/file?x=1")
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        log.taskDidResume(Payloads.resume(task: 3, session: 2, object: task, date: date))
        log.taskDidSuspend(Payloads.suspend(task: 3, session: 2, object: task))
        log.taskDidComplete(
            Payloads.complete(
                task: 3, session: 2, object: task, response: Payloads.response(404, url: task.originalRequest.url),
                error: HeraldError(.unacceptableStatusCode, "Not found."),
                metrics: Payloads.metrics(total: 1.2345, sent: 0, received: 99)))
        log.sessionDidInvalidate(Payloads.invalidate(session: 2))
        await log.flush()

        let lines = output.text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 5)
        #expect(lines.last == "")
        let records = try lines.dropLast().map { try JSONDecoder().decode(EventRecord.self, from: Data($0.utf8)) }
        #expect(
            records.map(\.event) == [
                "herald.task.resume", "herald.task.suspend", "herald.task.complete", "herald.session.invalidate",
            ])
        #expect(records[0].time == "2023-11-14T22:13:20.500Z")
        #expect(records[0].task == 3 && records[0].session == 2)
        #expect(records[0].method == "GET")
        #expect(records[0].url == "http://REDACTED:REDACTED@example.com/file?x=1")
        #expect(records[2].status == 404)
        #expect(records[2].error == "unacceptable_status_code")
        #expect(records[2].bytesReceived == 99)
        #expect(records[2].duration == 1.235)
        #expect(records[3].task == nil)
        // Any JSON parser agrees, not only the Codable mirror.
        for line in lines.dropLast() {
            #expect(try JSONSerialization.jsonObject(with: Data(line.utf8)) is [String: Any])
        }
    }

    @Test("a failed download move is logged with the error, the kept file and the destination")
    func moveFailureLine() async throws {
        let output = SharedText()
        let log = JSONLinesEventLog(stream: output)
        let failure = DownloadMoveFailure(
            taskIdentifier: 7, sessionIdentifier: 2, date: Date(timeIntervalSince1970: 1_700_000_000),
            error: HeraldError(.downloadMoveFailed, "No such directory."),
            sourceURL: URL(fileURLWithPath: "/tmp/herald/abc.download"),
            destinationURL: URL(fileURLWithPath: "/missing/dir/file"))
        log.downloadDidFailToMoveFile(
            TypedNotification(name: .downloadDidFailToMoveFile, object: nil, userInfo: failure))
        await log.flush()
        let record = try JSONDecoder().decode(
            EventRecord.self, from: Data(output.text.trimmingCharacters(in: .newlines).utf8))
        #expect(record.event == "herald.download.move-file-failed")
        #expect(record.task == 7 && record.session == 2)
        #expect(record.error == "download_move_failed")
        #expect(record.file == "/tmp/herald/abc.download")
        #expect(record.destination == "/missing/dir/file")
    }

    @Test("lines from many threads never interleave")
    func concurrentLines() async throws {
        let output = SharedText()
        let log = JSONLinesEventLog(stream: output)
        await withTaskGroup(of: Void.self) { group in
            for session in 1...4 {
                group.addTask {
                    for task in 1...250 { log.taskDidResume(Payloads.resume(task: task, session: session)) }
                }
            }
        }
        await log.flush()
        let lines = output.text.split(separator: "\n")
        #expect(lines.count == 1000)
        for line in lines {
            _ = try JSONDecoder().decode(EventRecord.self, from: Data(line.utf8))
        }
    }
}
