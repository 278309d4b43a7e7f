import Foundation

/// Validates the response and parses the body as JSON: AFNetworking's `AFJSONResponseSerializer`, the
/// session default.
///
/// Empty-body rules: a `204 No Content` or `205 Reset Content` response, or a body that is empty or only
/// whitespace (such as the answer to a `HEAD`), serializes to `nil` instead of failing.
public struct JSONResponseSerializer: ResponseSerializer {
    /// The status and content-type rules applied before parsing. Default: ``ResponseValidation/json``.
    public var validation: ResponseValidation
    /// Whether object members whose value is `null` are removed, recursively. Default: `false`.
    public var removesKeysWithNullValues: Bool

    /// Creates a JSON serializer.
    ///
    /// - Parameters:
    ///   - validation: The acceptance rules. Default: status `200..<300` and JSON content types.
    ///   - removesKeysWithNullValues: Whether to drop object members whose value is `null`. Default: `false`.
    public init(validation: ResponseValidation = .json, removesKeysWithNullValues: Bool = false) {
        self.validation = validation
        self.removesKeysWithNullValues = removesKeysWithNullValues
    }

    /// Validates the response and parses the body.
    ///
    /// The body must be UTF-8 (RFC 8259 §8.1; a leading byte-order mark is skipped). Top-level scalars
    /// (`"text"`, `42`, `true`, `null`) are accepted, as RFC 8259 allows. A repeated member name keeps its
    /// last value. Two member names that differ only in Unicode normalization (`"\u00e9"` and `"e\u0301"`, one
    /// key to a Swift dictionary) are rejected, as one would otherwise be lost. A `\u` escape of an unpaired
    /// surrogate is rejected, as `JSONDecoder` rejects it. Nesting deeper than 512 levels is rejected rather
    /// than risking the stack.
    ///
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The response body.
    /// - Returns: The parsed value, or `nil` under the empty-body rules.
    /// - Throws: ``HeraldError/Code/unacceptableStatusCode``, ``HeraldError/Code/unacceptableContentType``,
    ///   or ``HeraldError/Code/serializationFailed`` with a ``JSONParseError`` as ``HeraldError/underlying``.
    public func serialize(response: HTTPResponse, data: Data) throws(HeraldError) -> JSONValue? {
        let isEmpty = JSONBody.isEmpty(response: response, data: data)
        try validation.validate(response, data: data, hasBody: !isEmpty)
        if isEmpty { return nil }
        let value = try JSONBody.parse(data, response: response)
        return removesKeysWithNullValues ? value.removingKeysWithNullValues() : value
    }
}

/// The empty-body rules and parsing shared by ``JSONResponseSerializer`` and ``DecodableResponseSerializer``.
enum JSONBody {
    /// Whether the body counts as absent: status 204/205 (whatever was sent), or nothing but whitespace.
    static func isEmpty(response: HTTPResponse, data: Data) -> Bool {
        if response.statusCode == 204 || response.statusCode == 205 { return true }
        // JSON's insignificant whitespace: space, tab, LF, CR, after the byte-order mark the parser skips too.
        // AFNetworking treats a lone " " as empty too.
        let body = data.starts(with: [0xEF, 0xBB, 0xBF]) ? data.dropFirst(3) : data[...]
        return body.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
    }

    /// Parses `data` with `JSONParser`, turning a failure into ``HeraldError/Code/serializationFailed``.
    static func parse(_ data: Data, response: HTTPResponse) throws(HeraldError) -> JSONValue {
        do {
            return try JSONParser.parse(data)
        } catch {
            throw HeraldError(
                .serializationFailed,
                "the body is not valid JSON: \(error)",
                underlying: error,
                url: response.url,
                response: response,
                responseBody: data
            )
        }
    }

    /// Decodes `type` from `data`, turning any failure into ``HeraldError/Code/serializationFailed``.
    static func decode<T: Decodable>(
        _ type: T.Type,
        from data: Data,
        with decoder: JSONDecoder,
        response: HTTPResponse
    ) throws(HeraldError) -> T {
        do {
            let reading = JSONValueSource.decoder(like: decoder, reading: data)
            guard reading !== decoder else { return try decoder.decode(type, from: data) }
            return try reading.decode(JSONValueSource.Root<T>.self, from: data).value
        } catch {
            throw HeraldError(
                .serializationFailed,
                "the body could not be decoded as JSON into \(T.self): \(summary(of: error))",
                underlying: error,
                url: response.url,
                response: response,
                responseBody: data
            )
        }
    }

    /// A one-line, bounded explanation of a decoding error (the full error stays in `underlying`).
    private static func summary(of error: any Error) -> String {
        let text: String
        switch error as? DecodingError {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            text = (path.isEmpty ? "" : "at \(path): ") + context.debugDescription
        case .none:
            text = String(describing: error)
        @unknown default:
            text = String(describing: error)
        }
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}
