import AsyncHTTPClient
import Foundation
import TransferBenchKit
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// AsyncHTTPClient as a Swift-on-server user sets it up: its own event loop group (NIO's singleton,
/// one loop per core), HTTP/1.1 only, and a connection pool of `connections` per host.
///
/// Over HTTPS it trusts the authority in `caFile` (its TLS configuration's trust roots, the system's otherwise);
/// with `httpVersion` `.http2` it lets the handshake choose HTTP/2 (`.automatic`), which it multiplexes on one
/// connection per host.
func makeAHCClient(connections: Int, caFile: URL? = nil, httpVersion: HTTPVersionChoice = .http1_1) -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    configuration.httpVersion = httpVersion == .http2 ? .automatic : .http1Only
    if let caFile {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(caFile.path)
        configuration.tlsConfiguration = tls
    }
    configuration.connectionPool = .init(
        idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(connections, 1))
    return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
}

/// 1 KiB GETs through AsyncHTTPClient's future-based `execute(request:)`, which collects the body.
func runAHC(
    url: URL, concurrency: Int, requests: Int, expectedBytes: Int, caFile: URL?, httpVersion: HTTPVersionChoice
) -> LoadOutcome {
    let client = makeAHCClient(connections: concurrency, caFile: caFile, httpVersion: httpVersion)
    let request: HTTPClient.Request
    do {
        request = try HTTPClient.Request(url: url.absoluteString, method: .GET)
    } catch {
        FileHandle.standardError.write(Data("bad URL \(url): \(error)\n".utf8))
        exit(2)
    }
    let generator = LoadGenerator(total: requests, concurrency: concurrency) { generator in
        client.execute(request: request).whenComplete { result in
            var failure: String?
            switch result {
            case .failure(let error):
                failure = "\(error)"
            case .success(let response):
                let count = response.body?.readableBytes ?? 0
                if response.status != .ok {
                    failure = "status \(response.status.code)"
                } else if count != expectedBytes {
                    failure = "\(count) body bytes, expected \(expectedBytes)"
                }
            }
            generator.finished(failure: failure)
        }
    }
    let outcome = generator.run()
    try? client.syncShutdown()
    return outcome
}

/// 1 KiB GETs through AsyncHTTPClient's `async` `execute(_:timeout:)`, collecting the body: `concurrency` Swift
/// tasks, each awaiting a response and then the next, the way `herald-async` awaits Herald's `data(for:)`. Where
/// `runAHC`'s future callbacks run on the event loop (so the next request starts there, without leaving the
/// loop's thread), here each response resumes a task on Swift's cooperative pool: the caller's code runs off
/// the event loop, as Herald runs it off its loop thread.
func runAHCAsync(
    url: URL, concurrency: Int, requests: Int, expectedBytes: Int, caFile: URL?, httpVersion: HTTPVersionChoice
) -> LoadOutcome {
    let client = makeAHCClient(connections: concurrency, caFile: caFile, httpVersion: httpVersion)
    let generator = LoadGenerator(total: requests, concurrency: concurrency) { _ in }
    let outcome = generator.runAsync { () async -> String? in
        do {
            let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(60))
            // One byte more than expected, so a longer body is reported rather than refused.
            let body = try await response.body.collect(upTo: expectedBytes + 1)
            if response.status != .ok { return "status \(response.status.code)" }
            if body.readableBytes != expectedBytes {
                return "\(body.readableBytes) body bytes, expected \(expectedBytes)"
            }
            return nil
        } catch {
            return "\(error)"
        }
    }
    try? client.syncShutdown()
    return outcome
}

/// One large GET through AsyncHTTPClient: `download-file` streams the body to `destination` with its
/// `FileDownloadDelegate` (writes through NIO's `NonBlockingFileIO` thread pool); `data-memory` collects
/// the body with `execute(request:)`; `stream` counts the bytes of the async `execute(_:timeout:)`'s body
/// sequence as they arrive.
func runAHCLarge(url: URL, mode: LargeMode, destination: URL?, expectedBytes: Int) -> LargeOutcome {
    let client = makeAHCClient(connections: 1)
    defer { try? client.syncShutdown() }
    let request: HTTPClient.Request
    do {
        request = try HTTPClient.Request(url: url.absoluteString, method: .GET)
    } catch {
        return LargeOutcome(failure: "bad URL \(url): \(error)")
    }
    switch mode {
    case .stream:
        return measureLarge { finish in
            Task {
                do {
                    let response = try await client.execute(
                        HTTPClientRequest(url: url.absoluteString), timeout: .hours(1))
                    var count = 0
                    for try await buffer in response.body { count += buffer.readableBytes }
                    finish(
                        LargeOutcome(
                            streamedBytes: count, status: Int(response.status.code), expectedBytes: expectedBytes))
                } catch {
                    finish(LargeOutcome(failure: "\(error)"))
                }
            }
        }
    case .dataMemory:
        return measureLarge { finish in
            client.execute(request: request).whenComplete { result in
                var outcome = LargeOutcome()
                switch result {
                case .failure(let error):
                    outcome.failure = "\(error)"
                case .success(let response):
                    outcome.bytes = response.body?.readableBytes ?? 0
                    if response.status != .ok {
                        outcome.failure = "status \(response.status.code)"
                    } else if outcome.bytes != expectedBytes {
                        outcome.failure = "\(outcome.bytes) body bytes, expected \(expectedBytes)"
                    }
                }
                finish(outcome)
            }
        }
    case .downloadFile:
        guard let destination else { return LargeOutcome(failure: "no destination") }
        removeStaleDestination(destination)
        let status = Mutex<UInt?>(nil)
        let delegate: FileDownloadDelegate
        do {
            delegate = try FileDownloadDelegate(
                path: destination.path, reportHead: { _, head in status.withLock { $0 = head.status.code } })
        } catch {
            return LargeOutcome(failure: "FileDownloadDelegate: \(error)")
        }
        return measureLarge { finish in
            client.execute(request: request, delegate: delegate).futureResult.whenComplete { result in
                var outcome: LargeOutcome
                switch result {
                case .failure(let error):
                    outcome = LargeOutcome(failure: "\(error)")
                case .success:
                    outcome = checkDownloadedFile(
                        at: destination, destination: destination, expectedBytes: expectedBytes)
                    if let code = status.withLock({ $0 }), code != 200 { outcome.failure = "status \(code)" }
                }
                finish(outcome)
            }
        }
    }
}
