import Foundation

/// Validates the response and decodes the body as text in the response's charset.
public struct StringResponseSerializer: ResponseSerializer {
    /// The status and content-type rules applied before decoding.
    public var validation: ResponseValidation
    /// The encoding to use regardless of the response's `charset`, or `nil` to follow the response.
    public var encoding: String.Encoding?
    /// The encoding used when the response names no charset or one Herald does not know. Default: UTF-8.
    public var defaultEncoding: String.Encoding

    /// Creates a string serializer.
    ///
    /// - Parameters:
    ///   - validation: The acceptance rules. Default: status `200..<300`, any content type.
    ///   - encoding: An encoding that overrides the response's `charset`. Default: `nil` (follow the response).
    ///   - defaultEncoding: The encoding when the response names none, or names one Herald does not know.
    ///     Default: UTF-8.
    public init(
        validation: ResponseValidation = .default,
        encoding: String.Encoding? = nil,
        defaultEncoding: String.Encoding = .utf8
    ) {
        self.validation = validation
        self.encoding = encoding
        self.defaultEncoding = defaultEncoding
    }

    /// Validates the response and decodes the body.
    ///
    /// A leading byte-order mark is honoured for UTF-16 and UTF-32 and dropped for UTF-8. An empty body
    /// decodes to `""`.
    ///
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The response body.
    /// - Returns: The decoded text.
    /// - Throws: ``HeraldError/Code/unacceptableStatusCode``, ``HeraldError/Code/unacceptableContentType``,
    ///   or ``HeraldError/Code/serializationFailed`` when the bytes are not valid in the encoding.
    public func serialize(response: HTTPResponse, data: Data) throws(HeraldError) -> String {
        try validation.validate(response, data: data)
        if data.isEmpty { return "" }
        let charset = response.textEncodingName
        let resolved = encoding ?? charset.flatMap(String.Encoding.init(ianaCharsetName:)) ?? defaultEncoding
        var body = data
        if resolved == .utf8, body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        guard let string = String(data: body, encoding: resolved) else {
            throw HeraldError(
                .serializationFailed,
                "the body is not valid \(resolved.ianaName)" + (charset.map { " (charset \"\($0)\")" } ?? ""),
                url: response.url,
                response: response,
                responseBody: data
            )
        }
        return string
    }
}
