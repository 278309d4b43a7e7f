import Dispatch
import Foundation

extension SessionManager {
    /// Serializes off the loop thread, runs the completion handler on the completion queue, then posts
    /// `taskDidComplete` on the event queue and forgets the task (AF's order).
    func complete(_ task: SessionTask, with outcome: TransferOutcome) {
        let serializer = responseSerializer
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            let (object, error) = Self.serialize(outcome, with: serializer, url: task.originalRequest.url)
            let responseData: Data? = outcome.response == nil && outcome.body.isEmpty ? nil : outcome.body
            completionQueue.async(group: completionGroup) { [self] in
                task.runCompletionHandler(response: outcome.response, object: object, error: error)
                hook.eventQueue.async { [self] in
                    forget(task)
                    hook.postCompletion(
                        of: task,
                        TaskCompletion(
                            taskIdentifier: task.taskIdentifier, sessionIdentifier: identifier, date: Date(),
                            responseSerializer: serializer, responseData: responseData, assetPath: nil,
                            serializedResponse: object, error: error, response: outcome.response,
                            finalURL: outcome.response?.url, metrics: outcome.metrics))
                    finishInvalidatingIfDone()
                }
            }
        }
    }

    /// The serializer's output, or the error the task completes with. A transport error wins; the
    /// serializer only sees transfers that produced a response.
    private static func serialize(
        _ outcome: TransferOutcome, with serializer: any ResponseSerializer, url: URL
    ) -> ((any Sendable)?, HeraldError?) {
        if let error = outcome.error { return (nil, error) }
        guard let response = outcome.response else {
            return (nil, HeraldError(.badServerResponse, "The transfer ended without a response.", url: url))
        }
        do throws(HeraldError) {
            return (try serializer.serializeErased(response: response, data: outcome.body), nil)
        } catch {
            return (nil, error)
        }
    }
}
