import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The blocking socket calls of the test servers written by hand (a server no real one can be made to imitate
/// on cue): a listener on 127.0.0.1, and reading and writing a connection whole.
enum BlockingSocket {
    /// A socket listening on 127.0.0.1, on a port the kernel picked, and that port.
    static func listenOnLoopback() throws -> (descriptor: Int32, port: Int) {
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
            let failure = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            close(descriptor)
            throw failure
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Writes all of `bytes`; `false` when the connection ends first.
    static func send(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Reads until `input` holds at least `count` bytes; `false` when the connection ends first.
    static func fill(_ connection: Int32, _ input: inout [UInt8], to count: Int) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while input.count < count {
            let received = chunk.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            guard received > 0 else { return false }
            input += chunk[..<received]
        }
        return true
    }

    /// Reads until `input` holds `marker`; the offset just past it, or `nil` when the connection ends first.
    /// Accepts connections on `listener` and hands each to `handle`, until the listener is shut down; a connection
    /// reset before it was accepted, or a signal, doesn't end the loop. Then closes the listener, after `ended`.
    static func acceptEach(on listener: Int32, _ handle: (Int32) -> Void, ended: () -> Void) {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == ECONNABORTED || errno == EINTR { continue }
                break
            }
            handle(connection)
        }
        ended()
        close(listener)
    }

    static func readUntil(_ connection: Int32, _ input: inout [UInt8], containing marker: [UInt8]) -> Int? {
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
