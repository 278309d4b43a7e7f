import Foundation
import NIOHTTP1

/// `/auth/digest`: RFC 7616 Digest with `MD5` and `qop=auth`, verified server-side.
///
/// Without a valid `Authorization: Digest …` the answer is `401` with a fresh nonce (and, with a `cookie` name,
/// `Set-Cookie: name=nonce`); with one whose `response` matches what the user and password give, `200` and
/// `{"authenticated":true,"user":…}`, with the answer's `"nonce"` when a `cookie` name is given.
enum DigestAuthResponder {
    static let realm = "herald-digest"

    static func response(
        for request: ReceivedRequest, user: String, password: String, cookie: String? = nil
    ) -> CannedResponse {
        let fields = request.head.headers["authorization"].first.flatMap { header in
            header.lowercased().hasPrefix("digest ") ? parameters(of: String(header.dropFirst(7))) : nil
        }
        guard let fields, isValid(fields, method: request.head.method.rawValue, user: user, password: password)
        else {
            var response = CannedResponse.status(.unauthorized)
            let nonce = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            response.headers.add(
                name: "WWW-Authenticate",
                value: #"Digest realm="\#(realm)", qop="auth", algorithm=MD5, nonce="\#(nonce)", opaque="herald""#)
            if let cookie { response.headers.add(name: "Set-Cookie", value: "\(cookie)=\(nonce); Path=/") }
            return response
        }
        struct Authenticated: Encodable {
            var authenticated = true
            var user: String
            var nonce: String?
        }
        return .json(Authenticated(user: user, nonce: cookie == nil ? nil : fields["nonce"]))
    }

    private static func isValid(_ fields: [String: String], method: String, user: String, password: String) -> Bool {
        guard fields["username"] == user, fields["realm"] == realm, let nonce = fields["nonce"],
            let uri = fields["uri"], let answer = fields["response"]
        else { return false }
        let ha1 = MD5.hex("\(user):\(realm):\(password)")
        let ha2 = MD5.hex("\(method):\(uri)")
        let expected: String
        if let qop = fields["qop"] {
            guard qop == "auth", let count = fields["nc"], let clientNonce = fields["cnonce"] else { return false }
            expected = MD5.hex("\(ha1):\(nonce):\(count):\(clientNonce):\(qop):\(ha2)")
        } else {
            expected = MD5.hex("\(ha1):\(nonce):\(ha2)")
        }
        return expected == answer.lowercased()
    }

    /// `name=value` and `name="value"` pairs, comma-separated.
    static func parameters(of text: String) -> [String: String] {
        var result: [String: String] = [:]
        var rest = Substring(text)
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," }
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            rest = rest[rest.index(after: equals)...]
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                let end = rest.firstIndex(of: "\"") ?? rest.endIndex
                value = String(rest[..<end])
                rest = end < rest.endIndex ? rest[rest.index(after: end)...] : rest[end...]
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end].trimmingCharacters(in: .whitespaces)
                rest = rest[end...]
            }
            result[name] = value
        }
        return result
    }
}
