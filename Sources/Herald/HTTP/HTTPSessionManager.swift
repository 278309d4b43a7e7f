import Foundation
import HeraldNotifications

/// Requests by method and path, with parameters, against a base URL: Herald's `AFHTTPSessionManager`.
///
/// Built on a ``SessionManager``, which runs every task: the tasks it makes are the session's tasks, with
/// their notifications, hooks, completion queue and response serializer, and anything the session applies
/// to its requests applies to these too.
///
/// Paths resolve against ``baseURL`` as in AFNetworking: a base URL with a path gets a trailing `/` if it
/// has none, then a path resolves as a relative URL reference (RFC 3986). With `http://example.com/v1`:
///
/// | Path | URL |
/// |---|---|
/// | `foo` | `http://example.com/v1/foo` |
/// | `foo?bar=baz` | `http://example.com/v1/foo?bar=baz` |
/// | `/foo` | `http://example.com/foo` |
/// | `foo/` | `http://example.com/v1/foo/` |
/// | `/foo/` | `http://example.com/foo/` |
/// | `http://example2.com/` | `http://example2.com/` |
/// | `//example2.com/foo` | `http://example2.com/foo` (a network-path reference: another host) |
/// | `api:run` | `api:run` (a scheme: an absolute URL, refused when the task is made) |
///
/// Resolution is RFC 3986's, so two cases catch people out. A base URL's query is kept only for the path `""`:
/// `http://example.com/v1?key=K` and `foo` give `http://example.com/v1/foo`, without the key (send such a key
/// as a header, ``SessionConfiguration/httpAdditionalHeaders``, or as a parameter). And a path built by joining
/// strings that starts with `//` (`"/" + id` when `id` starts with `/`) names another host, which the session's
/// additional headers then go to: build paths from components you control, or percent-encode what you put in
/// them.
///
/// Parameters are encoded by ``requestSerializer`` (default ``FormRequestSerializer``): into the query for
/// `GET`, `HEAD` and `DELETE`, into the body otherwise.
public final class HTTPSessionManager: Sendable {
    /// The session that runs the tasks.
    public let session: SessionManager
    /// The URL paths resolve against, with the trailing `/` added when its path lacked one; `nil` when paths
    /// must be absolute URLs.
    public let baseURL: URL?
    private let serializer: Locked<any RequestSerializer>

    /// Creates a manager.
    ///
    /// - Parameters:
    ///   - baseURL: The URL paths resolve against; default none.
    ///   - session: The session that runs the tasks; default a new one with the default configuration.
    ///   - requestSerializer: How parameters are encoded; default ``FormRequestSerializer``.
    public init(
        baseURL: URL? = nil, session: SessionManager = SessionManager(),
        requestSerializer: any RequestSerializer = FormRequestSerializer()
    ) {
        self.baseURL = baseURL.map(Self.normalized)
        self.session = session
        self.serializer = Locked(requestSerializer)
    }

    /// How parameters are put into requests; read when each request is built, so a change applies to
    /// requests made afterwards.
    public var requestSerializer: any RequestSerializer {
        get { serializer.withLock { $0 } }
        set { serializer.withLock { $0 = newValue } }
    }

    /// A base URL with a non-empty path that does not end in `/` gets one, so that relative paths resolve
    /// below it (AF's `initWithBaseURL:`).
    static func normalized(_ url: URL) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            !components.percentEncodedPath.isEmpty, !components.percentEncodedPath.hasSuffix("/")
        else { return url }
        components.percentEncodedPath += "/"
        return components.url ?? url
    }

    /// The absolute URL `path` names: resolved against ``baseURL`` as in the table above, or taken as it is
    /// without a base URL.
    ///
    /// - Parameter path: A relative reference (`"users/1"`, `"/health"`, `"?page=2"`, `""` for the base URL
    ///   itself) or an absolute URL.
    /// - Returns: The absolute URL.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/badURL`` when `path` is not a URL reference, or is
    ///   relative without a base URL.
    public func url(for path: String) throws(HeraldError) -> URL {
        if path.isEmpty, let baseURL { return baseURL }
        guard let url = URL(string: path, relativeTo: baseURL)?.absoluteURL, url.scheme != nil else {
            throw HeraldError(
                .badURL,
                baseURL == nil
                    ? "'\(path)' is not an absolute URL, and the manager has no base URL."
                    : "'\(path)' is not a URL reference that resolves against \(baseURL?.absoluteString ?? "").")
        }
        return url
    }

    /// Builds the request for `method` and `path` with `parameters` encoded by ``requestSerializer``: AF's
    /// `requestWithMethod:URLString:parameters:error:`.
    ///
    /// - Parameters:
    ///   - method: The HTTP method, such as `"GET"`.
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: The parameters; default none.
    ///   - headers: Header fields of this request; default none.
    /// - Returns: The request.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/badURL`` for a path that does not resolve,
    ///   ``HeraldError/Code/invalidRequest`` for parameters the serializer can't encode.
    public func request(
        _ method: String, _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:]
    ) throws(HeraldError) -> Request {
        let request = Request(url: try url(for: path), method: method, headers: headers)
        return try requestSerializer.serialize(request, parameters: parameters)
    }

    /// Builds the request for `method` and `path` with `value` as its JSON body, whatever the
    /// ``requestSerializer`` (see ``JSONRequestSerializer/serialize(_:encodable:encoder:)``).
    ///
    /// - Parameters:
    ///   - method: The HTTP method, such as `"POST"`.
    ///   - path: Resolved with ``url(for:)``.
    ///   - value: Encoded with `JSONEncoder`, keys sorted.
    ///   - headers: Header fields of this request; default none.
    /// - Returns: The request.
    /// - Throws: ``HeraldError``: ``HeraldError/Code/badURL`` for a path that does not resolve,
    ///   ``HeraldError/Code/invalidRequest`` when the value can't be encoded.
    public func request(
        _ method: String, _ path: String, json value: some Encodable, headers: HTTPHeaders = [:]
    ) throws(HeraldError) -> Request {
        let request = Request(url: try url(for: path), method: method, headers: headers)
        return try JSONRequestSerializer().serialize(request, encodable: value)
    }

    /// Builds a `multipart/form-data` request: `parameters` (an object) become form fields first, as in AF's
    /// `multipartFormRequestWithMethod:URLString:parameters:constructingBodyWithBlock:error:`, then `build`
    /// appends the rest.
    ///
    /// Each parameter becomes one field per value, named as ``FormURLEncoding`` names them (`a[b]`, `a[]`),
    /// in the same sorted order; `null` values are left out.
    ///
    /// - Parameters:
    ///   - parameters: Fields to add before `build` runs; default none.
    ///   - build: Appends parts; runs once, now, on the calling thread.
    /// - Returns: The form.
    /// - Throws: ``HeraldError`` from a parameter that can't be written or from `build`; an error of
    ///   another type thrown by `build` becomes ``HeraldError/Code/invalidRequest`` with it as
    ///   ``HeraldError/underlying``.
    public func multipartFormData(
        parameters: JSONValue? = nil, _ build: (inout MultipartFormData) throws -> Void
    ) throws(HeraldError) -> MultipartFormData {
        var form = MultipartFormData()
        for (name, value) in try FormURLEncoding.fields(from: parameters) {
            try form.append(Data(value.utf8), name: name)
        }
        do {
            try build(&form)
        } catch let error as HeraldError {
            throw error
        } catch {
            throw HeraldError(.invalidRequest, "Building the multipart form failed: \(error)", underlying: error)
        }
        return form
    }

    /// Creates a suspended data task for `method` and `path`: AF's
    /// `dataTaskWithHTTPMethod:URLString:parameters:headers:uploadProgress:downloadProgress:success:failure:`.
    ///
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded by ``requestSerializer``; default none.
    ///   - headers: Header fields of this request, over the session's; default none.
    ///   - uploadProgress: Called with the body's progress on the session's completion queue, coalesced.
    ///   - downloadProgress: Called with the response's progress, the same way.
    ///   - completionHandler: Called exactly once on the session's completion queue with the response, the
    ///     session's serializer output and the error, before `taskDidComplete` is posted.
    /// - Returns: The task, suspended; call ``SessionTask/resume()`` to start it.
    /// - Throws: ``HeraldError`` from building the request (see ``request(_:_:parameters:headers:)``) or
    ///   creating the task (``HeraldError/Code/sessionInvalidated``, a validation error).
    public func dataTask(
        _ method: String, _ path: String, parameters: JSONValue? = nil, headers: HTTPHeaders = [:],
        uploadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        downloadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        completionHandler: @escaping TaskCompletionHandler
    ) throws(HeraldError) -> DataTask {
        try session.dataTask(
            with: try request(method, path, parameters: parameters, headers: headers),
            uploadProgress: uploadProgress, downloadProgress: downloadProgress, completionHandler: completionHandler)
    }
}
