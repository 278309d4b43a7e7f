import Foundation
import HeraldEngine

extension Request {
    /// The header fields whose values ``curlDescription`` replaces with `***`: credentials and cookies.
    static let redactedFieldNames = ["Authorization", "Proxy-Authorization", "Cookie"]

    /// The request as a `curl` command line, to see or replay what went out: Alamofire's
    /// `cURLDescription()`.
    ///
    /// Credentials are redacted: a `user:password` in the URL, and the values of `Authorization`,
    /// `Proxy-Authorization` and `Cookie`, read `***`. A body that is UTF-8 text is shown with `--data-raw`
    /// (sent as written, even when it starts with `@`); any other body is read from a file, `body.bin`, which a
    /// comment line before the command describes: the bytes are not printed. This is the request alone;
    /// ``SessionManager/curlDescription(for:)`` adds what the session sends with it.
    public var curlDescription: String {
        Self.curlCommand(url: url, method: method, headers: headers, body: body)
    }

    /// A `curl` command line for these parts, with credentials redacted (see ``curlDescription``).
    static func curlCommand(url: URL, method: String, headers: HTTPHeaders, body: Data?) -> String {
        var lines = ["curl"]
        // curl sends GET without a body and POST with one; any other combination needs `-X`, except HEAD: with
        // `-X HEAD` curl would wait for the body the response's `Content-Length` announces, `--head` asks no body.
        let impliedMethod = body == nil ? "GET" : "POST"
        if method == "HEAD", body == nil {
            lines.append("--head")
        } else if method != impliedMethod {
            lines.append("-X \(shellQuoted(method))")
        }
        for field in headers.fields {
            let isSecret = redactedFieldNames.contains { field.name.caseInsensitiveEquals($0) }
            let value = isSecret ? URL.redactedCredential : field.value
            // curl reads a blank value as "remove the field"; `Name;` sends it empty, as the engine does.
            let blank = value.allSatisfy { $0 == " " || $0 == "\t" }
            lines.append("-H \(shellQuoted(blank ? "\(field.name);" : "\(field.name): \(value)"))")
        }
        // A comment can't share a line with the command: it would swallow the `\` that continues it.
        var note = ""
        if let body {
            if let text = String(data: body, encoding: .utf8) {
                lines.append("--data-raw \(shellQuoted(text))")
            } else {
                lines.append("--data-binary @body.bin")
                note = "# The body: \(body.count) bytes of binary data, not shown; save them as body.bin.\n"
            }
        }
        lines.append(shellQuoted(url.redactingCredentials().absoluteString))
        return note + lines.joined(separator: " \\\n    ")
    }

    /// `text` in single quotes for a POSIX shell: each `'` inside is closed, escaped and reopened.
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }
}

extension SessionManager {
    /// `request` as a `curl` command line, as this session would send it: with the session's
    /// ``SessionConfiguration/httpAdditionalHeaders``, its default `User-Agent` and `Accept-Language`, and
    /// a `Cookie` field when its cookie store holds cookies for the URL (redacted, like every credential;
    /// see ``Request/curlDescription``).
    ///
    /// What an interceptor's adapter, a redirect or an authentication round-trip would change is not shown:
    /// those happen when the task runs.
    /// - Parameter request: The request.
    /// - Returns: The command line, one option per line.
    public func curlDescription(for request: Request) -> String {
        var headers = Self.requestHeaders(request.headers, adding: configuration.httpAdditionalHeaders)
        if !headers.contains("Cookie"), cookieHeader(for: request.url) != nil {
            headers.add(name: "Cookie", value: URL.redactedCredential)
        }
        return Request.curlCommand(url: request.url, method: request.method, headers: headers, body: request.body)
    }
}
