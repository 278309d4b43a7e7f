import Foundation

extension SessionManager {
    /// The `Cookie` field for a hop to `url`, when the session handles cookies. Any thread.
    func cookieHeader(for url: URL) -> String? {
        guard configuration.httpShouldSetCookies else { return nil }
        return cookieStore.cookieHeader(for: url)
    }

    /// Stores the cookies `response` sets, when the session handles cookies. Loop thread: as a response head
    /// arrives (a head libcurl answers itself, as its transfer ends), before the next hop is built.
    func storeCookies(from response: HTTPResponse) {
        guard configuration.httpShouldSetCookies else { return }
        let fields = response.headers.values(for: "Set-Cookie")
        guard !fields.isEmpty else { return }
        cookieStore.store(setCookieFields: fields, from: response.url)
    }
}
