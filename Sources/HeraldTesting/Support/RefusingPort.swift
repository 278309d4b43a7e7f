import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback port that refuses connections until ``close()``: a socket bound to it that never listens. A
/// connection there is refused at once, and, the port being taken, no server another test starts meanwhile can
/// be given it — as it can be the port of a server just shut down, which then answers the "refused" request.
///
/// ```swift
/// let refusing = try RefusingPort()
/// defer { refusing.close() }
/// await #expect(throws: HeraldError.self) { try await session.data(for: Request(url: refusing.url("/json"))) }
/// ```
public struct RefusingPort: Sendable {
    /// The port, on 127.0.0.1.
    public let port: Int
    private let descriptor: Int32

    /// Takes a free loopback port and holds it, refusing.
    /// - Throws: `POSIXError` when no socket can be made or bound.
    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            Glibc.close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:port` and `path`.
    /// - Parameter path: The path, from its `/`, with a query if any.
    /// - Returns: The URL.
    public func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)") ?? URL(fileURLWithPath: "/")
    }

    /// Lets the port go.
    public func close() {
        Glibc.close(descriptor)
    }
}
