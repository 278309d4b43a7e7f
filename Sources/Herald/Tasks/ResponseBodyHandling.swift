import Foundation
import HeraldEngine

/// What a data or upload task does with its response body, given to the task when it is made: the one
/// thing in which the tasks of ``SessionManager/data(for:)``, ``SessionManager/bytes(for:bufferPolicy:)`` or
/// ``SessionManager/events(for:options:)`` differ from the tasks of the closure factories.
///
/// It is part of the task, not a class of its own, so that every task a session makes is an instance of the
/// class ``SessionManager/taskClasses`` names, whatever the factory: a subclass sees every `resume()` and
/// `suspend()` of every task.
enum ResponseBodyHandling: Sendable {
    /// Collected in memory and turned into the completion's object by the session's
    /// ``SessionManager/responseSerializer``: the closure factories and the verbs.
    case serialized
    /// Collected in memory and handed over as it came, unvalidated: any status is a success, as for
    /// URLSession's `data(for:)`. `taskDidComplete` carries it as `responseData`, with no `serializedResponse`.
    case raw
    /// Handed to a consumer as it arrives, through a bounded buffer, never collected.
    case streamed(ResponseBodyBuffer)

    /// Whether ``ResponseDisposition/becomeDownload`` is honoured: only for a serialized body, whose
    /// completion is the caller's to interpret; the others promise the body in memory or to a consumer.
    var canBecomeDownload: Bool {
        if case .serialized = self { return true }
        return false
    }

    /// Whether the response cache may serve and store the body: not a streamed one, which is never collected.
    var allowsResponseCache: Bool {
        if case .streamed = self { return false }
        return true
    }

    /// The buffer a streamed body goes to; `nil` for a collected one.
    var streamBuffer: ResponseBodyBuffer? {
        if case .streamed(let buffer) = self { return buffer }
        return nil
    }

    /// What the completion handler and `taskDidComplete` carry for `outcome`.
    func completionResult(
        for outcome: TaskOutcome, serializer: any ResponseSerializer, url: URL
    ) -> CompletionResult {
        switch self {
        case .serialized:
            let (object, error) = CompletionResult.serialize(outcome, with: serializer, url: url)
            return CompletionResult(
                handlerObject: object, serializedResponse: object, responseData: Self.responseData(of: outcome),
                assetPath: nil, error: error)
        case .raw:
            let responseData = Self.responseData(of: outcome)
            if let error = outcome.error { return CompletionResult(responseData: responseData, error: error) }
            guard outcome.response != nil else {
                return CompletionResult(responseData: responseData, error: Self.noResponse(url))
            }
            return CompletionResult(handlerObject: outcome.body, responseData: responseData)
        case .streamed:
            // No body object: the consumer had the bytes. Any status is a success, as for a raw body.
            if let error = outcome.error { return CompletionResult(error: error) }
            guard outcome.response != nil else { return CompletionResult(error: Self.noResponse(url)) }
            return CompletionResult()
        }
    }

    /// The body for `responseData`: `nil` when neither a response nor a byte arrived.
    private static func responseData(of outcome: TaskOutcome) -> Data? {
        outcome.response == nil && outcome.body.isEmpty ? nil : outcome.body
    }

    private static func noResponse(_ url: URL) -> HeraldError {
        HeraldError(.badServerResponse, "The transfer ended without a response.", url: url)
    }
}
