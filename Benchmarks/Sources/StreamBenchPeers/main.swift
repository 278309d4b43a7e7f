// StreamBenchPeers: StreamBench's peers, in a binary that links no Herald client — AsyncHTTPClient's streamed
// response body against StreamBench's server (`--url`), and mattt/EventSource's parser alone (MatttParser.swift:
// its 1.1.1 package does not build on Linux, so its parser is copied there to be measured).
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import StreamBenchKit

let options = StreamOptions.parse()
guard let base = options.url else { usage() }

var configuration = HTTPClient.Configuration()
configuration.httpVersion = .http1Only
let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
let url = base.appendingPathComponent("bytes/\(options.bodyBytes)").absoluteString

_ = await measure("ahc streamed body \(options.mebibytes) MiB", unit: "MiB/s", runs: options.runs) {
    do {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(300))
        var count = 0
        for try await buffer in response.body { count += buffer.readableBytes }
        guard count == options.bodyBytes else {
            print("streamed \(count) bytes, expected \(options.bodyBytes)")
            return nil
        }
        return Double(count) / Double(1 << 20)
    } catch {
        print("AsyncHTTPClient failed: \(error)")
        return nil
    }
}
try await client.shutdown().get()

// Its parser takes one byte per actor call (about 200 events of 1 KiB a second here): a hundredth of the
// events keeps the run short; the rate is per event.
let parsedEvents = max(1, options.events / 100)
let stream = eventStreamBytes(events: parsedEvents, dataSize: options.eventSize)
_ = await measure("mattt/EventSource parser alone", unit: "events/s", runs: options.runs) {
    let parser = MatttParser()
    var count = 0
    for byte in stream {
        await parser.consume(byte)
        while await parser.getNextEvent() != nil { count += 1 }
    }
    guard count == parsedEvents else {
        print("parsed \(count) events, expected \(parsedEvents)")
        return nil
    }
    return Double(count)
}
