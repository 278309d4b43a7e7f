// TransferBench: one client of `make bench-transfers` (Benchmarks/run-transfers.sh).
//
//   TransferBench --client urlsession|herald|herald-observed|herald-async|ahc|ahc-async --url URL --concurrency N --requests R
//                 [--expect-bytes B] [--log-level LEVEL] [--cache none|memory|disk]
//                 [--cacert PATH] [--http-version 1.1|2] [--post-bytes N]
//   TransferBench --client herald --url URL --idle-seconds S
//   TransferBench --client urlsession|herald|ahc --url URL --mode download-file|data-memory|stream --expect-bytes B
//                 [--destination PATH]
//
// This binary holds Herald's clients and links nothing else: `--client urlsession|ahc|ahc-async` replaces the process
// with `TransferBenchPeers` (built beside it), so that FoundationNetworking, NIO and AsyncHTTPClient are
// not in the process whose RSS is measured for Herald, nor Herald in theirs.
//
// The second form measures an idle session (target in Docs/Performance.md: ≤ 10 ms CPU in 5 s): one
// request to bring the engine and a pooled connection up, then S seconds of nothing, printing the
// process CPU time spent.
//
// `herald-async` is Herald's `async` API: N Swift tasks, each awaiting `data(for:)` and checking the response
// before its next request.
//
// `ahc-async` is AsyncHTTPClient's `async` API the same way: N Swift tasks, each awaiting `execute(_:timeout:)`
// and the body. `ahc` chains its requests with future callbacks, which run on AsyncHTTPClient's event loop, so
// one at a time it starts each request without leaving the loop's thread; `ahc-async` runs the caller's code on
// Swift's cooperative pool, off the loop, as Herald always runs a caller's code off its loop thread.
//
// `herald-observed` is Herald with the activity indicator, the logging observer (into swift-log's
// StreamLogHandler, whose lines are formatted and discarded) and the metrics observer (into swift-metrics'
// no-op backend) attached: the "with observers" rows of Docs/Performance.md. The logger's level is
// `--log-level` (default `debug`, where every task's start and end are logged; at `info`, swift-log's
// default, the logging observer writes nothing for a request that succeeds).
//
// `--cache memory|disk` gives `herald`'s session an InMemoryResponseCache or a DiskResponseCache (in a new
// temporary folder, removed at the end) and fills it with one warm-up request before the measured phase, for
// `make bench-cache` (Benchmarks/run-cache.sh); the JSON line then has `cpu_us` too, the whole process's CPU
// time over the measured phase alone.
//
// Keeps N GETs in flight (each completion starts the next) until R have completed, checks every
// response (status 200, B body bytes), and prints one JSON line:
//   {"client":…,"concurrency":N,"requests":R,"failures":F,"seconds":S}
// where S is the wall time from the first request to the last completion. CPU time and peak RSS
// are measured from outside, by the script.
//
// HTTPS (the TLS rows of Docs/Performance.md): `--cacert PATH` makes the client trust the authority in PATH, which
// issued the benchmark server's certificate (Herald: its session's security policy,
// SecurityPolicy.trustingCertificateAuthorities(pemFile:); AsyncHTTPClient: its TLS configuration's trust roots;
// URLSession: none, it refuses --cacert: FoundationNetworking on Linux trusts libcurl's default bundle alone, so
// run-transfers.sh runs it where that bundle holds the authority, in a mount namespace of its own).
// `--http-version 2` lets the client use HTTP/2 when the server offers it in the handshake (Herald: .automatic;
// AsyncHTTPClient: .automatic); `1.1`, the default, keeps it to HTTP/1.1. URLSession has no such setting: it takes
// what libcurl negotiates, so the script points it at a server that offers the version the row measures.
//
// The third form is one GET of a large body (the 1 GiB rows of Docs/Performance.md): `download-file`
// uses the client's download API and moves the file to PATH (required), `data-memory` a data task that
// collects the body in memory, `stream` the client's streamed body, whose consumer counts each chunk's bytes
// (Herald's `bytes(for:)`, AsyncHTTPClient's body sequence; URLSession on Linux has none). It checks status 200 and B bytes (the script compares the file with the
// source) and prints
//   {"client":…,"mode":…,"requests":1,"failures":0|1,"bytes":B,"seconds":S}
// where S runs from resume() to the end of the completion handler (the move included).
import Foundation
import Logging
import TransferBenchKit

let options = Options.parse()
switch options.client {
case "urlsession", "ahc", "ahc-async": execSibling("TransferBenchPeers")
case "herald", "herald-observed", "herald-async": break
default: usage()
}
guard let logLevel = Logger.Level(rawValue: options.logLevel) else { usage() }

runClient {
    if let idleSeconds = options.idleSeconds {
        guard options.client == "herald" else { usage() }
        measureHeraldIdle(url: options.url, seconds: idleSeconds)
    }
    if let mode = options.mode {
        guard options.client == "herald" else { usage() }
        switch mode {
        case .downloadFile:
            report(
                runHeraldDownload(
                    url: options.url, destination: options.destination!, expectedBytes: options.expectedBytes),
                mode: mode, options: options)
        case .dataMemory:
            report(
                runHeraldDataMemory(url: options.url, expectedBytes: options.expectedBytes), mode: mode,
                options: options)
        case .stream:
            report(
                runHeraldStream(url: options.url, expectedBytes: options.expectedBytes), mode: mode, options: options)
        }
    }
    if options.cache != "none" && options.client != "herald" { usage() }
    if options.postBytes != nil && options.client != "herald" { usage() }
    if options.client == "herald-async" {
        report(
            runHeraldAsync(
                url: options.url, concurrency: options.concurrency, requests: options.requests,
                expectedBytes: options.expectedBytes, caFile: options.caFile, httpVersion: options.httpVersion),
            options: options)
    }
    report(
        runHerald(
            url: options.url, concurrency: options.concurrency, requests: options.requests,
            expectedBytes: options.expectedBytes,
            observedLogLevel: options.client == "herald-observed" ? logLevel : nil, cache: options.cache,
            warmsUp: options.warmsUp, caFile: options.caFile, httpVersion: options.httpVersion,
            postBytes: options.postBytes),
        options: options)
}
