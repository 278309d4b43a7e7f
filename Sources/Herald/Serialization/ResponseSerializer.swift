import Foundation

/// Turns a completed response and its body into a value: AFNetworking's `AFURLResponseSerialization`.
///
/// Serializers validate before they parse, in Alamofire's order: status code, then content type, then
/// the body. Every failure is a ``HeraldError`` with code ``HeraldError/Code/unacceptableStatusCode``,
/// ``HeraldError/Code/unacceptableContentType`` or ``HeraldError/Code/serializationFailed``.
public protocol ResponseSerializer: Sendable {
    /// The value a successful serialization produces.
    associatedtype Output: Sendable

    /// Validates the response and turns its body into ``Output``.
    ///
    /// Called off the loop thread, once per completed transfer that produced a response.
    ///
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The whole response body (empty when there was none).
    /// - Returns: The serialized value.
    /// - Throws: A ``HeraldError`` when the response is not acceptable or the body cannot be serialized.
    func serialize(response: HTTPResponse, data: Data) throws(HeraldError) -> Output
}

extension ResponseSerializer {
    /// ``serialize(response:data:)`` with the output type erased, for code that holds `any ResponseSerializer`.
    ///
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The whole response body.
    /// - Returns: The serialized value as `any Sendable` (an `Optional` output stays an `Optional` inside).
    /// - Throws: The same errors as ``serialize(response:data:)``.
    public func serializeErased(response: HTTPResponse, data: Data) throws(HeraldError) -> any Sendable {
        try serialize(response: response, data: data)
    }
}
