import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("A request on a kept-alive connection the server reset is sent once more on a fresh one")
struct FreshConnectionRetryTests {
    @Test("a same-origin redirect whose hop meets a reset connection completes: one task, one resume, one complete")
    func redirectHopRetried() async throws {
        let server = try StaleKeepAliveServer()
        defer { server.stop() }
        let center = NotificationHub()
        let recorder = RecordingObserver(center: center)
        let session = SessionManager(notificationCenter: center)
        let (data, response) = try await session.data(for: Request(url: server.url("/redirect")))
        try await recorder.waitForCompletions(1)
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "ok:/final")
        let task = try #require(recorder.completions.first?.taskIdentifier)
        let kinds = recorder.timeline(ofTask: task)
        #expect(kinds.filter { $0 == .resume }.count == 1 && kinds.filter { $0 == .complete }.count == 1)
        // /redirect and /final on the first connection (the server reset it on /final), /final on a second.
        #expect(server.requestLines == ["GET /redirect", "GET /final", "GET /final"])
        #expect(server.connectionCount == 2)
        await session.invalidateAndWait()
    }

    @Test("a GET on a reused connection that is reset is sent again once; the next request of the session too")
    func secondRequestRetried() async throws {
        let server = try StaleKeepAliveServer()
        defer { server.stop() }
        let session = SessionManager(notificationCenter: NotificationHub())
        _ = try await session.data(for: Request(url: server.url("/one")))
        let (data, _) = try await session.data(for: Request(url: server.url("/two")))
        #expect(String(decoding: data, as: UTF8.self) == "ok:/two")
        #expect(server.requestLines == ["GET /one", "GET /two", "GET /two"])
        await session.invalidateAndWait()
    }

}

/// A loopback HTTP/1.1 server that answers the first request on each connection and keeps the connection
/// open, then resets it (RST) when the next request arrives on it: a server whose keep-alive timeout ran out
/// just as that request went out. `/redirect` answers `302` to `/final`; any other path `ok:<path>`.
final class StaleKeepAliveServer: Sendable {
    let port: Int
    private let listener: Int32
    private let state = Locked<(lines: [String], connections: Int)>(([], 0))

    var requestLines: [String] { state.withLock { $0.lines } }
    var connectionCount: Int { state.withLock { $0.connections } }

    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)") ?? URL(fileURLWithPath: "/")
    }

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 8) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else { throw HeraldError(.internal, "the test server could not listen on 127.0.0.1") }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptConnections() }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptConnections() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            state.withLock { $0.connections += 1 }
            Thread.detachNewThread { [self] in serve(connection) }
        }
    }

    private func serve(_ connection: Int32) {
        var pending: [UInt8] = []
        var answered = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            guard let end = pending.firstRange(of: Array("\r\n\r\n".utf8)) else {
                let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                pending += buffer[0..<count]
                continue
            }
            let head = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
            pending.removeSubrange(..<end.upperBound)
            let requestLine = head.split(separator: "\r\n").first.map(String.init) ?? ""
            let parts = requestLine.split(separator: " ")
            state.withLock { $0.lines.append(parts.prefix(2).joined(separator: " ")) }
            guard answered == 0 else {
                // SO_LINGER with a zero timeout: close sends RST, not FIN.
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                break
            }
            answered += 1
            let path = parts.count > 1 ? String(parts[1]) : "/"
            let response =
                path == "/redirect"
                ? "HTTP/1.1 302 Found\r\nLocation: /final\r\nContent-Length: 0\r\n\r\n"
                : "HTTP/1.1 200 OK\r\nContent-Length: \(3 + path.utf8.count)\r\n\r\nok:\(path)"
            _ = response.withCString { send(connection, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
        close(connection)
    }
}
