/// Why the fleet could not be started, queried or stopped.
public struct FleetError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, for a person.
    public let description: String

    /// Creates an error.
    /// - Parameter description: What went wrong.
    public init(_ description: String) {
        self.description = description
    }
}

/// Runs `operation`, failing with ``FleetError`` if it takes longer than `seconds`.
func withDeadline<T: Sendable>(
    seconds: Double, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw FleetError("\(what): no answer within \(seconds) s")
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw FleetError("\(what): nothing ran") }
        return first
    }
}
