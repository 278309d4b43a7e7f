import Foundation

/// Combines adapters and retriers, or wraps closures: Alamofire's `Interceptor`.
///
/// Adapters run in order, each on the previous one's result; the first that throws stops the chain.
/// Retriers are asked in order until one decides to retry; if none does, the task is not retried.
public struct Interceptor: RequestInterceptor {
    /// The adapters, in the order they run.
    public let adapters: [any RequestAdapter]
    /// The retriers, in the order they are asked.
    public let retriers: [any RequestRetrier]

    /// Creates an interceptor from adapters and retriers.
    /// - Parameters:
    ///   - adapters: Run in order on each attempt's request.
    ///   - retriers: Asked in order about each failed attempt.
    public init(adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = []) {
        self.adapters = adapters
        self.retriers = retriers
    }

    /// Creates an interceptor from closures.
    /// - Parameters:
    ///   - adapt: Returns the request to send for an attempt (see ``RequestAdapter/adapt(_:for:)``).
    ///   - retry: Decides about a failed attempt (see ``RequestRetrier/retry(_:)``); `nil` never retries.
    public init(
        adapt: @escaping @Sendable (Request, SessionTask) async throws -> Request,
        retry: (@Sendable (RetryContext) async -> RetryDecision)? = nil
    ) {
        self.adapters = [ClosureAdapter(body: adapt)]
        self.retriers = retry.map { [ClosureRetrier(body: $0)] } ?? []
    }

    /// Creates an interceptor that sends requests unchanged and decides about failed attempts with a closure.
    /// - Parameter retry: Decides about a failed attempt (see ``RequestRetrier/retry(_:)``).
    public init(retry: @escaping @Sendable (RetryContext) async -> RetryDecision) {
        self.adapters = []
        self.retriers = [ClosureRetrier(body: retry)]
    }

    /// Runs every adapter in order.
    /// - Parameters:
    ///   - request: The request to adapt.
    ///   - task: The task about to send it.
    /// - Returns: The last adapter's result.
    /// - Throws: The first adapter error.
    public func adapt(_ request: Request, for task: SessionTask) async throws -> Request {
        var adapted = request
        for adapter in adapters { adapted = try await adapter.adapt(adapted, for: task) }
        return adapted
    }

    /// Asks the retriers in order; returns the first decision that is not ``RetryDecision/doNotRetry``.
    /// - Parameter context: The failed attempt.
    /// - Returns: The decision.
    public func retry(_ context: RetryContext) async -> RetryDecision {
        for retrier in retriers {
            let decision = await retrier.retry(context)
            if decision != .doNotRetry { return decision }
        }
        return .doNotRetry
    }
}

private struct ClosureAdapter: RequestAdapter {
    let body: @Sendable (Request, SessionTask) async throws -> Request

    func adapt(_ request: Request, for task: SessionTask) async throws -> Request {
        try await body(request, task)
    }
}

private struct ClosureRetrier: RequestRetrier {
    let body: @Sendable (RetryContext) async -> RetryDecision

    func retry(_ context: RetryContext) async -> RetryDecision { await body(context) }
}
