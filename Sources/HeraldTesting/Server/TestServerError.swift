/// An error thrown by ``TestServer``.
public struct TestServerError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case timedOut(Duration)
        case shutDown
    }

    private let code: Code

    /// A wait such as ``TestServer/waitUntil(timeout:_:)`` gave up before its condition held.
    public static func timedOut(after timeout: Duration) -> TestServerError {
        TestServerError(code: .timedOut(timeout))
    }

    /// The server was shut down before the operation could finish.
    public static let shutDown = TestServerError(code: .shutDown)

    /// Whether this error is a timeout, whatever its duration.
    public var isTimeout: Bool {
        if case .timedOut = code { return true }
        return false
    }

    /// A short description of the error.
    public var description: String {
        switch code {
        case .timedOut(let timeout): "TestServer wait timed out after \(timeout)"
        case .shutDown: "TestServer was shut down"
        }
    }
}
