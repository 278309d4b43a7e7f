import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// 256 MiB each way in constant memory. Serialized so the transfers don't share the RSS budget.
///
/// Memory is measured in-process: the peak (`VmHWM`, reset just before the transfer) minus the resident
/// size before it. `make test` runs this suite alone in a process of its own; run beside other suites, the
/// figure is an upper bound on what the transfer itself costs.
@Suite("256 MiB uploads and downloads in constant memory", .serialized)
struct LargeTransferTests {
    static let size = 256 * 1024 * 1024
    static let budget = 32 * 1024 * 1024

    @Test("a 256 MiB file uploads with under 32 MiB of RSS growth, every byte counted by the server")
    func upload256MiB() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let scratch = try ScratchDirectory()
        let file = try PatternFile.make(count: Self.size, in: scratch.url)
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/status/204"), method: "PUT"), fromFile: file,
            completionHandler: log.handler)
        let growth = try await Self.peakGrowth(resuming: task, in: fixture, label: "upload 256 MiB from file")
        #expect(growth < Self.budget)
        #expect(log.all.first?.error == nil)
        #expect(log.all.first?.response?.statusCode == 204)
        #expect(fixture.server.requests(forPath: "/status/204").first?.bodyByteCount == Self.size)
        #expect(task.uploadProgress.completedUnitCount == Int64(Self.size))
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("a 256 MiB body downloads to a file with under 32 MiB of RSS growth and the exact content")
    func download256MiB() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let destination = scratch.url.appendingPathComponent("256MiB.bin")
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/bytes/\(Self.size)?chunkSize=1048576")),
            destination: { _, _ in destination }, completionHandler: log.handler)
        let growth = try await Self.peakGrowth(resuming: task, in: fixture, label: "download 256 MiB to file")
        #expect(growth < Self.budget)
        #expect(log.all.first?.error == nil)
        #expect(log.all.first?.fileURL == destination)
        // The server counts a write when NIO completes it, which can trail the client's last byte.
        try await fixture.server.waitUntil { $0.bodyBytesSent >= Self.size }
        #expect(fixture.server.bodyBytesSent(forPath: "/bytes/\(Self.size)") == Self.size)
        #expect(PatternFile.size(of: destination) == Self.size)
        #expect(try PatternFile.matches(destination, count: Self.size))
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("a 256 MiB file in a multipart form uploads with under 32 MiB of RSS growth; the server's digests match")
    func multipart256MiB() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let file = try PatternFile.make(count: Self.size, in: scratch.url)
        let fileDigest = try TestDigest.sha256(ofFileAt: file)
        let tailSize = 1 << 20
        var form = MultipartFormData()
        try form.append(Data("large".utf8), name: "label")
        try form.append(fileURL: file, name: "file", mimeType: "application/octet-stream")
        try form.append(length: Int64(tailSize), name: "tail", fileName: "tail.bin") {
            MultipartTests.patternStream(count: tailSize)
        }
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/multipart"), method: "POST"), multipartFormData: form,
            completionHandler: log.handler)
        let growth = try await Self.peakGrowth(
            resuming: task, in: fixture, label: "multipart upload of a 256 MiB file part")
        #expect(growth < Self.budget)
        #expect(log.all.first?.error == nil)
        let echoed = try #require((log.all.first?.object as? JSONValue)?.echoedMultipart)
        #expect(echoed.parts.map(\.name) == ["label", "file", "tail"])
        #expect(echoed.parts.map(\.size) == [5, Self.size, tailSize])
        #expect(echoed.parts[0].sha256 == TestDigest.sha256(Data("large".utf8)))
        #expect(echoed.parts[1].sha256 == fileDigest)
        #expect(echoed.parts[2].sha256 == TestDigest.sha256(Data(TestServer.expectedBytes(in: 0..<tailSize))))
        #expect(fixture.server.requests(forPath: "/multipart").first?.bodyByteCount == Int(form.contentLength))
        #expect(task.uploadProgress.completedUnitCount == form.contentLength)
        scratch.remove()
        try await fixture.tearDown()
    }

    /// Resumes `task`, awaits its completion and returns the peak RSS growth meanwhile, printed after `label`.
    private static func peakGrowth(resuming task: some SessionTask, in fixture: SessionFixture, label: String)
        async throws -> Int
    {
        ResidentMemory.resetPeak()
        let before = ResidentMemory.current
        // A zero would make any growth look small: the measurement must have read /proc.
        #expect(before > 0, "VmRSS could not be read from /proc/self/status")
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(120))
        let peak = ResidentMemory.peak
        #expect(peak >= before, "VmHWM could not be read from /proc/self/status")
        let growth = peak - before
        print("\(label): peak RSS growth \(growth / 1024) KiB")
        return growth
    }
}
