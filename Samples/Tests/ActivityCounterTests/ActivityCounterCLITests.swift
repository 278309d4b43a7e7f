import Foundation
import Herald
import HeraldObservers
import HeraldTesting
import Testing

/// Runs the built `activity-counter` executable (it sits next to the test bundle in the build
/// directory; `swift build --build-tests` builds it).
enum ActivityCounterBinary {
    static var url: URL? {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [directory, directory.deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent("activity-counter")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ arguments: [String], timeout: Duration = .seconds(60)) async throws -> Run {
        let binary = try #require(url, "build the executable first: swift build --build-tests")
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let exited = AsyncStream<Int32> { continuation in
            process.terminationHandler = { continuation.yield($0.terminationStatus) }
        }
        try process.run()
        // Read both pipes while it runs, so a full pipe can never block it.
        async let stdout = Task.detached { out.fileHandleForReading.readDataToEndOfFile() }.value
        async let stderr = Task.detached { err.fileHandleForReading.readDataToEndOfFile() }.value
        let status = try await withThrowingTaskGroup(of: Int32?.self) { group in
            group.addTask {
                for await status in exited { return status }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            if first == nil { process.terminate() }
            return first
        }
        let run = Run(
            status: status ?? -1, stdout: String(decoding: await stdout, as: UTF8.self),
            stderr: String(decoding: await stderr, as: UTF8.self))
        try #require(status != nil, "activity-counter timed out; stderr: \(run.stderr)")
        return run
    }
}

@Suite("activity-counter CLI", .serialized)
struct ActivityCounterCLITests {
    @Test(
        "bad arguments exit 64 with a helpful message",
        arguments: [
            ["fetch"], ["fetch", "ftp://example.com/x"], ["fetch", "http://127.0.0.1:1/", "--concurrency", "0"],
            ["demo", "--activation-delay", "-1"], ["demo", "--log-level", "loud"], ["frobnicate"],
        ])
    func badArguments(_ arguments: [String]) async throws {
        let run = try await ActivityCounterBinary.run(arguments)
        #expect(run.status == 64)
        #expect(run.stderr.contains("Error:"))
        #expect(run.stderr.contains("Usage:") || run.stderr.contains("--help"))
    }

    @Test("the demo runs end to end: summary on stdout, indicator lines on stderr, exit 0")
    func demo() async throws {
        let run = try await ActivityCounterBinary.run(["demo"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("URL") == true)
        #expect(lines.count == 8 + 2)
        #expect(run.stdout.contains("/status/404") && run.stdout.contains("404 (planned)"))
        #expect(lines.last == "8 URLs, 11.0 MiB, all as expected")
        // Not a terminal: plain lines, shown once and hidden once, no escape sequences.
        #expect(run.stderr.contains("activity: shown"))
        let indicatorLines = run.stderr.split(separator: "\n").filter {
            $0.hasPrefix("activity: shown") || $0.hasPrefix("activity: hidden")
        }
        #expect(indicatorLines.count == 2)
        #expect(indicatorLines.last?.hasPrefix("activity: hidden") == true)
        #expect(!run.stderr.contains("\u{1B}"))
    }

    @Test("--events prints JSON lines on stdout with a resume and a complete per URL")
    func events() async throws {
        let run = try await ActivityCounterBinary.run(["demo", "--events", "--activation-delay", "0"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let records = try run.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(EventRecord.self, from: Data($0.utf8))
        }
        let urls = Set(records.compactMap(\.url))
        #expect(urls.count == 8)
        for url in urls {
            let events = records.filter { $0.url == url }.map(\.event)
            #expect(events == ["herald.task.resume", "herald.task.complete"], "\(url)")
        }
        #expect(records.last?.event == "herald.session.invalidate")
        #expect(run.stderr.contains("8 URLs"))
    }

    @Test("fetch exits 1 when any URL fails, and saves downloads into --output-dir")
    func fetchFailure() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ac-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await TestServer.start()
        let run = try await ActivityCounterBinary.run([
            "fetch", server.url("/bytes/5000").absoluteString, server.url("/status/500").absoluteString,
            "--output-dir", directory.path,
        ])
        try await server.shutdown()
        #expect(run.status == 1)
        #expect(run.stdout.contains("1 failed"))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files == ["1-5000"])
        let size = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("1-5000").path)[
            .size]
        #expect(size as? Int == 5000)
    }
}
