import Foundation

/// Validates the response and decodes the JSON body into a `Decodable` type.
///
/// Validation and empty-body rules are those of ``JSONResponseSerializer``. An absent body (204/205 or
/// whitespace only) is decoded as JSON `null`, so an `Optional` output type yields `nil` and a type whose
/// `init(from:)` accepts `null` can stand for "no content"; any other type fails with
/// ``HeraldError/Code/serializationFailed``.
///
/// A `JSONValue` (or `JSONValue?`) output is parsed as ``JSONResponseSerializer`` parses, not by `decoder`, and a
/// `JSONValue` inside your own type takes its value from the body parsed that way, found by its coding path,
/// in time linear in the body (see ``JSONValue/maximumDecodingDepth`` for why). A `decoder` that converts keys,
/// reads JSON5 or is a subclass decodes such values itself, down to ``JSONValue/maximumDecodingDepth`` levels.
public struct DecodableResponseSerializer<T: Decodable & Sendable>: ResponseSerializer {
    /// The status and content-type rules applied before decoding. Default: ``ResponseValidation/json``.
    public var validation: ResponseValidation
    /// The decoder used for the body; configure its date, key and data strategies as the API needs.
    public var decoder: JSONDecoder

    /// Creates a decodable serializer.
    ///
    /// - Parameters:
    ///   - type: The type to decode; lets the generic parameter be inferred at the call site.
    ///   - decoder: The decoder to use. Default: a `JSONDecoder` with default strategies.
    ///   - validation: The acceptance rules. Default: status `200..<300` and JSON content types.
    public init(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder(), validation: ResponseValidation = .json) {
        self.decoder = decoder
        self.validation = validation
    }

    /// Validates the response and decodes the body.
    ///
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The response body.
    /// - Returns: The decoded value.
    /// - Throws: ``HeraldError/Code/unacceptableStatusCode``, ``HeraldError/Code/unacceptableContentType``,
    ///   or ``HeraldError/Code/serializationFailed`` with the `DecodingError` as ``HeraldError/underlying`` (for
    ///   a `JSONValue`, parsed as ``JSONResponseSerializer`` parses, the parser's error).
    public func serialize(response: HTTPResponse, data: Data) throws(HeraldError) -> T {
        let isEmpty = JSONBody.isEmpty(response: response, data: data)
        try validation.validate(response, data: data, hasBody: !isEmpty)
        if isEmpty {
            do {
                return try decoder.decode(T.self, from: Data("null".utf8))
            } catch {
                throw HeraldError(
                    .serializationFailed,
                    "the response has no body to decode into \(T.self)",
                    underlying: error,
                    url: response.url,
                    response: response,
                    responseBody: data
                )
            }
        }
        if T.self == JSONValue.self || T.self == JSONValue?.self, !decoder.allowsJSON5,
            type(of: decoder) == JSONDecoder.self
        {
            // Herald's parser, linear in the body. `JSONDecoder` finds a `JSONValue`'s kind by trying each in
            // turn, and each miss costs it the square of the depth: a crafted body would take minutes.
            let value = try JSONBody.parse(data, response: response)
            // A JSON `null` for an optional output is `nil`, as `JSONDecoder` decodes it (below, at no cost for
            // four bytes), not `JSONValue.null` wrapped in an optional.
            if case .null = value, T.self == JSONValue?.self {
            } else if let value = value as? T {
                return value
            }
        }
        return try JSONBody.decode(T.self, from: data, with: decoder, response: response)
    }
}
