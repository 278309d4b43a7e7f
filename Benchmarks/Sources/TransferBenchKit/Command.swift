import Foundation

/// TransferBench's command line, shared by the two binaries that implement it: `TransferBench` (Herald's
/// clients) and `TransferBenchPeers` (URLSession and AsyncHTTPClient).
///
///     TransferBench --client urlsession|herald|herald-observed|herald-async|ahc --url URL --concurrency N --requests R
///                   [--expect-bytes B] [--log-level LEVEL] [--cache none|memory|disk]
///                   [--cacert PATH] [--http-version 1.1|2] [--post-bytes N]
///     TransferBench --client herald --url URL --idle-seconds S
///     TransferBench --client urlsession|herald|ahc --url URL --mode download-file|data-memory --expect-bytes B
///                   [--destination PATH]
public struct Options: Sendable {
    public var client = ""
    public var url = URL(fileURLWithPath: "/")
    public var concurrency = 1
    public var requests = 20_000
    public var expectedBytes = 1024
    public var idleSeconds: Double?
    public var mode: LargeMode?
    public var destination: URL?
    /// `herald-observed`'s logger level (a swift-log level name); `debug` logs every task's start and end.
    public var logLevel = "debug"
    /// `herald`'s response cache (`none`, `memory` or `disk`): with one, a warm-up request fills it before the
    /// measured phase (`make bench-cache`).
    public var cache = "none"
    /// Whether `--cache` was given (`make bench-cache`): then every row, `none` included, makes one warm-up
    /// request before the measured phase, so that each leaves the same one-time costs out of its CPU.
    public var warmsUp = false
    /// A PEM file of the authority that issued an HTTPS server's certificate, which the client trusts (Herald
    /// through its session's security policy, AsyncHTTPClient through its TLS configuration's trust roots;
    /// URLSession has no way to and refuses it).
    public var caFile: URL?
    /// The HTTP version the client asks for: `1.1` (HTTP/1.1 only) or `2` (HTTP/2 when the server offers it
    /// in the TLS handshake, which every client here multiplexes on one connection).
    public var httpVersion = HTTPVersionChoice.http1_1
    /// With `herald`: each request is a `POST` with a body of this many bytes instead of a `GET`
    /// (`make bench-instructions ARGS="--post N"`).
    public var postBytes: Int?

    /// Parses the process's arguments; prints the usage and exits with status 2 when they don't parse.
    public static func parse() -> Options {
        var options = Options()
        var url: URL?
        var arguments = CommandLine.arguments.dropFirst()
        while let flag = arguments.popFirst() {
            guard let value = arguments.popFirst() else { usage() }
            switch flag {
            case "--client": options.client = value
            case "--url": url = URL(string: value)
            case "--concurrency": options.concurrency = Int(value) ?? 0
            case "--requests": options.requests = Int(value) ?? 0
            case "--expect-bytes": options.expectedBytes = Int(value) ?? -1
            case "--idle-seconds": options.idleSeconds = Double(value)
            case "--mode":
                guard let mode = LargeMode(rawValue: value) else { usage() }
                options.mode = mode
            case "--destination": options.destination = URL(fileURLWithPath: value)
            case "--log-level": options.logLevel = value
            case "--cache":
                guard ["none", "memory", "disk"].contains(value) else { usage() }
                options.cache = value
                options.warmsUp = true
            case "--cacert": options.caFile = URL(fileURLWithPath: value)
            case "--http-version":
                guard let version = HTTPVersionChoice(rawValue: value) else { usage() }
                options.httpVersion = version
            case "--post-bytes":
                guard let bytes = Int(value), bytes >= 0 else { usage() }
                options.postBytes = bytes
            default: usage()
            }
        }
        guard let url, options.concurrency > 0, options.requests > 0, options.expectedBytes >= 0 else { usage() }
        options.url = url
        if options.mode == .downloadFile && options.destination == nil { usage() }
        return options
    }
}

/// The HTTP version a client of the benchmark asks for.
public enum HTTPVersionChoice: String, Sendable {
    /// HTTP/1.1 only.
    case http1_1 = "1.1"
    /// HTTP/2 when the TLS handshake says the server speaks it, HTTP/1.1 otherwise.
    case http2 = "2"
}

/// Prints the usage to standard error and exits with status 2.
public func usage() -> Never {
    FileHandle.standardError.write(
        Data(
            """
            usage: TransferBench --client urlsession|herald|herald-observed|herald-async|ahc|ahc-async --url URL
                                 --concurrency N --requests R
                                 [--expect-bytes B] [--log-level trace|debug|info|notice|warning|error|critical]
                                 [--cache none|memory|disk] [--cacert PATH] [--http-version 1.1|2]
                                 [--post-bytes N]
                   TransferBench --client herald --url URL --idle-seconds S
                   TransferBench --client urlsession|herald|ahc --url URL --mode download-file|data-memory
                                 --expect-bytes B [--destination PATH]

            """.utf8))
    exit(2)
}

/// Prints a load run's JSON line and exits: status 0 when every request completed and none failed.
public func report(_ outcome: LoadOutcome, options: Options) -> Never {
    print(
        #"{"client":"\#(options.client)","concurrency":\#(options.concurrency),"requests":\#(outcome.completed),"#
            + #""failures":\#(outcome.failures),"seconds":\#(String(format: "%.6f", outcome.seconds))"#
            + (outcome.cpuMicroseconds.map { #","cpu_us":\#($0)"# } ?? "") + "}")
    exit(outcome.failures == 0 && outcome.completed == options.requests ? 0 : 1)
}

/// Prints a large transfer's JSON line (and its failure, on standard error) and exits: status 0 when it
/// succeeded.
public func report(_ outcome: LargeOutcome, mode: LargeMode, options: Options) -> Never {
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

/// Runs `client` (which ends the process) on a thread of its own while the main thread serves the main
/// queue, so a client that delivers completions on the main queue (as AFNetworking does by default)
/// works too.
///
/// `TRANSFERBENCH_NO_DISPATCH_MAIN=1` (set by Benchmarks/run-instructions.sh) runs it on the main thread
/// instead: valgrind 3.19 crashes in the main thread's exit that `dispatchMain()` makes, and none of
/// Herald, the C client or AsyncHTTPClient needs the main queue.
public func runClient(_ client: @escaping @Sendable () -> Never) -> Never {
    if ProcessInfo.processInfo.environment["TRANSFERBENCH_NO_DISPATCH_MAIN"] == "1" {
        client()
    }
    Thread.detachNewThread { client() }
    dispatchMain()
}

/// Replaces this process with the executable `name` beside this one, given the same arguments: each
/// client runs in a process that loads only its own libraries, so one client's peak RSS doesn't carry
/// another's.
public func execSibling(_ name: String) -> Never {
    let selfPath = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    let path = URL(fileURLWithPath: selfPath).deletingLastPathComponent().appendingPathComponent(name).path
    let arguments = [path] + CommandLine.arguments.dropFirst()
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
    argv.append(nil)
    execv(path, argv)
    FileHandle.standardError.write(Data("cannot run \(path): \(String(cString: strerror(errno)))\n".utf8))
    exit(2)
}
