// TransferBench: one client of `make bench-transfers` (Benchmarks/run-transfers.sh).
//
//   TransferBench --client urlsession|herald|herald-observed|ahc --url URL --concurrency N --requests R
//                 [--expect-bytes B]
//   TransferBench --client herald --url URL --idle-seconds S
//   TransferBench --client urlsession|herald|ahc --url URL --mode download-file|data-memory --expect-bytes B
//                 [--destination PATH]
//
// The second form measures an idle session (target in Docs/Performance.md: ≤ 10 ms CPU in 5 s): one request to bring the
// engine and a pooled connection up, then S seconds of nothing, printing the process CPU time spent.
//
// `herald-observed` is Herald with the activity indicator, the logging observer (at debug level, into a
// handler that formats and discards) and the metrics observer (into swift-metrics' no-op backend)
// attached: the "with observers" row of Docs/Performance.md. `ahc` is AsyncHTTPClient (AHCClient.swift).
//
// Keeps N GETs in flight (each completion starts the next) until R have completed, checks every
// response (status 200, B body bytes), and prints one JSON line:
//   {"client":…,"concurrency":N,"requests":R,"failures":F,"seconds":S}
// where S is the wall time from the first request to the last completion. CPU time and peak RSS
// are measured from outside, by the script.
//
// The third form is one GET of a large body (the 256 MiB rows of Docs/Performance.md): `download-file` uses the client's
// download API and moves the file to PATH (required), `data-memory` a data task that collects the body in
// memory. It checks status 200 and B bytes (the script compares the file with the source) and prints
//   {"client":…,"mode":…,"requests":1,"failures":0|1,"bytes":B,"seconds":S}
// where S runs from resume() to the end of the completion handler (the move included).
import Foundation

struct Options {
    var client = ""
    var url: URL?
    var concurrency = 1
    var requests = 20_000
    var expectedBytes = 1024
    var idleSeconds: Double?
    var mode: LargeMode?
    var destination: URL?
}

func usage() -> Never {
    FileHandle.standardError.write(
        Data(
            """
            usage: TransferBench --client urlsession|herald|herald-observed|ahc --url URL --concurrency N --requests R
                                 [--expect-bytes B]
                   TransferBench --client herald --url URL --idle-seconds S
                   TransferBench --client urlsession|herald|ahc --url URL --mode download-file|data-memory
                                 --expect-bytes B [--destination PATH]

            """.utf8))
    exit(2)
}

func parseOptions() -> Options {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst()
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { usage() }
        switch flag {
        case "--client": options.client = value
        case "--url": options.url = URL(string: value)
        case "--concurrency": options.concurrency = Int(value) ?? 0
        case "--requests": options.requests = Int(value) ?? 0
        case "--expect-bytes": options.expectedBytes = Int(value) ?? -1
        case "--idle-seconds": options.idleSeconds = Double(value)
        case "--mode":
            guard let mode = LargeMode(rawValue: value) else { usage() }
            options.mode = mode
        case "--destination": options.destination = URL(fileURLWithPath: value)
        default: usage()
        }
    }
    guard options.url != nil, options.concurrency > 0, options.requests > 0, options.expectedBytes >= 0 else {
        usage()
    }
    if options.mode == .downloadFile && options.destination == nil { usage() }
    return options
}

let options = parseOptions()

func runClient() -> Never {
    let url = options.url!
    if let idleSeconds = options.idleSeconds, options.client == "herald" {
        measureHeraldIdle(url: url, seconds: idleSeconds)
    }
    if let mode = options.mode { runLarge(url: url, mode: mode) }
    let outcome: LoadOutcome
    switch options.client {
    case "urlsession":
        outcome = runURLSession(
            url: url, concurrency: options.concurrency, requests: options.requests,
            expectedBytes: options.expectedBytes)
    case "ahc":
        outcome = runAHC(
            url: url, concurrency: options.concurrency, requests: options.requests,
            expectedBytes: options.expectedBytes)
    case "herald", "herald-observed":
        outcome = runHerald(
            url: url, concurrency: options.concurrency, requests: options.requests,
            expectedBytes: options.expectedBytes, observed: options.client == "herald-observed")
    default:
        usage()
    }
    print(
        #"{"client":"\#(options.client)","concurrency":\#(options.concurrency),"requests":\#(outcome.completed),"#
            + #""failures":\#(outcome.failures),"seconds":\#(String(format: "%.6f", outcome.seconds))}"#)
    exit(outcome.failures == 0 && outcome.completed == options.requests ? 0 : 1)
}

// The load runs on its own thread and the main thread serves the main queue, so a client that
// delivers completions on the main queue (as AFNetworking does by default) works too.
// TRANSFERBENCH_NO_DISPATCH_MAIN=1 (set by Benchmarks/run-instructions.sh) runs the load on the main
// thread instead: valgrind 3.19 crashes in the main thread's exit that `dispatchMain()` makes, and
// none of Herald, the C client or AsyncHTTPClient needs the main queue.
if ProcessInfo.processInfo.environment["TRANSFERBENCH_NO_DISPATCH_MAIN"] == "1" {
    runClient()
}
Thread.detachNewThread { runClient() }
dispatchMain()

func runLarge(url: URL, mode: LargeMode) -> Never {
    let outcome: LargeOutcome
    switch (options.client, mode) {
    case ("urlsession", _):
        outcome = runURLSessionLarge(
            url: url, mode: mode, destination: options.destination, expectedBytes: options.expectedBytes)
    case ("ahc", _):
        outcome = runAHCLarge(
            url: url, mode: mode, destination: options.destination, expectedBytes: options.expectedBytes)
    case ("herald", .downloadFile):
        outcome = runHeraldDownload(url: url, destination: options.destination!, expectedBytes: options.expectedBytes)
    case ("herald", .dataMemory):
        outcome = runHeraldDataMemory(url: url, expectedBytes: options.expectedBytes)
    default:
        usage()
    }
    if let failure = outcome.failure {
        FileHandle.standardError.write(Data("transfer failed: \(failure)\n".utf8))
    }
    let progress = outcome.progressCalls.map { #","progress_calls":\#($0)"# } ?? ""
    print(
        #"{"client":"\#(options.client)","mode":"\#(mode.rawValue)","requests":1,"#
            + #""failures":\#(outcome.failure == nil ? 0 : 1),"bytes":\#(outcome.bytes),"#
            + #""seconds":\#(String(format: "%.6f", outcome.seconds))\#(progress)}"#)
    exit(outcome.failure == nil ? 0 : 1)
}
