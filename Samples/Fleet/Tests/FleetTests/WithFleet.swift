import FleetHarness
import Testing

/// Runs `body` with a started fleet, stopping it afterwards whatever happened (keeping its logs on failure).
func withFleet(_ body: (Fleet) async throws -> Void) async throws {
    let fleet = try await Fleet.start()
    do {
        try await body(fleet)
    } catch {
        await fleet.stop(keepingLogs: true)
        Issue.record("logs kept in \(fleet.directory.path)")
        throw error
    }
    await fleet.stop()
}
