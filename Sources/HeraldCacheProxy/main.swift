// herald-cache-proxy: a loopback forwarding proxy whose every request goes through one Herald session with the
// response cache on, so that an HTTP caching test suite (the public cache-tests suite, run by
// CacheTests/run.mjs) can test Herald's cache as it tests a browser's.
//
//     herald-cache-proxy --upstream http://127.0.0.1:18400 [--port 0] [--cache-directory DIR]
//
// Listens on 127.0.0.1 only and prints its port on the first line of stdout. A request for `/path?query`
// is sent by the session to `<upstream>/path?query` with the client's method, header fields and body;
// the session neither follows redirects nor keeps cookies (the client does what a browser would do with
// them). Serves until stdin reaches end of file.
#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Herald
import NIOCore
import NIOHTTP1
import NIOPosix

/// The proxy's command line.
struct Options {
    var upstream: URL
    var port = 0
    var cacheDirectory: URL?

    static func parse(_ arguments: [String]) -> Options? {
        var remaining = arguments[...]
        var upstream: URL?
        var options = Options(upstream: URL(fileURLWithPath: "/"))
        while let argument = remaining.popFirst() {
            switch argument {
            case "--upstream":
                upstream = remaining.popFirst().flatMap { URL(string: $0) }
            case "--port":
                guard let port = remaining.popFirst().flatMap(Int.init), (0...65535).contains(port) else { return nil }
                options.port = port
            case "--cache-directory":
                guard let path = remaining.popFirst() else { return nil }
                options.cacheDirectory = URL(fileURLWithPath: path, isDirectory: true)
            default:
                return nil
            }
        }
        guard let upstream else { return nil }
        options.upstream = upstream
        return options
    }
}

/// Header fields that describe one connection or the body's framing, or authenticate with the proxy: never
/// forwarded either way.
let hopByHop: Set<String> = [
    "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host",
    "content-length", "proxy-authorization", "proxy-authenticate",
]

/// The field names `Connection` values list (RFC 9110 §7.6.1): fields of this one connection, not forwarded.
func connectionFields(_ values: [String]) -> Set<String> {
    Set(
        values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty })
}

/// Forwards one request through `session` and answers with what it completed with.
func forward(
    _ head: HTTPRequestHead, body: ByteBuffer, upstream: URL, session: SessionManager
) async -> (HTTPResponseHead, ByteBuffer) {
    guard let url = URL(string: upstream.absoluteString + head.uri) else {
        return failure(head, status: .badRequest, message: "unusable request target \(head.uri)")
    }
    var headers = Herald.HTTPHeaders()
    let requestConnectionFields = connectionFields(head.headers[canonicalForm: "connection"].map(String.init))
    for (name, value) in head.headers {
        let lowercased = name.lowercased()
        guard !hopByHop.contains(lowercased), !requestConnectionFields.contains(lowercased) else { continue }
        // curl's own Accept-Encoding is what a Herald client sends; the client's would override it.
        if lowercased == "accept-encoding" { continue }
        headers.add(name: name, value: value)
    }
    let bytes = body.readableBytes > 0 ? Data(body.readableBytesView) : nil
    // NIO spells M-SEARCH's case without its hyphen: the one method whose raw value isn't what was sent.
    let method = head.method == .MSEARCH ? "M-SEARCH" : head.method.rawValue
    let request = Request(url: url, method: method, headers: headers, body: bytes)
    do {
        let (data, response) = try await session.data(for: request)
        var fields = NIOHTTP1.HTTPHeaders()
        let responseConnectionFields = connectionFields(response.headers.values(for: "Connection"))
        for field in response.headers {
            let lowercased = field.name.lowercased()
            guard !hopByHop.contains(lowercased), !responseConnectionFields.contains(lowercased) else { continue }
            // A body Herald decoded is handed over decoded; one in a coding it can't undo, as it came.
            if lowercased == "content-encoding", response.bodyIsDecodedInMemory { continue }
            fields.add(name: field.name, value: field.value)
        }
        let bodyless =
            head.method == .HEAD || response.statusCode == 304 || response.statusCode == 204
            || response.statusCode < 200
        if !bodyless {
            fields.add(name: "Content-Length", value: String(data.count))
        } else if head.method == .HEAD, response.statusCode >= 200, response.statusCode != 204,
            !response.bodyIsDecodedInMemory, let length = response.headers["Content-Length"]
        {
            // A HEAD answer says how long the GET's body would be; without it NIO would frame the head as chunked.
            // Not for an encoded body: its length is not that of the decoded one a GET through the proxy gets.
            fields.add(name: "Content-Length", value: length)
        }
        let status = HTTPResponseStatus(statusCode: response.statusCode)
        let responseHead = HTTPResponseHead(version: head.version, status: status, headers: fields)
        return (responseHead, bodyless ? ByteBuffer() : ByteBuffer(bytes: data))
    } catch {
        return failure(head, status: .badGateway, message: "\(error)")
    }
}

/// A plain-text answer for a request the proxy could not forward.
func failure(_ head: HTTPRequestHead, status: HTTPResponseStatus, message: String) -> (HTTPResponseHead, ByteBuffer) {
    let body = ByteBuffer(string: message + "\n")
    let fields = NIOHTTP1.HTTPHeaders([
        ("Content-Type", "text/plain"), ("Content-Length", String(body.readableBytes)),
    ])
    return (HTTPResponseHead(version: head.version, status: status, headers: fields), body)
}

/// Serves one client connection: its requests one after the other, each forwarded through the session.
func serve(
    _ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, upstream: URL,
    session: SessionManager
) async {
    do {
        try await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body = ByteBuffer()
            for try await part in inbound {
                switch part {
                case .head(let requestHead):
                    head = requestHead
                    body.clear()
                case .body(var chunk):
                    body.writeBuffer(&chunk)
                case .end:
                    guard let requestHead = head else { continue }
                    let (responseHead, responseBody) = await forward(
                        requestHead, body: body, upstream: upstream, session: session)
                    try await outbound.write(.head(responseHead))
                    if responseBody.readableBytes > 0 { try await outbound.write(.body(.byteBuffer(responseBody))) }
                    try await outbound.write(.end(nil))
                }
            }
        }
    } catch {
        // The client went away: nothing to answer.
    }
}

guard let options = Options.parse(Array(CommandLine.arguments.dropFirst())) else {
    FileHandle.standardError.write(
        Data("usage: herald-cache-proxy --upstream URL [--port N] [--cache-directory DIR]\n".utf8))
    exit(64)
}

var configuration = SessionConfiguration()
configuration.followsRedirects = false
configuration.httpShouldSetCookies = false
configuration.timeoutIntervalForRequest = 30
if let directory = options.cacheDirectory {
    do {
        configuration.responseCache = try DiskResponseCache(directory: directory, capacity: 256 << 20)
    } catch {
        FileHandle.standardError.write(Data("herald-cache-proxy: \(error)\n".utf8))
        exit(1)
    }
} else {
    configuration.responseCache = InMemoryResponseCache(capacity: 256 << 20)
}
let session = SessionManager(configuration: configuration)

let server: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
do {
    server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .serverChannelOption(.backlog, value: 256)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .bind(host: "127.0.0.1", port: options.port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                    wrappingChannelSynchronously: channel)
            }
        }
} catch {
    // A port in use, say: said plainly, not a trap.
    FileHandle.standardError.write(
        Data("herald-cache-proxy: cannot listen on 127.0.0.1:\(options.port): \(error)\n".utf8))
    exit(1)
}
FileHandle.standardOutput.write(Data("\(server.channel.localAddress?.port ?? 0)\n".utf8))

let upstream = options.upstream
// Serve until stdin closes (the driver ends the proxy by closing it, or by exiting).
Thread.detachNewThread {
    while FileHandle.standardInput.availableData.count > 0 {}
    exit(0)
}
do {
    try await server.executeThenClose { connections in
        try await withThrowingDiscardingTaskGroup { group in
            for try await connection in connections {
                group.addTask { await serve(connection, upstream: upstream, session: session) }
            }
        }
    }
} catch {
    FileHandle.standardError.write(Data("herald-cache-proxy: the listening socket failed: \(error)\n".utf8))
    exit(1)
}
