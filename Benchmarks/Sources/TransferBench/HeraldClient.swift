import Foundation
import Logging
import TransferBenchKit

// Compile-time split while Herald's session API (SessionManager & co.) is being written:
// `-Xswiftc -DTRANSFERBENCH_NO_HERALD` (run-transfers.sh --without-herald-client) builds TransferBench
// without this client, and `--client herald` then exits with status 3. Never fake numbers.
#if TRANSFERBENCH_NO_HERALD
func measureHeraldIdle(url: URL, seconds: Double) -> Never {
    FileHandle.standardError.write(Data("TransferBench was built without the Herald client (TRANSFERBENCH_NO_HERALD)\n".utf8))
    exit(3)
}

func runHerald(
    url: URL, concurrency: Int, requests: Int, expectedBytes: Int, observedLogLevel: Logger.Level?, cache: String,
    warmsUp: Bool, caFile: URL?, httpVersion: HTTPVersionChoice, postBytes: Int? = nil
) -> LoadOutcome {
    FileHandle.standardError.write(Data("TransferBench was built without the Herald client (TRANSFERBENCH_NO_HERALD)\n".utf8))
    exit(3)
}

func runHeraldDataMemory(url: URL, expectedBytes: Int) -> LargeOutcome {
    FileHandle.standardError.write(Data("TransferBench was built without the Herald client (TRANSFERBENCH_NO_HERALD)\n".utf8))
    exit(3)
}

func runHeraldStream(url: URL, expectedBytes: Int) -> LargeOutcome {
    FileHandle.standardError.write(Data("TransferBench was built without the Herald client (TRANSFERBENCH_NO_HERALD)\n".utf8))
    exit(3)
}

func runHeraldAsync(
    url: URL, concurrency: Int, requests: Int, expectedBytes: Int, caFile: URL?, httpVersion: HTTPVersionChoice
) -> LoadOutcome {
    FileHandle.standardError.write(
        Data("TransferBench was built without the Herald client (TRANSFERBENCH_NO_HERALD)\n".utf8))
    exit(3)
}
#else
import Herald
import HeraldNotifications
import HeraldObservers
import Metrics

/// Where the observed client's log lines go: swift-log's own `StreamLogHandler` formats every message (a
/// timestamp, the level, the label, the sorted metadata) and hands the line here, which drops it.
struct DiscardingStream: TextOutputStream, Sendable {
    mutating func write(_ string: String) {}
}

/// Sets the session up for HTTPS against the benchmark's server: trusts the authority in `caFile` (when given)
/// through the session's security policy, and asks for HTTP/1.1 only or for HTTP/2 where the TLS handshake
/// offers it (``HTTPVersion/automatic``, Herald's default, which multiplexes requests on one connection).
func applyProtocol(to configuration: inout SessionConfiguration, caFile: URL?, httpVersion: HTTPVersionChoice) {
    if let caFile {
        do {
            configuration.securityPolicy = try SecurityPolicy.trustingCertificateAuthorities(pemFile: caFile)
        } catch {
            FileHandle.standardError.write(Data("cannot trust \(caFile.path): \(error)\n".utf8))
            exit(1)
        }
    }
    configuration.httpVersion = httpVersion == .http2 ? .automatic : .http1_1
}

/// Herald's SessionManager with a DataResponseSerializer, the way an app would use it; with
/// `observedLogLevel`, the activity indicator, logging (at that level) and metrics observers are attached to
/// its notification center. With `cache` `memory` or `disk`, the session has that response cache, and one
/// request fills it before the measured phase; with `warmsUp`, that request is made without a cache too. With
/// `postBytes`, each request is a `POST` with a body of that
/// many bytes.
func runHerald(
    url: URL, concurrency: Int, requests: Int, expectedBytes: Int, observedLogLevel: Logger.Level?, cache: String,
    warmsUp: Bool, caFile: URL?, httpVersion: HTTPVersionChoice, postBytes: Int? = nil
) -> LoadOutcome {
    var configuration = SessionConfiguration()
    configuration.maximumConnectionsPerHost = concurrency
    configuration.maximumConnectionsTotal = max(concurrency, configuration.maximumConnectionsTotal)
    applyProtocol(to: &configuration, caFile: caFile, httpVersion: httpVersion)
    let cacheFolder = FileManager.default.temporaryDirectory.appendingPathComponent("transferbench-cache-\(UUID())")
    defer { try? FileManager.default.removeItem(at: cacheFolder) }
    switch cache {
    case "memory":
        configuration.responseCache = InMemoryResponseCache(capacity: 64 << 20)
    case "disk":
        do {
            configuration.responseCache = try DiskResponseCache(directory: cacheFolder, capacity: 64 << 20)
        } catch {
            FileHandle.standardError.write(Data("cannot open the disk cache: \(error)\n".utf8))
            exit(1)
        }
    default:
        break
    }
    let manager = SessionManager(configuration: configuration)
    manager.responseSerializer = DataResponseSerializer()
    var tokens: [ObservationToken] = []
    if let observedLogLevel {
        var logger = Logger(label: "transferbench") { StreamLogHandler(label: $0, stream: DiscardingStream()) }
        logger.logLevel = observedLogLevel
        tokens = [
            NetworkActivityIndicator().observe(manager.notificationCenter),
            LoggingObserver(logger: logger).observe(manager.notificationCenter),
            MetricsObserver(factory: NOOPMetricsHandler.instance).observe(manager.notificationCenter),
        ]
    }
    defer { tokens.forEach { $0.cancel() } }

    // With a cache the warm-up fills it; without one (the row the cache rows are set against) it leaves the
    // same one-time costs (the first connection, the first easy handle) out of the measured CPU.
    if configuration.responseCache != nil || warmsUp {
        let warmed = DispatchSemaphore(value: 0)
        do {
            try manager.dataTask(with: Request(url: url)) { _, _, _ in warmed.signal() }.resume()
        } catch {
            FileHandle.standardError.write(Data("dataTask(with:) threw \(error)\n".utf8))
            exit(1)
        }
        warmed.wait()
    }
    let request = {
        var request = Request(url: url)
        if let postBytes {
            request.method = "POST"
            request.body = Data(repeating: UInt8(ascii: "a"), count: postBytes)
        }
        return request
    }()
    let cpuBefore = processCPUMicroseconds()
    let generator = LoadGenerator(total: requests, concurrency: concurrency) { generator in
        do {
            let task = try manager.dataTask(with: request) { response, responseObject, error in
                var failure: String?
                if let error {
                    failure = "\(error)"
                } else if let status = response?.statusCode, status != 200 {
                    failure = "status \(status)"
                } else if response == nil {
                    failure = "no response"
                } else if let body = responseObject as? Data {
                    if body.count != expectedBytes { failure = "\(body.count) body bytes, expected \(expectedBytes)" }
                } else {
                    failure = "response object is \(responseObject.map { "\(type(of: $0))" } ?? "nil"), not Data"
                }
                generator.finished(failure: failure)
            }
            task.resume()
        } catch {
            generator.finished(failure: "dataTask(with:) threw \(error)")
        }
    }
    var outcome = generator.run()
    outcome.cpuMicroseconds = processCPUMicroseconds() - cpuBefore
    manager.invalidate(cancelingTasks: false)
    return outcome
}

/// Herald's `async` API the way an app would await it: `concurrency` Swift tasks, each awaiting
/// `data(for:)` and checking the response before its next request, until `requests` have completed.
func runHeraldAsync(
    url: URL, concurrency: Int, requests: Int, expectedBytes: Int, caFile: URL?, httpVersion: HTTPVersionChoice
) -> LoadOutcome {
    var configuration = SessionConfiguration()
    configuration.maximumConnectionsPerHost = concurrency
    configuration.maximumConnectionsTotal = max(concurrency, configuration.maximumConnectionsTotal)
    applyProtocol(to: &configuration, caFile: caFile, httpVersion: httpVersion)
    let manager = SessionManager(configuration: configuration)
    let generator = LoadGenerator(total: requests, concurrency: concurrency) { _ in }
    let outcome = generator.runAsync { () async -> String? in
        do {
            let (body, response) = try await manager.data(for: Request(url: url))
            if response.statusCode != 200 { return "status \(response.statusCode)" }
            if body.count != expectedBytes { return "\(body.count) body bytes, expected \(expectedBytes)" }
            return nil
        } catch {
            return "\(error)"
        }
    }
    manager.invalidate(cancelingTasks: false)
    return outcome
}

/// One large GET collected in memory by a data task with a DataResponseSerializer (target in Docs/Performance.md: peak RSS
/// ≤ body + 32 MiB).
func runHeraldDataMemory(url: URL, expectedBytes: Int) -> LargeOutcome {
    // A body collected in memory is refused beyond `maximumResponseSize` (512 MiB by default): an app that
    // means to hold more in memory raises it, as this does for the 1 GiB row.
    var configuration = SessionConfiguration()
    configuration.maximumResponseSize = max(configuration.maximumResponseSize, expectedBytes)
    let manager = SessionManager(configuration: configuration)
    manager.responseSerializer = DataResponseSerializer()
    let outcome = measureLarge { finish in
        do {
            try manager.dataTask(with: Request(url: url)) { response, responseObject, error in
                var outcome = LargeOutcome()
                if let error {
                    outcome.failure = "\(error)"
                } else if let status = response?.statusCode, status != 200 {
                    outcome.failure = "status \(status)"
                } else if response == nil {
                    outcome.failure = "no response"
                } else if let body = responseObject as? Data {
                    outcome.bytes = body.count
                    if body.count != expectedBytes {
                        outcome.failure = "\(body.count) body bytes, expected \(expectedBytes)"
                    }
                } else {
                    outcome.failure = "response object is \(responseObject.map { "\(type(of: $0))" } ?? "nil"), not Data"
                }
                finish(outcome)
            }.resume()
        } catch {
            finish(LargeOutcome(failure: "dataTask(with:) threw \(error)"))
        }
    }
    manager.invalidate(cancelingTasks: false)
    return outcome
}

/// One large GET streamed with `bytes(for:)`, the way an app consumes a body it doesn't keep: each chunk's
/// bytes counted as it arrives.
func runHeraldStream(url: URL, expectedBytes: Int) -> LargeOutcome {
    let manager = SessionManager()
    let outcome = measureLarge { finish in
        Task {
            do {
                let (response, body) = try await manager.bytes(for: Request(url: url))
                var count = 0
                for try await chunk in body { count += chunk.count }
                finish(LargeOutcome(streamedBytes: count, status: response.statusCode, expectedBytes: expectedBytes))
            } catch {
                finish(LargeOutcome(failure: "bytes(for:) failed: \(error)"))
            }
        }
    }
    manager.invalidate(cancelingTasks: false)
    return outcome
}

/// Brings a session up with one request, then stays idle and reports the CPU the process used meanwhile.
func measureHeraldIdle(url: URL, seconds: Double) -> Never {
    let manager = SessionManager()
    manager.responseSerializer = DataResponseSerializer()
    let done = DispatchSemaphore(value: 0)
    do {
        try manager.dataTask(with: Request(url: url)) { _, _, _ in done.signal() }.resume()
    } catch {
        FileHandle.standardError.write(Data("dataTask(with:) threw \(error)\n".utf8))
        exit(1)
    }
    done.wait()
    func cpuMicroseconds() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000 + usage.ru_utime.tv_usec
            + usage.ru_stime.tv_usec
    }
    let before = cpuMicroseconds()
    Thread.sleep(forTimeInterval: seconds)
    let used = cpuMicroseconds() - before
    print(#"{"client":"herald-idle","seconds":\#(seconds),"cpu_ms":\#(String(format: "%.3f", Double(used) / 1000))}"#)
    exit(0)
}
#endif
