import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// A 1 GiB body streamed to a consumer that sleeps 1 ms per chunk, in constant memory.
///
/// Memory is measured in-process, as `LargeTransferTests` does: the peak (`VmHWM`, reset just before the
/// transfer) minus the resident size before it; the test server runs in the same process, so its memory counts
/// too. `make test` runs this suite alone in a process of its own.
@Suite("A 1 GiB streamed body consumed slowly, in constant memory", .serialized)
struct LargeStreamingTests {
    static let size = 1 << 30
    static let budget = 16 << 20

    @Test("a consumer sleeping 1 ms per chunk of 1 GiB keeps RSS growth under 16 MiB while the server's sends block")
    func slowConsumer() async throws {
        let fixture = try await SessionFixture.make()
        PatternCheck.prepare()
        ResidentMemory.resetPeak()
        let before = ResidentMemory.current
        #expect(before > 0, "VmRSS could not be read from /proc/self/status")
        let started = ContinuousClock.now
        let (response, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/bytes/\(Self.size)")))
        #expect(response.statusCode == 200)
        var check = PatternCheck()
        var chunks = 0
        var blockedBeforeHalf = 0
        for try await chunk in body {
            check.check(chunk)
            chunks += 1
            if blockedBeforeHalf == 0, check.offset >= Self.size / 2 {
                blockedBeforeHalf = fixture.server.statistics.sendBlockedCount
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        let elapsed = ContinuousClock.now - started
        let peak = ResidentMemory.peak
        let growth = peak - before
        let blocked = fixture.server.statistics.sendBlockedCount
        print(
            "1 GiB slow consumer: \(chunks) chunks in \(elapsed), peak RSS growth \(growth / 1024) KiB, "
                + "server sends blocked \(blocked) times (\(blockedBeforeHalf) in the first half)")
        #expect(check.matches(count: Self.size))
        #expect(peak >= before, "VmHWM could not be read from /proc/self/status")
        #expect(growth < Self.budget)
        // The consumer lags all along: the server found its socket full, again and again, from the first half on.
        #expect(blockedBeforeHalf > 0)
        #expect(blocked > blockedBeforeHalf)
        _ = try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(fixture.recorder.events.map(\.kind) == [.resume, .complete])
        #expect(fixture.recorder.completions.first?.error == nil)
        try await fixture.tearDown()
    }
}
