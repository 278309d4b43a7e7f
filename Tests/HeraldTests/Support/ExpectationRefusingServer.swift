import Foundation
import HeraldNotifications

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback server that refuses a request's `Expect: 100-continue` with `417 Expectation Failed` and keeps the
/// connection open, as servers that don't take expectations do: libcurl then sends the request again on the same
/// connection, whose answer (`200` and the body it received) the server sends on the same connection too.
/// SwiftNIO's decoder can't be made to do that: it takes the request the client sends again for the body of the
/// one refused. Each connection runs on a thread of its own, blocking; it serves two requests, then closes.
final class ExpectationRefusingServer: Sendable {
    /// The port it listens on, on 127.0.0.1.
    let port: Int
    private let listener: Int32
    private let state = Locked(State())

    private struct State {
        var requestLines: [String] = []
        var isListenerClosed = false
    }

    /// The request line of every request received, in order.
    var requestLines: [String] { state.withLock { $0.requestLines } }

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && listen(descriptor, 8) == 0
                    && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptConnections() }.start()
    }

    /// Stops accepting connections.
    func stop() {
        state.withLock { state in
            if !state.isListenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptConnections() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == ECONNABORTED || errno == EINTR { continue }
                break
            }
            Thread { [self] in serve(connection) }.start()
        }
        state.withLock { state in
            state.isListenerClosed = true
            close(listener)
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var input: [UInt8] = []
        for answer in 0..<2 {
            guard let headEnd = readUntil(connection, &input, containing: Array("\r\n\r\n".utf8)) else { return }
            let head = String(decoding: input[..<headEnd], as: UTF8.self)
            input.removeFirst(headEnd)
            let lines = head.split(separator: "\r\n")
            state.withLock { $0.requestLines.append(lines.first.map(String.init) ?? "") }
            func value(of name: String) -> String? {
                lines.dropFirst().lazy.compactMap { line -> String? in
                    let parts = line.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2, parts[0].lowercased() == name else { return nil }
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }.first
            }
            let expectsContinue = value(of: "expect")?.lowercased() == "100-continue"
            if answer == 0, expectsContinue {
                // Refused before any body byte: the client sends none, and the connection stays open.
                guard write(connection, "HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n") else { return }
                continue
            }
            if expectsContinue, !write(connection, "HTTP/1.1 100 Continue\r\n\r\n") { return }
            let length = value(of: "content-length").flatMap { Int($0) } ?? 0
            guard length >= 0, fill(connection, &input, to: length) else { return }
            let body = Array(input[..<length])
            input.removeFirst(length)
            let answerHead = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(length)\r\n\r\n"
            guard write(connection, answerHead), write(connection, body) else { return }
        }
    }

    private func write(_ connection: Int32, _ text: String) -> Bool { write(connection, Array(text.utf8)) }

    private func write(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// Reads until `input` holds `count` bytes; `false` when the connection ends first.
    private func fill(_ connection: Int32, _ input: inout [UInt8], to count: Int) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while input.count < count {
            let received = chunk.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            guard received > 0 else { return false }
            input += chunk[..<received]
        }
        return true
    }

    /// Reads until `input` holds `marker`; the offset just past it, or `nil` when the connection ends first.
    private func readUntil(_ connection: Int32, _ input: inout [UInt8], containing marker: [UInt8]) -> Int? {
        while true {
            if input.count >= marker.count {
                for start in 0...(input.count - marker.count)
                where input[start..<(start + marker.count)].elementsEqual(marker) {
                    return start + marker.count
                }
            }
            guard fill(connection, &input, to: input.count + 1) else { return nil }
        }
    }
}
