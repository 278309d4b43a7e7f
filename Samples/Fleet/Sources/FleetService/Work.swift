import Foundation
import Hummingbird

/// Service B's `/work`: answers `b` with the status the query asks for (`status`, default 200) after the
/// delay it asks for (`delay_ms`, default 0), so that a load can give the fleet latencies and failures.
enum Work {
    /// The most `delay_ms` accepted: a request is never held longer than this.
    static let maximumDelay = 5_000

    static func answer(query: String?) async throws -> Response {
        var items: [String: String] = [:]
        for item in URLComponents(string: "?" + (query ?? ""))?.queryItems ?? [] { items[item.name] = item.value }
        let status = items["status"].map { Int($0) } ?? 200
        let delay = items["delay_ms"].map { Int($0) } ?? 0
        guard let status, (200...599).contains(status), let delay, (0...maximumDelay).contains(delay) else {
            return Response(
                status: .badRequest,
                body: ResponseBody(byteBuffer: ByteBuffer(string: "status must be 200…599, delay_ms 0…5000\n")))
        }
        // The delay stands for the work a real service would do.
        if delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
        return Response(
            status: HTTPResponse.Status(code: status), body: ResponseBody(byteBuffer: ByteBuffer(string: "b\n")))
    }
}
