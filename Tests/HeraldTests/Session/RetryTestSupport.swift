import Foundation
import Herald
import HeraldTesting

extension RetryPolicy {
    /// A policy with short backoffs, so tests run fast whatever the jitter draws.
    static let fast = RetryPolicy(backoffScale: 0.01, maximumBackoff: 0.05)
}

extension SessionFixture {
    /// Creates a data task for `request`, resumes it and awaits, up to `timeout`, the fixture's `completions`th
    /// completion.
    func run(
        _ request: Request, completions: Int = 1, timeout: Duration = .seconds(20)
    ) async throws -> (task: DataTask, log: CompletionLog) {
        let log = CompletionLog()
        let task = try session.dataTask(with: request, completionHandler: log.handler)
        task.resume()
        try await recorder.waitForCompletions(completions, timeout: timeout)
        return (task, log)
    }
}
