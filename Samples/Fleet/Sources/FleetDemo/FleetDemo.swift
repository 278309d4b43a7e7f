import FleetHarness
import Foundation

/// `make fleet-demo`: starts the fleet, sends it a few hundred requests, and prints what Prometheus answers
/// about service A's Herald client and the trace tree of one request.
///
/// `FLEET_DEMO_SECONDS` keeps the fleet up afterwards, with a light load (about two requests a second, for at most
/// ten minutes) so that its Prometheus has something to show: that many seconds, or with `0` until Ctrl-C
/// (SIGINT) or SIGTERM. `make fleet-demo KEEP=1` sets it to 0.
@main
enum FleetDemo {
    static func main() async {
        // The fleet talks to loopback alone: a proxy the environment names (http_proxy, all_proxy, …) is for the
        // world outside, and the programs it starts inherit this too. Set before anything runs, on one thread.
        setenv("no_proxy", "127.0.0.1,::1,localhost", 1)
        setenv("NO_PROXY", "127.0.0.1,::1,localhost", 1)
        do {
            try await run()
        } catch {
            // `write(contentsOf:)`: Foundation's `write(_:)` traps on a closed or full stream.
            try? FileHandle.standardError.write(contentsOf: Data("fleet-demo: \(error)\n".utf8))
            exit(1)
        }
    }

    /// Runs the demo until it ends or SIGINT, SIGTERM or SIGHUP arrives, whichever is first. The signals are watched
    /// from the start: one that arrives while the fleet starts, or while the demo runs, stops every program
    /// started so far and removes the fleet's folder, as the end of the keep-up phase does.
    static func run() async throws {
        let keep = try keepSeconds()
        // A reader of the output that Ctrl-C ended (tee) must not end the demo before it has stopped the fleet.
        signal(SIGPIPE, SIG_IGN)
        // SIGHUP too: a closed terminal must stop the fleet as Ctrl-C does (Prometheus takes a SIGHUP of its own as
        // "reload", and would outlive the demo with its folder).
        let signals = try SignalWatch.start([SIGINT, SIGTERM, SIGHUP])
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await demo(keep: keep)
                return true
            }
            group.addTask {
                for await number in signals {
                    say("\nReceived signal \(number).")
                    return false
                }
                return true
            }
            // The demo's end (or failure) ends the watch; a signal cancels the demo, which then stops the fleet.
            let demoEnded = try await group.next() ?? true
            group.cancelAll()
            if !demoEnded {
                // Stopped by the signal: what the cancelled demo throws on its way out is not a failure.
                _ = try? await group.next()
            }
        }
    }

    /// Starts the fleet, demonstrates it, keeps it up if asked, and stops it. When cancelled (a signal), stops
    /// what was started and removes the fleet's folder.
    static func demo(keep: Int?) async throws {
        say("Starting the OTLP receiver, service B, service A and Prometheus on 127.0.0.1 …")
        // Cancelled while starting, `Fleet.start` stops what it started and removes the folder.
        let fleet = try await Fleet.start()
        do {
            try await demonstrate(fleet)
            if let keep { try await keepUp(fleet, seconds: keep) }
        } catch  where Task.isCancelled {
            // A signal: stopped below, like the end of the keep-up phase.
        } catch {
            await fleet.stop(keepingLogs: true)
            throw FleetError("\(error) (logs kept in \(fleet.directory.path))")
        }
        say()
        say("Stopping the fleet …")
        // In a task of its own: the cancellation that a signal brings must not cut the programs' shutdown short.
        await Task { await fleet.stop() }.value
        say("Stopped.")
    }

    static func demonstrate(_ fleet: Fleet) async throws {
        say("service A \(fleet.serviceA.absoluteString), service B \(fleet.serviceB.absoluteString)")
        say("Prometheus \(fleet.prometheus.absoluteString), OTLP receiver \(fleet.receiver.absoluteString)")
        say()
        // 300 requests: B answers after 20…149 ms; one in ten is a 404, one in ten a 500.
        let paths = (0..<300).map { index -> String in
            let status = index % 10 == 3 ? 404 : index % 10 == 7 ? 500 : 200
            return "/work?status=\(status)&delay_ms=\(20 + (index * 37) % 130)"
        }
        let started = ContinuousClock.now
        let statuses = try await fleet.load(paths, concurrency: 16)
        let elapsed = ContinuousClock.now - started
        let answered = statuses.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
        say("Sent \(paths.count) requests to service A, 16 at a time, in \(elapsed): \(answered)")
        let total = #"sum(http_client_request_duration_seconds_count{job="service-a"})"#
        _ = try await fleet.waitForQuery(total) { $0.first?.value == Double(paths.count) }
        say()

        let client = #"job="service-a""#
        let queries: [(String, String)] = [
            ("Requests Herald sent from service A", total),
            (
                "Request rate (per second, over the last minute) by status",
                "sum by (http_response_status_code) (rate(http_client_request_duration_seconds_count{\(client)}[1m]))"
            ),
            ("p50 latency (s) by status class", quantile(0.5, client)),
            ("p99 latency (s) by status class", quantile(0.99, client)),
            (
                "p99 wait for a connection (s), six connections for sixteen concurrent requests",
                "histogram_quantile(0.99, sum by (le) (http_client_request_time_in_queue_seconds_bucket{\(client)}))"
            ),
            (
                "Recorded by herald-rules.yml: error ratio (5xx and failures) over 5 minutes",
                "herald:http_client_request_error_ratio:rate5m"
            ),
            (
                "Recorded by herald-rules.yml: share of request time spent waiting for a connection",
                "herald:http_client_request_time_in_queue:ratio_rate5m"
            ),
            ("Active requests now", "sum(http_client_active_requests{\(client)})"),
            (
                "Active requests, highest scraped during the load",
                "max_over_time(sum(http_client_active_requests{\(client)})[1m:1s])"
            ),
        ]
        for (title, promQL) in queries {
            say("\(title)\n  \(promQL)")
            let samples = try await fleet.query(promQL)
            if samples.isEmpty { say("    (no series)") }
            for sample in samples.sorted(by: { $0.description < $1.description }) {
                let labels = sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\($0.value)\"" }
                let value = sample.value.isNaN ? "NaN" : String(format: "%.4g", sample.value)
                say("    {\(labels.joined(separator: ", "))} \(value)")
            }
        }
        say()

        let traceID = randomHex(bytes: 16)
        let parentID = randomHex(bytes: 8)
        let status = try await fleet.request("/work", traceParent: "00-\(traceID)-\(parentID)-01")
        let spans = try await fleet.waitForTrace(traceID, spans: 3)
        say("One request (status \(status)) sent with traceparent 00-\(traceID)-\(parentID)-01; its trace:")
        say("  caller span \(parentID) (the demo's traceparent)")
        for line in TraceTree.render(spans) { say("    " + line) }
    }

    /// The latency quantile of service A's Herald client by status class (the status code's first digit).
    static func quantile(_ quantile: Double, _ selector: String) -> String {
        """
        histogram_quantile(\(quantile), sum by (le, status_class) (label_replace(\
        rate(http_client_request_duration_seconds_bucket{\(selector)}[1m]), \
        "status_class", "${1}xx", "http_response_status_code", "([0-9]).*")))
        """
    }

    /// The longest `FLEET_DEMO_SECONDS`: a year.
    static let maximumKeepSeconds = 365 * 86_400

    /// `FLEET_DEMO_SECONDS`: `nil` when unset (stop at once), 0 for until a signal, else seconds.
    static func keepSeconds() throws -> Int? {
        guard let text = ProcessInfo.processInfo.environment["FLEET_DEMO_SECONDS"], !text.isEmpty else { return nil }
        // At most a year: a sleep's deadline past what a Duration holds would trap once the fleet is up.
        guard let seconds = Int(text), (0...maximumKeepSeconds).contains(seconds) else {
            throw FleetError(
                "FLEET_DEMO_SECONDS must be a whole number of seconds up to \(maximumKeepSeconds) (a year), 0 for "
                    + "until Ctrl-C; not \(text)")
        }
        return seconds
    }

    /// Keeps the fleet up for `seconds` (0: until cancelled, by SIGINT, SIGTERM or SIGHUP), sending it two requests a
    /// second for at most ten minutes.
    static func keepUp(_ fleet: Fleet, seconds: Int) async throws {
        say()
        let until = seconds == 0 ? "until Ctrl-C" : "for \(seconds) s"
        say("The fleet stays up \(until), with about two requests a second:")
        say("  Prometheus  \(fleet.prometheus.absoluteString)/graph  (rules: \(fleet.prometheus.absoluteString)/rules)")
        say("  service A   \(fleet.serviceA.absoluteString)/metrics")
        say("  service B   \(fleet.serviceB.absoluteString)/metrics")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // The trickle: bounded in time, every request to 127.0.0.1.
                let end = ContinuousClock.now + .seconds(600)
                var index = 0
                while ContinuousClock.now < end {
                    try await Task.sleep(for: .milliseconds(500))
                    let status = index % 10 == 3 ? 404 : index % 25 == 7 ? 500 : 200
                    _ = try? await fleet.request("/work?status=\(status)&delay_ms=\(20 + (index * 37) % 130)")
                    index += 1
                }
                while true { try await Task.sleep(for: .seconds(3600)) }
            }
            if seconds > 0 { group.addTask { try await Task.sleep(for: .seconds(seconds)) } }
            // Whichever ends first (the time given, or a signal's cancellation) ends the others.
            try await group.next()
            group.cancelAll()
        }
    }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Writes a line to standard output at once (`print` buffers when the output is a pipe): the demo's
    /// output is read as it runs.
    static func say(_ line: String = "") {
        // Failing quietly: with a pipe closed by Ctrl-C (`make fleet-demo | tee …`), the demo still stops the fleet.
        try? FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
    }
}

/// The signals that stop the demo as a stream, from a handler that writes the signal's number to a pipe. A handler (unlike
/// an ignored signal, which a dispatch source needs, or a blocked one) is not inherited by the programs the
/// fleet starts: they get the default action back when they are executed, so their own SIGTERM still stops them.
enum SignalWatch {
    /// The pipe's write end, for the handler; set once, before any handler is installed.
    nonisolated(unsafe) static var writeEnd: Int32 = -1

    /// Installs the handlers for `numbers` and returns the signals as they arrive.
    /// - Throws: ``FleetError`` when the pipe can't be made (no descriptor left); nothing is installed then.
    static func start(_ numbers: [Int32]) throws -> AsyncStream<Int32> {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw FleetError("can't watch the stopping signals: pipe(2) failed: \(String(cString: strerror(errno)))")
        }
        // Not for the programs the fleet starts.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        writeEnd = ends[1]
        let readEnd = ends[0]
        let (stream, sink) = AsyncStream.makeStream(of: Int32.self)
        // A thread of its own, blocked in read(2) for the life of the program.
        let reader = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count < 0, errno == EINTR { continue }
                guard count == 1 else { break }
                sink.yield(Int32(byte))
            }
            sink.finish()
        }
        reader.name = "fleet-demo-signals"
        reader.start()
        for number in numbers {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(SignalWatch.writeEnd, &byte, 1)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
        }
        return stream
    }
}
