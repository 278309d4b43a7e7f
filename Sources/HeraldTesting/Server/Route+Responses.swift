import Foundation
import NIOCore
import NIOHTTP1

/// A request after its body has arrived, as the responders need it.
struct ReceivedRequest {
    var sequenceNumber: Int
    var head: HTTPRequestHead
    var route: Route
    /// The body, retained only for routes that need it (`/echo`); `nil` otherwise.
    var body: ByteBuffer?
    /// The number of body bytes received, retained or not.
    var bodyByteCount = 0
    /// The parser hashing a `/multipart` body as it arrives; `nil` for other routes.
    var multipart: MultipartDigester?

    var isHead: Bool { head.method == .HEAD }
}

extension Route {
    /// The `{"hello":"world","n":1}` body of `/json`.
    static let jsonBody = #"{"hello":"world","n":1}"#

    /// The complete response for routes whose answer is known as soon as the request has ended.
    ///
    /// - Returns: `nil` for routes that stream (`/bytes`), wait (`/delay`) or inject faults.
    func cannedResponse(for request: ReceivedRequest) -> CannedResponse? {
        switch self {
        case .status(let code, let location, let authenticate):
            var headers = HTTPHeaders()
            if let location, (300..<400).contains(code) { headers.add(name: "Location", value: location) }
            if let authenticate, code == 401 { headers.add(name: "WWW-Authenticate", value: authenticate) }
            return .status(HTTPResponseStatus(statusCode: code), headers: headers)
        case .json:
            return CannedResponse(status: .ok, contentType: "application/json", body: Self.jsonBody)
        case .invalidJSON:
            return CannedResponse(status: .ok, contentType: "application/json", body: #"{"hello": "world", "n": "#)
        case .text:
            return CannedResponse(status: .ok, contentType: "text/plain; charset=utf-8", body: "Hello, Herald!\n")
        case .empty:
            return CannedResponse(status: .noContent)
        case .html:
            return CannedResponse(
                status: .ok,
                contentType: "text/html; charset=utf-8",
                body: "<!DOCTYPE html>\n<html><head><title>Herald</title></head><body><p>Hello</p></body></html>\n"
            )
        case .gzip:
            var response = CannedResponse(
                status: .ok, contentType: "text/plain; charset=utf-8", headers: ["Content-Encoding": "gzip"])
            response.body = ByteBuffer(bytes: TestServer.gzipBody)
            return response
        case .echo:
            return echoResponse(for: request)
        case .multipart:
            return request.multipart?.response() ?? .badRequest("no multipart body")
        case .redirect(let remaining, let status):
            guard remaining > 0 else {
                return CannedResponse(status: .ok, contentType: "text/plain; charset=utf-8", body: "redirected\n")
            }
            let query = status == 302 ? "" : "?status=\(status)"
            let headers: HTTPHeaders = ["Location": "/redirect/\(remaining - 1)\(query)"]
            return .status(HTTPResponseStatus(statusCode: status), headers: headers)
        case .redirectTo(let location, let status):
            return .status(HTTPResponseStatus(statusCode: status), headers: ["Location": location])
        case .headers(let fields, let notModifiedWhenConditional):
            return headersResponse(fields, notModifiedWhenConditional: notModifiedWhenConditional, for: request)
        case .basicAuth(let user, let password, let redirect, let alsoOffer, let sendsToLogin):
            return basicAuthResponse(
                for: request, user: user, password: password, redirect: redirect, alsoOffer: alsoOffer,
                sendsToLogin: sendsToLogin)
        case .digestAuth(let user, let password, let cookie):
            return DigestAuthResponder.response(for: request, user: user, password: password, cookie: cookie)
        case .notFound:
            return .status(.notFound)
        case .badRequest(let message):
            return .badRequest(message)
        case .bytes, .events, .delay, .barrier, .fault, .session:
            return nil
        }
    }

    private func echoResponse(for request: ReceivedRequest) -> CannedResponse {
        guard var body = request.body, body.readableBytes == request.bodyByteCount else {
            return CannedResponse(status: .payloadTooLarge, contentType: "text/plain", body: "body too large to echo\n")
        }
        var headers: [String: String] = [:]
        for field in request.head.headers {
            let name = field.name.lowercased()
            headers[name] = headers[name].map { "\($0), \(field.value)" } ?? field.value
        }
        let bytes = body.readBytes(length: body.readableBytes) ?? []
        let text = String(validating: bytes, as: UTF8.self)
        return .json(
            EchoedRequest(
                method: request.head.method.rawValue,
                uri: request.head.uri,
                headers: headers,
                body: text ?? Data(bytes).base64EncodedString(),
                bodyEncoding: text == nil ? "base64" : "utf8",
                bodyLength: bytes.count
            )
        )
    }

    private func headersResponse(
        _ fields: [(name: String, value: String)], notModifiedWhenConditional: Bool, for request: ReceivedRequest
    ) -> CannedResponse {
        // Framing headers are the server's to choose; letting a query set them would produce an unparsable stream
        // instead of the requested header.
        let framing: Set<String> = ["content-length", "transfer-encoding", "connection"]
        var headers = HTTPHeaders()
        var echoed: [String: String] = [:]
        for field in fields where !framing.contains(field.name.lowercased()) {
            guard Self.isValidHeader(field) else { return .badRequest("invalid header \(field.name)") }
            headers.add(name: field.name, value: field.value)
            echoed[field.name] = field.value
        }
        let isConditional =
            request.head.headers.contains(name: "If-None-Match")
            || request.head.headers.contains(name: "If-Modified-Since")
        if notModifiedWhenConditional && isConditional {
            return CannedResponse(status: .notModified, headers: headers)
        }
        if let entityTag = headers["ETag"].first,
            request.head.headers["If-None-Match"].contains(where: { $0 == entityTag || $0 == "*" })
        {
            // A cache revalidating what it holds: the same header fields, no body.
            return CannedResponse(status: .notModified, headers: headers)
        }
        var response = CannedResponse.json(echoed)
        response.headers.remove(name: "Content-Type")
        response.headers.add(contentsOf: headers)
        if response.headers["content-type"].isEmpty {
            response.headers.add(name: "Content-Type", value: "application/json")
        }
        return response
    }

    private func basicAuthResponse(
        for request: ReceivedRequest, user: String, password: String, redirect: String?, alsoOffer: String?,
        sendsToLogin: Bool
    ) -> CannedResponse {
        let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        guard request.head.headers["authorization"].first == expected else {
            if sendsToLogin {
                // A page that sends a visitor without the credential to its login page, which sends them back.
                let encode = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                }
                let login =
                    "/auth/basic?user=\(encode(user))&password=\(encode(password))&redirect=\(encode(request.head.uri))"
                return .status(.found, headers: ["Location": login])
            }
            var response = CannedResponse.status(.unauthorized)
            if let alsoOffer { response.headers.add(name: "WWW-Authenticate", value: alsoOffer) }
            response.headers.add(name: "WWW-Authenticate", value: #"Basic realm="herald""#)
            return response
        }
        if let redirect {
            return .status(.found, headers: ["Location": redirect])
        }
        struct Authenticated: Encodable {
            var authenticated = true
            var user: String
        }
        return .json(Authenticated(user: user))
    }

    private static func isValidHeader(_ field: (name: String, value: String)) -> Bool {
        let separators = Set("()<>@,;:\\\"/[]?={} \t")
        let nameIsToken =
            !field.name.isEmpty
            && field.name.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 32 && $0.value < 127 }
            && !field.name.contains { separators.contains($0) }
        let valueIsClean = !field.value.unicodeScalars.contains { $0 == "\r" || $0 == "\n" || $0 == "\0" }
        return nameIsToken && valueIsClean
    }
}
