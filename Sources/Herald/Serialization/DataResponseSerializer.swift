import Foundation

/// Validates the response and passes the body through unchanged: AFNetworking's `AFHTTPResponseSerializer`.
public struct DataResponseSerializer: ResponseSerializer {
    /// The status and content-type rules applied before the body is returned.
    public var validation: ResponseValidation

    /// Creates a data serializer.
    ///
    /// - Parameter validation: The acceptance rules. Default: status `200..<300`, any content type.
    public init(validation: ResponseValidation = .default) {
        self.validation = validation
    }

    /// Validates the response and returns the body.
    ///
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The response body.
    /// - Returns: `data`, unchanged (empty when there was no body).
    /// - Throws: ``HeraldError/Code/unacceptableStatusCode`` or ``HeraldError/Code/unacceptableContentType``.
    public func serialize(response: HTTPResponse, data: Data) throws(HeraldError) -> Data {
        try validation.validate(response, data: data)
        return data
    }
}
