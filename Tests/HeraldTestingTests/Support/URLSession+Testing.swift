import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A minimal well-behaved HTTP client for endpoints that follow the protocol.
enum HTTP {
    struct NotHTTP: Error {}

    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 30
        return URLSession(configuration: configuration)
    }()

    /// Performs `request` and returns the body and response; redirects are followed.
    static func fetch(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw NotHTTP() }
        return (data, http)
    }

    static func get(_ url: URL, headers: [String: String] = [:]) async throws -> (Data, HTTPURLResponse) {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try await fetch(request)
    }
}
