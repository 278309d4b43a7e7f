import Foundation
import HeraldObservers
import HeraldTesting
import Testing

/// `--events` holds every event when the process exits: the run waits for the drained shutdown of its session
/// before it returns, so no line is lost between the post and stdout.
@Suite("activity-counter: --events is complete at exit", .serialized)
struct EventsDrainTests {
    @Test(
        "50 runs of fetch --events with successes, 404s and resets: one complete per URL and one invalidate, all JSON")
    func everyEventWritten() async throws {
        let server = try await TestServer.start()
        let paths = [
            "/bytes/1000", "/bytes/65536?chunkSize=4096", "/json",  // successes
            "/status/404", "/nope",  // 404s
            "/fault/reset-before-headers", "/fault/reset-mid-body?bytes=2048",  // resets
        ]
        let urls = paths.map { server.url($0).absoluteString }
        for run in 1...50 {
            let result = try await ActivityCounterProcess.run(["fetch", "--events", "--concurrency", "7"] + urls)
            #expect(result.status == 2, "run \(run): \(result.stderr)")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            #expect(result.stdout.hasSuffix("\n"), "run \(run): the last line is cut")
            var records: [EventRecord] = []
            for line in lines {
                let record = try #require(
                    try? JSONDecoder().decode(EventRecord.self, from: Data(line.utf8)), "run \(run): not JSON: \(line)")
                records.append(record)
            }
            for url in urls {
                let completes = records.filter { $0.event == "herald.task.complete" && $0.url == url }
                #expect(completes.count == 1, "run \(run): \(url) has \(completes.count) complete lines")
            }
            #expect(records.filter { $0.event == "herald.task.complete" }.count == urls.count, "run \(run)")
            #expect(records.filter { $0.event == "herald.session.invalidate" }.count == 1, "run \(run)")
            #expect(records.last?.event == "herald.session.invalidate", "run \(run)")
        }
        try await server.shutdown()
    }
}
