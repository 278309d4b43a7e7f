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
