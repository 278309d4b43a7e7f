import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The scripted h2c server")
struct ShuttingDownH2CServerTests {
    @Test("stop() ends the connections it still holds, not a socket that took a closed connection's number since")
    func stopLeavesReusedDescriptors() async throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        var reused: Int32 = -1
        defer { ([reused] + pair).filter { $0 >= 0 }.forEach { close($0) } }
        let server = try ShuttingDownH2CServer()
        do {
            defer { server.stop() }
            let client = try #require(Self.connectedSocket(port: server.port))
            defer { close(client) }
            // Its answer to a request head (the switch to HTTP/2) says the server has accepted the connection.
            let head = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
            #expect(send(client, head, head.utf8.count, 0) == head.utf8.count)
            let answered = await Self.onThread { Self.receive(client) > 0 }
            #expect(answered)
            let number = try #require(
                Self.descriptor(localPort: server.port, peerPort: Self.port(of: client, peer: false)))
            // The client ends its side: the server's thread reads the end and closes its socket, whose FIN the
            // client reads once the number is free.
            #expect(shutdown(client, Int32(SHUT_WR)) == 0)
            let ended = await Self.onThread {
                while true {
                    let received = Self.receive(client)
                    if received <= 0 { return received == 0 }
                }
            }
            #expect(ended)
            // A socket of the test's own takes the number, as another test's connection would in a parallel
            // run (unless one of the process's threads took it first: then this check can't tell).
            reused = fcntl(pair[0], F_DUPFD, number)
            #expect(reused >= 0)
            if reused != number { print("stopLeavesReusedDescriptors: another thread took \(number) first, unchecked") }
        }
        // Open and empty, each end has nothing to read yet; a socket shut down reads its end (0) at once.
        for descriptor in pair {
            var byte: UInt8 = 0
            let received = recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT))
            #expect(received == -1 && (errno == EAGAIN || errno == EWOULDBLOCK), "socket \(descriptor) was shut down")
        }
    }

    /// Runs `body`, a blocking read bounded by the socket's receive timeout, on a thread of its own rather than
    /// on one of the few cooperative threads.
    private static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in Thread { continuation.resume(returning: body()) }.start() }
    }

    /// One blocking `recv` on `descriptor`: the byte count, 0 at the end, -1 on an error or the timeout.
    private static func receive(_ descriptor: Int32) -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        return buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// A blocking socket connected to `127.0.0.1:port` whose reads give up after 20 seconds, or `nil`.
    private static func connectedSocket(port: Int) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0
                    && connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// The IPv4 port of `descriptor`'s local end, or of its peer's; -1 if it has none.
    private static func port(of descriptor: Int32, peer: Bool) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let found = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                (peer ? getpeername(descriptor, $0, &length) : getsockname(descriptor, $0, &length)) == 0
            }
        }
        return found && address.sin_family == sa_family_t(AF_INET) ? Int(UInt16(bigEndian: address.sin_port)) : -1
    }

    /// The process's socket whose local port is `localPort` and whose peer's is `peerPort`: the server's end of
    /// a loopback connection.
    private static func descriptor(localPort: Int, peerPort: Int) -> Int32? {
        (0..<Int32(min(getdtablesize(), 1 << 16))).first {
            port(of: $0, peer: false) == localPort && port(of: $0, peer: true) == peerPort
        }
    }
}
