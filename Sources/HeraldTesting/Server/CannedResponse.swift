import Foundation
import NIOCore
import NIOHTTP1

/// A complete response known before it is written: a status, headers and a small body.
struct CannedResponse {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: ByteBuffer

    init(status: HTTPResponseStatus, contentType: String? = nil, body: String = "", headers: HTTPHeaders = [:]) {
        self.status = status
        self.headers = headers
        self.body = ByteBuffer(string: body)
        if let contentType, self.headers["content-type"].isEmpty {
            self.headers.add(name: "Content-Type", value: contentType)
        }
    }

    /// A plain-text response whose body is `"{code} {reason}\n"`.
    static func status(_ status: HTTPResponseStatus, headers: HTTPHeaders = [:]) -> CannedResponse {
        CannedResponse(
            status: status,
            contentType: "text/plain; charset=utf-8",
            body: "\(status.code) \(status.reasonPhrase)\n",
            headers: headers
        )
    }

    /// A `400 Bad Request` explaining which parameter was wrong.
    static func badRequest(_ message: String) -> CannedResponse {
        CannedResponse(status: .badRequest, contentType: "text/plain; charset=utf-8", body: "\(message)\n")
    }

    /// A `200 OK` JSON response encoding `value` with sorted keys, so bodies are byte-for-byte reproducible.
    static func json(_ value: some Encodable) -> CannedResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else {
            return CannedResponse(status: .internalServerError, body: "encoding failed\n")
        }
        var response = CannedResponse(status: .ok, contentType: "application/json")
        response.body = ByteBuffer(bytes: data)
        return response
    }
}
