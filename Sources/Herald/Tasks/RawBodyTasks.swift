import Foundation

/// A data task that completes with its raw body instead of the session's serializer output: what
/// ``SessionManager/data(for:)`` runs. Listed and announced like any data task.
final class RawBodyDataTask: DataTask, @unchecked Sendable {
    // Safety: adds no stored state to DataTask.

    override var canBecomeDownload: Bool { false }

    override func completionResult(for outcome: TransferOutcome, serializer: any ResponseSerializer) -> CompletionResult
    {
        .rawBody(of: outcome, url: originalRequest.url)
    }
}

/// An upload task that completes with the raw response body: what
/// ``SessionManager/upload(for:from:progress:)`` and ``SessionManager/upload(for:fromFile:progress:)`` run.
/// Listed and announced like any upload task.
final class RawBodyUploadTask: UploadTask, @unchecked Sendable {
    // Safety: adds no stored state to UploadTask.

    override var canBecomeDownload: Bool { false }

    override func completionResult(for outcome: TransferOutcome, serializer: any ResponseSerializer) -> CompletionResult
    {
        .rawBody(of: outcome, url: originalRequest.url)
    }
}

extension CompletionResult {
    /// The body as the completion handler's object, unvalidated and unparsed, like URLSession's
    /// `data(for:)`: any status is a success. `taskDidComplete` carries it as `responseData`, with no
    /// `serializedResponse` — the serializer was not applied.
    static func rawBody(of outcome: TransferOutcome, url: URL) -> CompletionResult {
        let responseData: Data? = outcome.response == nil && outcome.body.isEmpty ? nil : outcome.body
        if let error = outcome.error {
            return CompletionResult(responseData: responseData, error: error)
        }
        guard outcome.response != nil else {
            return CompletionResult(
                responseData: responseData,
                error: HeraldError(.badServerResponse, "The transfer ended without a response.", url: url))
        }
        return CompletionResult(handlerObject: outcome.body, responseData: responseData)
    }
}
