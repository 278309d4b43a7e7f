import Foundation

/// The one error type Herald throws and reports: a bounded ``Code``, a message, and where it came from.
///
/// Match on ``code`` rather than on the message, which is for people:
///
/// ```swift
/// do { … } catch let error as HeraldError where error.code == .timedOut { … }
/// do { … } catch HeraldError.Code.cannotConnect { … }   // pattern match through `~=`
/// ```
///
/// `HeraldError` is deliberately not `Equatable`: two errors with the same code can carry different
/// messages, URLs and underlying errors, and `underlying` cannot be compared. Compare ``code`` instead.
public struct HeraldError: Error, Sendable {
    /// What went wrong, as a small extensible set suitable for `switch`-like matching and metric labels.
    public var code: Code { storage.code }
    /// A human-readable explanation. Not stable: don't parse it, match ``code``.
    public var message: String { storage.message }
    /// The error that caused this one, such as a `DecodingError` for ``Code/serializationFailed``.
    public var underlying: (any Error & Sendable)? { storage.underlying }
    /// The raw `CURLcode` when the failure was reported by libcurl.
    public var curlCode: Int32? { storage.curlCode }
    /// libcurl's own description of the failure (`CURLOPT_ERRORBUFFER`, or `curl_easy_strerror` when that is empty).
    public var curlMessage: String? { storage.curlMessage }
    /// The request URL, with any `user:password` replaced by `***`. Its query is kept whole, a pre-signed URL's
    /// signature included: log ``description``, which leaves out those values, rather than the URL itself.
    public var url: URL? { storage.url }
    /// The HTTP status code: for ``Code/unacceptableStatusCode``, and whenever ``response`` is set.
    public var statusCode: Int? { storage.statusCode }
    /// A file Herald kept on disk instead of deleting, yours to move or delete: for
    /// ``Code/downloadMoveFailed``, the temporary file holding the whole download (the same as
    /// ``DownloadMoveFailure/sourceURL``); `nil` for other errors.
    public var keptFileURL: URL? { storage.keptFileURL }
    /// The response head the failure came with — status, header fields, final URL — for a failure after a
    /// response arrived (``Code/unacceptableStatusCode``, ``Code/unacceptableContentType``,
    /// ``Code/serializationFailed``); `nil` when none had arrived.
    public var response: HTTPResponse? { storage.response }
    /// The response body the failure came with, such as an API's JSON error document: its first
    /// ``maximumKeptBodyLength`` bytes; `nil` when there was no response or no body was kept.
    public var responseBody: Data? { storage.responseBody }
    /// The transfer's metrics, when the failure came from a task that reached the network.
    public var metrics: TransferMetrics? { storage.metrics }
    /// For a download that failed part-way and can be continued (a lost connection, a timeout, a transient
    /// status such as `503` after its retries), the resume data that continues it — the same as the task's
    /// ``DownloadTask/resumeDataAfterFailure``, here for the `async` forms, which never hand out their task.
    /// Pass it to ``SessionManager/download(resumingWith:to:progress:)``; until then the partial file it
    /// names is kept. `nil` for other errors.
    public var resumeData: Data? { storage.resumeData }
    /// For ``Code/serverCertificateUntrusted``, why the certificate was not trusted (expired, an unknown
    /// issuer, another host name, revoked…), when the TLS library said; `nil` for other errors.
    public var serverCertificateProblem: ServerCertificateProblem? { storage.serverCertificateProblem }

    /// The most bytes of a response body an error keeps (``responseBody``): 1 MiB, enough for any error
    /// document, bounded so that a failed large download does not hold its body twice.
    public static let maximumKeptBodyLength = 1 << 20

    /// The values, in one immutable object: an error, or the absence of one, is copied several times on
    /// its way from a transfer to a completion handler. Held inline, the `URL`s (whose layout Foundation
    /// keeps to itself) made each copy of a `HeraldError?`, even a `nil` one, go through the runtime's
    /// generic copy; a reference is one retain, and nothing for `nil`.
    private let storage: Storage

    private final class Storage: Sendable {
        let code: Code
        let message: String
        let underlying: (any Error & Sendable)?
        let curlCode: Int32?
        let curlMessage: String?
        let url: URL?
        let statusCode: Int?
        let keptFileURL: URL?
        let response: HTTPResponse?
        let responseBody: Data?
        let metrics: TransferMetrics?
        let resumeData: Data?
        let serverCertificateProblem: ServerCertificateProblem?

        init(
            code: Code, message: String, underlying: (any Error & Sendable)?, curlCode: Int32?, curlMessage: String?,
            url: URL?, statusCode: Int?, keptFileURL: URL?, response: HTTPResponse?, responseBody: Data?,
            metrics: TransferMetrics?, resumeData: Data?, serverCertificateProblem: ServerCertificateProblem?
        ) {
            self.code = code
            self.message = message
            self.underlying = underlying
            self.curlCode = curlCode
            self.curlMessage = curlMessage
            self.url = url
            self.statusCode = statusCode
            self.keptFileURL = keptFileURL
            self.response = response
            self.responseBody = responseBody
            self.metrics = metrics
            self.resumeData = resumeData
            self.serverCertificateProblem = serverCertificateProblem
        }
    }

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: What went wrong.
    ///   - message: A human-readable explanation.
    ///   - underlying: The error that caused this one, if any.
    ///   - curlCode: The raw `CURLcode`, when libcurl reported the failure.
    ///   - curlMessage: libcurl's description of the failure.
    ///   - url: The request URL. Credentials in it are redacted before it is stored.
    ///   - statusCode: The HTTP status code, for ``Code/unacceptableStatusCode``.
    ///   - keptFileURL: A file kept on disk for the caller, for ``Code/downloadMoveFailed``.
    ///   - response: The response head the failure came with; its status code is used when `statusCode` is
    ///     `nil`. Credentials in its URL are redacted before it is stored.
    ///   - responseBody: The response body the failure came with; only its first ``maximumKeptBodyLength``
    ///     bytes are kept.
    ///   - metrics: The transfer's metrics.
    ///   - resumeData: Resume data continuing a download that failed part-way.
    ///   - serverCertificateProblem: Why the server's certificate was not trusted.
    public init(
        _ code: Code,
        _ message: String,
        underlying: (any Error & Sendable)? = nil,
        curlCode: Int32? = nil,
        curlMessage: String? = nil,
        url: URL? = nil,
        statusCode: Int? = nil,
        keptFileURL: URL? = nil,
        response: HTTPResponse? = nil,
        responseBody: Data? = nil,
        metrics: TransferMetrics? = nil,
        resumeData: Data? = nil,
        serverCertificateProblem: ServerCertificateProblem? = nil
    ) {
        // Redacting here, not at each call site, means no path can store a password by forgetting to: in the URL,
        // the response's URL, and a URL the message or libcurl's text quotes (a proxy's, from the environment; a
        // redirect's).
        storage = Storage(
            code: code, message: message.redactingURLCredentials(), underlying: underlying, curlCode: curlCode,
            curlMessage: curlMessage?.redactingURLCredentials(),
            url: url?.redactingCredentials(), statusCode: statusCode ?? response?.statusCode,
            keptFileURL: keptFileURL, response: response?.redactingCredentials(),
            responseBody: responseBody.map {
                $0.count > Self.maximumKeptBodyLength ? $0.prefix(Self.maximumKeptBodyLength) : $0
            },
            metrics: metrics, resumeData: resumeData, serverCertificateProblem: serverCertificateProblem)
    }

    /// This error with the transfer's metrics, which the code that made it did not have. Keeps metrics
    /// already set.
    func adding(metrics: TransferMetrics?) -> HeraldError {
        guard storage.metrics == nil, let metrics else { return self }
        return HeraldError(
            code, message, underlying: underlying, curlCode: curlCode, curlMessage: curlMessage, url: url,
            statusCode: statusCode, keptFileURL: keptFileURL, response: response, responseBody: responseBody,
            metrics: metrics, resumeData: resumeData, serverCertificateProblem: serverCertificateProblem)
    }

    /// This error with the resume data of the download it failed.
    func adding(resumeData: Data) -> HeraldError {
        HeraldError(
            code, message, underlying: underlying, curlCode: curlCode, curlMessage: curlMessage, url: url,
            statusCode: statusCode, keptFileURL: keptFileURL, response: response, responseBody: responseBody,
            metrics: metrics, resumeData: resumeData, serverCertificateProblem: serverCertificateProblem)
    }
}

extension HeraldError: CustomStringConvertible {
    /// `"<code>: <message> (curl N: text) [url]"`, omitting the parts that are absent; the URL's signature query
    /// parameters (`X-Amz-Signature`, `sig`, …) are written as `***`.
    public var description: String {
        var text = "\(code): \(message)"
        if let curlCode {
            text += " (curl \(curlCode)"
            if let curlMessage, !curlMessage.isEmpty { text += ": \(curlMessage)" }
            text += ")"
        }
        // The values of a pre-signed URL's signature parameters stay out of the text that is logged.
        if let url { text += " [\(url.redactingSignatures().absoluteString)]" }
        return text
    }
}

extension HeraldError: LocalizedError {
    /// The same text as ``description``, so `localizedDescription` is useful on Linux too.
    public var errorDescription: String? { description }
}

extension HeraldError.Code {
    /// Whether `error` is a ``HeraldError`` with this code; lets `catch HeraldError.Code.timedOut` work.
    ///
    /// - Parameters:
    ///   - code: The code to match.
    ///   - error: Any error.
    /// - Returns: `true` when `error` is a ``HeraldError`` whose ``HeraldError/code`` is `code`.
    public static func ~= (code: HeraldError.Code, error: any Error) -> Bool {
        (error as? HeraldError)?.code == code
    }
}
