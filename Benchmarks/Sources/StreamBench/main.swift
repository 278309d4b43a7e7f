// StreamBench: streamed response bodies and server-sent events (`make bench-streaming`).
//
// Against HeraldTesting's loopback server, in this process: a `--mib` MiB body (default 256) streamed with
// `bytes(for:)` (the consumer counts the bytes) and collected with `data(for:)`; `--events` server-sent events
// (default 100,000) of `--event-size` bytes of data (default 1 KiB) through `events(for:)`; and Herald's parser
// alone on the same stream in memory, 64 KiB at a time. Then it runs StreamBenchPeers (AsyncHTTPClient's
// streamed body against the same server, and mattt/EventSource's parser alone), which links no Herald client.
// Each row is the fastest of `--runs` runs (default 3). Rows are JSON lines; Docs/Performance.md has the table.
import Foundation
import Herald
import HeraldTesting
import StreamBenchKit

let options = StreamOptions.parse()
let server = try await TestServer.start()
let session = SessionManager()

_ = await measure("herald bytes(for:) \(options.mebibytes) MiB", unit: "MiB/s", runs: options.runs) {
    do {
        let (_, body) = try await session.bytes(for: Request(url: server.url("/bytes/\(options.bodyBytes)")))
        var count = 0
        for try await chunk in body { count += chunk.count }
        guard count == options.bodyBytes else {
            print("streamed \(count) bytes, expected \(options.bodyBytes)")
            return nil
        }
        return Double(count) / Double(1 << 20)
    } catch {
        print("bytes(for:) failed: \(error)")
        return nil
    }
}

_ = await measure("herald data(for:) \(options.mebibytes) MiB", unit: "MiB/s", runs: options.runs) {
    do {
        let (data, _) = try await session.data(for: Request(url: server.url("/bytes/\(options.bodyBytes)")))
        guard data.count == options.bodyBytes else {
            print("collected \(data.count) bytes, expected \(options.bodyBytes)")
            return nil
        }
        return Double(data.count) / Double(1 << 20)
    } catch {
        print("data(for:) failed: \(error)")
        return nil
    }
}

_ = await measure("herald events(for:) \(options.eventSize) B events", unit: "events/s", runs: options.runs) {
    let events = session.events(
        for: Request(url: server.url("/events/\(options.events)?size=\(options.eventSize)&retry=1")))
    var count = 0
    do {
        for try await event in events {
            count += 1
            if event.id == String(options.events) { break }
        }
    } catch {
        print("events(for:) failed after \(count) events: \(error)")
        return nil
    }
    guard count == options.events else {
        print("received \(count) events, expected \(options.events)")
        return nil
    }
    return Double(count)
}

let stream = eventStreamBytes(events: options.events, dataSize: options.eventSize)
_ = await measure("herald ServerSentEventParser alone", unit: "events/s", runs: options.runs) {
    var parser = ServerSentEventParser()
    var count = 0
    var offset = 0
    while offset < stream.count {
        let end = min(offset + 65536, stream.count)
        count += parser.parse(stream[offset..<end]).count
        offset = end
    }
    guard count == options.events else {
        print("parsed \(count) events, expected \(options.events)")
        return nil
    }
    return Double(count)
}

// The peers, in a binary of their own, against the same server.
let peers = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("StreamBenchPeers")
let process = Process()
process.executableURL = peers
process.arguments = [
    "--mib", String(options.mebibytes), "--events", String(options.events), "--event-size",
    String(options.eventSize), "--runs", String(options.runs), "--url", server.url("/").absoluteString,
]
do {
    try process.run()
    process.waitUntilExit()
} catch {
    print("could not run \(peers.path) (build it with `swift build -c release --product StreamBenchPeers`): \(error)")
}
session.invalidate(cancelingTasks: true)
try await server.shutdown()
