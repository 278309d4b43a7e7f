import Foundation

/// Puts parameters into a request: AF's `AFURLRequestSerialization`.
///
/// ``HTTPSessionManager`` calls its ``HTTPSessionManager/requestSerializer`` for every request it builds.
/// A serializer runs before the task exists, so a parameter it can't encode is a thrown ``HeraldError``
/// (``HeraldError/Code/invalidRequest``) and nothing is sent.
public protocol RequestSerializer: Sendable {
    /// Returns `request` with `parameters` encoded into its URL or its body.
    ///
    /// - Parameters:
    ///   - request: The request to complete; its method decides where the parameters go.
    ///   - parameters: The parameters; `nil` leaves the request as it is.
    /// - Returns: The request to send.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest`` for parameters that can't be encoded.
    func serialize(_ request: Request, parameters: JSONValue?) throws(HeraldError) -> Request
}

/// Parameters as a query string for `GET`, `HEAD` and `DELETE`, and as an
/// `application/x-www-form-urlencoded` body for the other methods: AF's `AFHTTPRequestSerializer`.
///
/// Both use ``FormURLEncoding`` (AF's escaping, sorted keys, `a[b]=c` and `a[]=1` for nested containers).
/// A query is appended to the URL's own with `&`, or after `?`. A body replaces `request.body`, with
/// `Content-Type: application/x-www-form-urlencoded` unless the request sets its own.
///
/// Without parameters (`nil`), a method that would carry them in its body (`POST`, `PUT`, `PATCH`…) is
/// still sent as AF sends it: an empty form body and `Content-Type: application/x-www-form-urlencoded`
/// (an empty string is a valid form payload). A request that has a body of its own keeps it untouched, and
/// ``sendsEmptyFormWithoutParameters`` set to `false` leaves every request without parameters as it is.
public struct FormRequestSerializer: RequestSerializer {
    /// The methods whose parameters go into the URL's query by default, AF's
    /// `HTTPMethodsEncodingParametersInURI`: `GET`, `HEAD` and `DELETE`.
    public static let defaultMethodsEncodingParametersInURI: Set<String> = ["GET", "HEAD", "DELETE"]

    /// The methods whose parameters go into the query; default `GET`, `HEAD` and `DELETE`. Matched ignoring
    /// case, as the request's method is.
    public var methodsEncodingParametersInURI: Set<String>

    /// Whether `method`'s parameters go into the query: it is one of `methods`, ignoring case.
    static func encodesInURI(_ method: String, methods: Set<String>) -> Bool {
        let method = method.uppercased()
        return methods.contains(method) || methods.contains { $0.uppercased() == method }
    }

    /// Whether a request without parameters, of a method not in ``methodsEncodingParametersInURI`` and
    /// without a body of its own, is sent with an empty form body and
    /// `Content-Type: application/x-www-form-urlencoded`, as AF's `AFHTTPRequestSerializer` sends it;
    /// default `true`. `false` leaves such a request without a body or `Content-Type`.
    public var sendsEmptyFormWithoutParameters: Bool

    /// Creates the serializer.
    ///
    /// - Parameters:
    ///   - methodsEncodingParametersInURI: The methods whose parameters go into the query.
    ///   - sendsEmptyFormWithoutParameters: Whether a request without parameters gets an empty form body, as
    ///     in AF; default `true`.
    public init(
        methodsEncodingParametersInURI: Set<String> = FormRequestSerializer.defaultMethodsEncodingParametersInURI,
        sendsEmptyFormWithoutParameters: Bool = true
    ) {
        self.methodsEncodingParametersInURI = methodsEncodingParametersInURI
        self.sendsEmptyFormWithoutParameters = sendsEmptyFormWithoutParameters
    }

    /// Encodes `parameters` (an object, or `nil`) into the query or the body, as described above.
    ///
    /// - Parameters:
    ///   - request: The request to complete.
    ///   - parameters: A JSON object of names and values, or `nil` (an empty form body for a method that
    ///     carries its parameters in the body, see ``sendsEmptyFormWithoutParameters``).
    /// - Returns: The request with its query or body set.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest`` when `parameters` is not an object or
    ///   holds a number that is not finite.
    public func serialize(_ request: Request, parameters: JSONValue?) throws(HeraldError) -> Request {
        guard let parameters else {
            guard sendsEmptyFormWithoutParameters, request.body == nil,
                !Self.encodesInURI(request.method, methods: methodsEncodingParametersInURI)
            else { return request }
            var request = request
            request.setBody(Data(), contentType: "application/x-www-form-urlencoded")
            return request
        }
        let query = try FormURLEncoding.query(from: parameters)
        var request = request
        if Self.encodesInURI(request.method, methods: methodsEncodingParametersInURI) {
            request.url = try Self.appending(query: query, to: request.url)
        } else {
            request.setBody(Data(query.utf8), contentType: "application/x-www-form-urlencoded")
        }
        return request
    }

    /// `url` with `query` appended to its own query (after `&`) or as its query (after `?`); an empty
    /// query changes nothing. The fragment, if any, stays last.
    static func appending(query: String, to url: URL) throws(HeraldError) -> URL {
        guard !query.isEmpty else { return url }
        var text = url.absoluteString
        var fragment = ""
        if let hash = text.firstIndex(of: "#") {
            fragment = String(text[hash...])
            text = String(text[..<hash])
        }
        // `?` with nothing after it is an empty query: the pairs follow it directly.
        text += (text.hasSuffix("?") ? "" : text.contains("?") ? "&" : "?") + query + fragment
        guard let result = URL(string: text) else {
            throw HeraldError(.badURL, "Appending the query to \(url.absoluteString) gave no valid URL.", url: url)
        }
        return result
    }
}

/// Parameters as a JSON body, `Content-Type: application/json`: AF's `AFJSONRequestSerializer`.
///
/// `GET`, `HEAD` and `DELETE` put their parameters in the query instead, as AF does (see
/// ``FormRequestSerializer``). Keys are written sorted, so the same parameters give the same bytes. A number
/// that is not finite has no JSON form: it throws ``HeraldError/Code/invalidRequest``, naming where it is.
public struct JSONRequestSerializer: RequestSerializer {
    /// The methods whose parameters go into the query; default `GET`, `HEAD` and `DELETE`.
    public var methodsEncodingParametersInURI: Set<String>

    /// Creates the serializer.
    ///
    /// - Parameter methodsEncodingParametersInURI: The methods whose parameters go into the query.
    public init(
        methodsEncodingParametersInURI: Set<String> = FormRequestSerializer.defaultMethodsEncodingParametersInURI
    ) {
        self.methodsEncodingParametersInURI = methodsEncodingParametersInURI
    }

    /// Encodes `parameters` as the JSON body, or into the query for the methods listed.
    ///
    /// - Parameters:
    ///   - request: The request to complete.
    ///   - parameters: Any JSON value, or `nil`.
    /// - Returns: The request with its body (and `Content-Type`) or query set.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest`` for a number that is not finite, or
    ///   a query that is not an object.
    public func serialize(_ request: Request, parameters: JSONValue?) throws(HeraldError) -> Request {
        guard let parameters else { return request }
        if FormRequestSerializer.encodesInURI(request.method, methods: methodsEncodingParametersInURI) {
            return try FormRequestSerializer(methodsEncodingParametersInURI: methodsEncodingParametersInURI)
                .serialize(request, parameters: parameters)
        }
        try Self.checkFinite(parameters, path: "$")
        return try serialize(request, encodable: parameters)
    }

    /// Encodes an `Encodable` value as the JSON body, whatever the method.
    ///
    /// - Parameters:
    ///   - request: The request to complete.
    ///   - value: The value to encode.
    ///   - encoder: The encoder; default one writing sorted keys without escaping slashes.
    /// - Returns: The request with the JSON body and `Content-Type: application/json` (unless it sets its own).
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest`` when the encoder refuses the value
    ///   (a non-finite `Double`, for one), with the encoder's error as ``HeraldError/underlying``.
    public func serialize(_ request: Request, encodable value: some Encodable, encoder: JSONEncoder? = nil)
        throws(HeraldError) -> Request
    {
        let encoder = encoder ?? Self.makeEncoder()
        let body: Data
        do {
            body = try encoder.encode(value)
        } catch {
            // Bounded: an encoder's error can hold the whole value, a body's secrets included.
            let reason = String(describing: error)
            throw HeraldError(
                .invalidRequest,
                "The JSON body could not be encoded: \(reason.count > 200 ? reason.prefix(200) + "…" : reason)",
                underlying: error)
        }
        var request = request
        request.setBody(body, contentType: "application/json")
        return request
    }

    static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// Throws for the first NaN or infinity, naming its path (`$.a[2].b`).
    private static func checkFinite(_ value: JSONValue, path: String) throws(HeraldError) {
        switch value {
        case .number(let number) where !number.isFinite:
            throw HeraldError(
                .invalidRequest, "The JSON parameter at \(path) is \(number), which JSON can't represent.")
        case .array(let elements):
            for (index, element) in elements.enumerated() { try checkFinite(element, path: "\(path)[\(index)]") }
        case .object(let members):
            for (key, member) in members { try checkFinite(member, path: "\(path).\(key)") }
        default:
            break
        }
    }
}

extension Request {
    /// Sets `body`, and `Content-Type: contentType` unless the request sets its own.
    fileprivate mutating func setBody(_ body: Data, contentType: String) {
        self.body = body
        if !headers.contains("Content-Type") {
            headers.add(name: "Content-Type", value: contentType)
        }
    }
}
