import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Default User-Agent and Accept-Language")
struct DefaultHeadersTests {
    @Test("every session request carries Herald's User-Agent and the Accept-Language unless set")
    func sentByDefault() async throws {
        let fixture = try await SessionFixture.make()
        let (_, response) = try await fixture.session.data(for: Request(url: fixture.server.url("/status/204")))
        #expect(response.statusCode == 204)
        let recorded = try #require(fixture.server.requests.first)
        #expect(recorded.headerValue("User-Agent") == HeraldVersion.userAgent)
        #expect(recorded.headerValue("User-Agent") == "Herald/\(HeraldVersion.string) libcurl/\(LibraryVersions.curl)")
        #expect(recorded.headerValue("Accept-Language") == DefaultHeaders.acceptLanguage)
        #expect(
            DefaultHeaders.acceptLanguage
                == DefaultHeaders.acceptLanguage(environment: ProcessInfo.processInfo.environment))
        #expect(recorded.headers.filter { $0.name.lowercased() == "user-agent" }.count == 1)
        try await fixture.tearDown()
    }

    @Test("a request's own User-Agent, or the configuration's, replaces the default")
    func callerWins() async throws {
        var configuration = SessionConfiguration()
        configuration.httpAdditionalHeaders = ["Accept-Language": "de-CH;q=1"]
        let fixture = try await SessionFixture.make(configuration: configuration)
        let request = Request(url: fixture.server.url("/status/204"), headers: ["User-Agent": "MyApp/2.0"])
        _ = try await fixture.session.data(for: request)
        let recorded = try #require(fixture.server.requests.first)
        #expect(recorded.headers.filter { $0.name.lowercased() == "user-agent" }.map(\.value) == ["MyApp/2.0"])
        #expect(recorded.headers.filter { $0.name.lowercased() == "accept-language" }.map(\.value) == ["de-CH;q=1"])
        try await fixture.tearDown()
    }

    @Test("a request without fields of its own sends the configuration's, in order, then the defaults")
    func sharedListInOrder() async throws {
        var configuration = SessionConfiguration()
        configuration.httpAdditionalHeaders = HTTPHeaders([("X-First", "1"), ("X-Second", "2"), ("x-first", "dup")])
        let fixture = try await SessionFixture.make(configuration: configuration)
        // Twice with no fields (the session's shared list), then once with one of its own.
        for _ in 0..<2 { _ = try await fixture.session.data(for: Request(url: fixture.server.url("/status/204"))) }
        let own = Request(url: fixture.server.url("/status/204"), headers: ["X-Second": "mine", "X-Own": "o"])
        _ = try await fixture.session.data(for: own)
        let sent = fixture.server.requests.map { recorded in
            recorded.headers.filter { $0.name.lowercased().hasPrefix("x-") }.map { "\($0.name): \($0.value)" }
        }
        // A name the configuration repeats goes out each time, as a request's own repeated fields do.
        #expect(
            sent == [
                ["X-First: 1", "X-Second: 2", "x-first: dup"], ["X-First: 1", "X-Second: 2", "x-first: dup"],
                ["X-Second: mine", "X-Own: o", "X-First: 1", "x-first: dup"],
            ])
        for recorded in fixture.server.requests {
            #expect(recorded.headerValue("User-Agent") == HeraldVersion.userAgent)
            #expect(recorded.headerValue("Accept-Language") == DefaultHeaders.acceptLanguage)
        }
        try await fixture.tearDown()
    }

    @Test("the default User-Agent is also sent on every redirect hop")
    func redirectHops() async throws {
        let fixture = try await SessionFixture.make()
        _ = try await fixture.session.data(for: Request(url: fixture.server.url("/redirect/2")))
        #expect(fixture.server.requests.count == 3)
        #expect(fixture.server.requests.allSatisfy { $0.headerValue("User-Agent") == HeraldVersion.userAgent })
        try await fixture.tearDown()
    }

    @Test("Accept-Language lists the environment's languages with falling quality, as AF does")
    func acceptLanguageFromEnvironment() {
        #expect(DefaultHeaders.acceptLanguage(environment: ["LANG": "fr_CH.UTF-8"]) == "fr-CH;q=1")
        #expect(
            DefaultHeaders.acceptLanguage(environment: ["LANGUAGE": "de_AT:de:en", "LANG": "de_AT.UTF-8@euro"])
                == "de-AT;q=1, de;q=0.9, en;q=0.8")
        #expect(
            DefaultHeaders.acceptLanguage(environment: ["LC_ALL": "pt_BR.UTF-8", "LC_MESSAGES": "es_ES", "LANG": "it"])
                == "pt-BR;q=1")
        #expect(DefaultHeaders.acceptLanguage(environment: ["LC_MESSAGES": "es_ES", "LANG": "it"]) == "es-ES;q=1")
        #expect(DefaultHeaders.acceptLanguage(environment: ["LANG": "C.UTF-8"]) == "en;q=1")
        #expect(DefaultHeaders.acceptLanguage(environment: ["LANG": "POSIX"]) == "en;q=1")
        #expect(DefaultHeaders.acceptLanguage(environment: [:]) == "en;q=1")
        #expect(
            DefaultHeaders.acceptLanguage(environment: ["LANGUAGE": "a:b:c:d:e:f:g:h"])
                == "a;q=1, b;q=0.9, c;q=0.8, d;q=0.7, e;q=0.6, f;q=0.5")
    }
}
