import Foundation
import HeraldNotifications

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback server that speaks just enough cleartext HTTP/2 to shut a kept connection down as a request
/// arrives on it: each connection starts as HTTP/1.1 with `Upgrade: h2c`, its first request (and its body, of a
/// `Content-Length`) is processed and answered with an empty `200` on stream 1, and every later stream gets a
/// GOAWAY naming stream 1 the last one processed, with the connection left open. No real server can be made to
/// do that on cue (nginx does it on an idle timeout, a race with the next request).
///
/// With `namingTheNewStreamLast`, the GOAWAY names the new stream itself the last one (the server may have
/// processed it), and the server then ends its side of the connection without answering it. With
/// `streamsBeforeGoaway` N, the GOAWAY waits until N new streams are open on the connection (requests started
/// together), and names stream 1 the last for all of them.
///
/// The frames are written by hand (RFC 9113 §4.1): each connection runs on a thread of its own, blocking.
final class ShuttingDownH2CServer: Sendable {
    /// The port it listens on, on 127.0.0.1.
    let port: Int
    private let listener: Int32
    private let namingTheNewStreamLast: Bool
    private let streamsBeforeGoaway: Int
    private let state = Locked(State())

    /// A request the server processed: the one each connection's upgrade came with.
    struct ProcessedRequest: Sendable, Equatable {
        let method: String
        let path: String
        let body: Data
    }

    /// What the threads share. The descriptors are closed under the lock and ``stop()`` shuts down only those
    /// still here, under it too: a number closed before may be another socket of the test process by then
    /// (another test's connection), which a shutdown would end.
    private struct State {
        var accepted = 0
        var goaways = 0
        /// The connections accepted whose threads have not closed them yet.
        var open: Set<Int32> = []
        var isStopped = false
        var isListenerClosed = false
        /// The requests processed so far, in order.
        var processed: [ProcessedRequest] = []
    }

    /// Connections accepted so far.
    var acceptedConnections: Int { state.withLock { $0.accepted } }
    /// GOAWAY frames sent so far.
    var goawaysSent: Int { state.withLock { $0.goaways } }
    /// The requests processed so far, in order.
    var processedRequests: [ProcessedRequest] { state.withLock { $0.processed } }

    init(namingTheNewStreamLast: Bool = false, streamsBeforeGoaway: Int = 1) throws {
        self.namingTheNewStreamLast = namingTheNewStreamLast
        self.streamsBeforeGoaway = streamsBeforeGoaway
        (listener, port) = try BlockingSocket.listenOnLoopback()
        Thread { [self] in acceptConnections() }.start()
    }

    /// Stops accepting and ends every connection still open.
    func stop() {
        state.withLock { state in
            state.isStopped = true
            if !state.isListenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
            for connection in state.open { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptConnections() {
        // Until stop() shuts the listener down.
        BlockingSocket.acceptEach(on: listener) { connection in
            let isStopped = state.withLock { state in
                state.accepted += 1
                if !state.isStopped { state.open.insert(connection) }
                return state.isStopped
            }
            if isStopped {
                close(connection)
                return
            }
            Thread { [self] in serve(connection) }.start()
        } ended: {
            state.withLock { $0.isListenerClosed = true }
        }
    }

    private func serve(_ connection: Int32) {
        defer {
            state.withLock { state in
                state.open.remove(connection)
                close(connection)
            }
        }
        var input: [UInt8] = []
        // The HTTP/1.1 request asking for the upgrade, then the switch, the server's SETTINGS and stream 1's
        // answer: `:status 200` (HPACK's static entry 8), END_STREAM and END_HEADERS.
        guard let headEnd = BlockingSocket.readUntil(connection, &input, containing: Array("\r\n\r\n".utf8)) else {
            return
        }
        let head = String(decoding: input[..<headEnd], as: UTF8.self)
        input.removeFirst(headEnd)
        let lines = head.split(separator: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        let length =
            lines.dropFirst().compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
        guard requestLine.count == 3, length >= 0, BlockingSocket.fill(connection, &input, to: length) else { return }
        let processed = ProcessedRequest(
            method: String(requestLine[0]), path: String(requestLine[1]), body: Data(input[..<length]))
        input.removeFirst(length)
        state.withLock { $0.processed.append(processed) }
        let switching = Array("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n".utf8)
        guard
            BlockingSocket.send(
                connection, switching + frame(type: 4) + frame(type: 1, flags: 0x5, stream: 1, payload: [0x88]))
        else { return }
        // The client's preface, then its frames.
        let preface = 24
        guard BlockingSocket.fill(connection, &input, to: preface) else { return }
        input.removeFirst(preface)
        var newStreams = 0
        while BlockingSocket.fill(connection, &input, to: 9) {
            let length = Int(input[0]) << 16 | Int(input[1]) << 8 | Int(input[2])
            guard BlockingSocket.fill(connection, &input, to: 9 + length) else { return }
            let type = input[3]
            let flags = input[4]
            let stream =
                (UInt32(input[5]) << 24 | UInt32(input[6]) << 16 | UInt32(input[7]) << 8 | UInt32(input[8]))
                & 0x7FFF_FFFF
            let payload = Array(input[9..<(9 + length)])
            input.removeFirst(9 + length)
            switch type {
            case 4 where flags & 0x1 == 0:  // SETTINGS: acknowledged.
                guard BlockingSocket.send(connection, frame(type: 4, flags: 0x1)) else { return }
            case 6 where flags & 0x1 == 0:  // PING: answered.
                guard BlockingSocket.send(connection, frame(type: 6, flags: 0x1, payload: payload)) else { return }
            case 1 where stream > 1:  // A new request: the connection is going away, stream 1 was the last
                // (or, with namingTheNewStreamLast, this one); once streamsBeforeGoaway are open.
                newStreams += 1
                guard newStreams == streamsBeforeGoaway else { break }
                state.withLock { $0.goaways += 1 }
                let last = namingTheNewStreamLast ? stream : 1
                let payload =
                    [UInt8(last >> 24 & 0x7F), UInt8(last >> 16 & 0xFF), UInt8(last >> 8 & 0xFF)]
                    + [UInt8(last & 0xFF), 0, 0, 0, 0]
                guard BlockingSocket.send(connection, frame(type: 7, payload: payload)) else { return }
                // The client reads the GOAWAY, then the end of the connection; what it still sends is read.
                if namingTheNewStreamLast { shutdown(connection, Int32(SHUT_WR)) }
            default:
                break
            }
        }
    }

    private func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, payload: [UInt8] = []) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
            + [UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
            + payload
    }
}
