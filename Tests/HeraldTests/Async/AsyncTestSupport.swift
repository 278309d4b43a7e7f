import Foundation
import Herald

/// Runs `body` in a new unstructured task and hands back its outcome, so a test can cancel the task while
/// the call is suspended and then inspect the typed error.
func startCall<Value: Sendable>(
    _ body: @escaping @Sendable () async throws(HeraldError) -> Value
) -> Task<Result<Value, HeraldError>, Never> {
    Task {
        do throws(HeraldError) {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }
}

/// Awaits a call started with ``startCall(_:)``, failing after `timeout` instead of hanging the suite.
func outcome<Value: Sendable>(
    of call: Task<Result<Value, HeraldError>, Never>, timeout: Duration = .seconds(20)
) async throws -> Result<Value, HeraldError> {
    let shot = OneShot<Result<Value, HeraldError>>()
    Task { shot.send(await call.value) }
    return try await shot.value(timeout: timeout)
}

/// Collects every element of `updates`, failing after `timeout` if the sequence has not finished.
func collect(
    _ updates: TransferProgress.Updates, timeout: Duration = .seconds(20)
) async throws -> [TransferProgress.Snapshot] {
    let shot = OneShot<[TransferProgress.Snapshot]>()
    Task {
        var all: [TransferProgress.Snapshot] = []
        for await snapshot in updates { all.append(snapshot) }
        shot.send(all)
    }
    return try await shot.value(timeout: timeout)
}
