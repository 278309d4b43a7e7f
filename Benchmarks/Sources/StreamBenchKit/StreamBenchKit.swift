import Foundation

// What StreamBench and StreamBenchPeers share: the command line, the event-stream bytes the parsers are fed,
// the timing and the output.

/// StreamBench's options: `--mib N` (the streamed body, default 256), `--events N` (default 100000),
/// `--event-size B` (each event's data, default 1024), `--runs K` (each row's best of K, default 3),
/// `--url URL` (the test server, given to the peers' binary by StreamBench).
public struct StreamOptions: Sendable {
    public var mebibytes = 256
    public var events = 100_000
    public var eventSize = 1024
    public var runs = 3
    public var url: URL?

    public init() {}

    public static func parse(_ arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> StreamOptions {
        var options = StreamOptions()
        var index = 0
        func value() -> String {
            index += 1
            guard index < arguments.count else { usage() }
            return arguments[index]
        }
        func number() -> Int {
            guard let number = Int(value()) else { usage() }
            return number
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--mib": options.mebibytes = number()
            case "--events": options.events = number()
            case "--event-size": options.eventSize = number()
            case "--runs": options.runs = number()
            case "--url":
                guard let url = URL(string: value()) else { usage() }
                options.url = url
            default: usage()
            }
            index += 1
        }
        guard options.mebibytes > 0, options.events > 0, options.eventSize > 0, options.runs > 0 else { usage() }
        return options
    }

    public var bodyBytes: Int { mebibytes << 20 }
}

public func usage() -> Never {
    FileHandle.standardError.write(
        Data("usage: StreamBench [--mib N] [--events N] [--event-size B] [--runs K]\n".utf8))
    exit(2)
}

/// The event stream `/events/{n}?size=B` serves, made in memory: `id: i`, `event: tick`, `data: i xxx…`.
public func eventStreamBytes(events: Int, dataSize: Int) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(events * (dataSize + 40))
    for number in 1...events {
        bytes.append(contentsOf: "id: \(number)\nevent: tick\ndata: \(number) ".utf8)
        let padding = max(0, dataSize - "\(number) ".utf8.count)
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: padding))
        bytes.append(contentsOf: "\n\n".utf8)
    }
    return bytes
}

/// One measured row.
public struct Row: Sendable {
    public var name: String
    public var seconds: Double
    public var cpuSeconds: Double
    public var amount: Double
    public var unit: String

    public init(name: String, seconds: Double, cpuSeconds: Double, amount: Double, unit: String) {
        self.name = name
        self.seconds = seconds
        self.cpuSeconds = cpuSeconds
        self.amount = amount
        self.unit = unit
    }

    public var rate: Double { amount / seconds }

    /// The row as one JSON line.
    public var json: String {
        String(
            format: "{\"name\":\"%@\",\"seconds\":%.4f,\"cpuSeconds\":%.4f,\"rate\":%.1f,\"unit\":\"%@\"}", name,
            seconds, cpuSeconds, rate, unit)
    }
}

/// The process's user + system CPU time so far, in seconds.
public func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Runs `body` `runs` times and keeps the fastest run (the least disturbed on a shared machine); `body`
/// returns how much it moved (bytes or events), or `nil` after printing why it failed.
public func measure(
    _ name: String, unit: String, runs: Int, _ body: () async -> Double?
) async -> Row? {
    var best: Row?
    for _ in 0..<runs {
        let cpuBefore = cpuSeconds()
        let start = ContinuousClock.now
        guard let amount = await body() else { return nil }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let row = Row(name: name, seconds: seconds, cpuSeconds: cpuSeconds() - cpuBefore, amount: amount, unit: unit)
        if best == nil || row.seconds < best!.seconds { best = row }
    }
    if let best {
        // Written at once, in order with the other binary's rows, whose output shares the terminal or pipe.
        FileHandle.standardOutput.write(Data((best.json + "\n").utf8))
    }
    return best
}
