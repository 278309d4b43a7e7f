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
        (listener, port) = try BlockingSocket.listenOnLoopback()
        Thread { [self] in acceptConnections() }.start()
    }

    /// Stops accepting connections.
    func stop() {
        state.withLock { state in
            if !state.isListenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptConnections() {
        BlockingSocket.acceptEach(on: listener) { connection in
            Thread { [self] in serve(connection) }.start()
        } ended: {
            state.withLock { $0.isListenerClosed = true }
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var input: [UInt8] = []
        for answer in 0..<2 {
            guard let headEnd = BlockingSocket.readUntil(connection, &input, containing: Array("\r\n\r\n".utf8)) else {
                return
            }
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
                let refusal = "HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n"
                guard BlockingSocket.send(connection, Array(refusal.utf8)) else { return }
                continue
            }
            if expectsContinue, !BlockingSocket.send(connection, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) { return }
            let length = value(of: "content-length").flatMap { Int($0) } ?? 0
            guard length >= 0, BlockingSocket.fill(connection, &input, to: length) else { return }
            let body = Array(input[..<length])
            input.removeFirst(length)
            let answerHead = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(length)\r\n\r\n"
            guard BlockingSocket.send(connection, Array(answerHead.utf8) + body) else { return }
        }
    }
}
