import Foundation
import Hummingbird

/// Service B's `/work`: answers `b` with the status the query asks for (`status`, default 200) after the
/// delay it asks for (`delay_ms`, default 0), so that a load can give the fleet latencies and failures.
enum Work {
    /// The most `delay_ms` accepted: a request is never held longer than this.
    static let maximumDelay = 5_000

    static func answer(query: String?) async throws -> Response {
        guard isValidQuery(query ?? ""), let components = URLComponents(string: "?" + (query ?? "")) else {
            return Response(
                status: .badRequest, body: ResponseBody(byteBuffer: ByteBuffer(string: "malformed query\n")))
        }
        var items: [String: String] = [:]
        for item in components.queryItems ?? [] { items[item.name] = item.value }
        let status = items["status"].map { Int($0) } ?? 200
        let delay = items["delay_ms"].map { Int($0) } ?? 0
        guard let status, (200...599).contains(status), let delay, (0...maximumDelay).contains(delay) else {
            return Response(
                status: .badRequest,
                body: ResponseBody(byteBuffer: ByteBuffer(string: "status must be 200…599, delay_ms 0…5000\n")))
        }
        // The delay stands for the work a real service would do.
        if delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
        guard allowsBody(status) else { return Response(status: HTTPResponse.Status(code: status)) }
        return Response(
            status: HTTPResponse.Status(code: status), body: ResponseBody(byteBuffer: ByteBuffer(string: "b\n")))
    }

    /// Whether `query` is a query as a URL may carry it: only characters a query allows, and `%` always
    /// followed by two hexadecimal digits. Foundation traps on a `percentEncodedQuery` that is not.
    static func isValidQuery(_ query: String) -> Bool {
        var scalars = query.unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            if scalar == "%" {
                guard let high = scalars.popFirst(), let low = scalars.popFirst(), high.properties.isASCIIHexDigit,
                    low.properties.isASCIIHexDigit
                else { return false }
            } else if !CharacterSet.urlQueryAllowed.contains(scalar) {
                return false
            }
        }
        return true
    }

    /// Whether a response with `status` may have a body: not 1xx, 204 (No Content) or 304 (Not Modified).
    static func allowsBody(_ status: Int) -> Bool {
        !(100...199).contains(status) && status != 204 && status != 304
    }
}
