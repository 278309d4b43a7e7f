import Foundation
import Herald
import HeraldTesting
import Testing

/// Hostile input that Herald refuses before a byte leaves the process: the server must see no
/// connection at all.
@Suite("Hostile input is refused before anything is sent")
struct HostileInputTests {
    /// Creates a data task for `request` on a fresh session, expects it to throw `code`, and checks that the
    /// server saw nothing.
    private func expectRefused(
        _ makeRequest: (TestServer) -> Request, code: HeraldError.Code,
        configuration: SessionConfiguration = .default, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let fixture = try await SessionFixture.make(configuration: configuration)
        let request = makeRequest(fixture.server)
        do throws(HeraldError) {
            // Never resumed even if accepted: the refusal must come from creating the task.
            _ = try fixture.session.dataTask(with: request)
            Issue.record("the request was accepted: \(request.method) \(request.url)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        }
        do throws(HeraldError) {
            _ = try fixture.session.downloadTask(with: request)
            Issue.record("the download was accepted: \(request.method) \(request.url)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        }
        let statistics = fixture.server.statistics
        #expect(statistics.acceptedConnections == 0, sourceLocation: sourceLocation)
        #expect(statistics.requestCount == 0, sourceLocation: sourceLocation)
        try await fixture.tearDown()
    }

    @Test("CR or LF in a header value is refused", arguments: ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\u{0}b"])
    func lineBreakInHeaderValue(value: String) async throws {
        try await expectRefused({ Request(url: $0.url("/echo"), headers: ["X-Test": value]) }, code: .invalidRequest)
    }

    @Test(
        "CR or LF in a session configuration's header, User-Agent included, is refused",
        arguments: ["X-Test", "User-Agent", "Accept-Language"], ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\u{0}b"])
    func lineBreakInConfigurationHeader(name: String, value: String) async throws {
        var configuration = SessionConfiguration()
        configuration.httpAdditionalHeaders = [name: value]
        try await expectRefused({ Request(url: $0.url("/echo")) }, code: .invalidRequest, configuration: configuration)
    }

    @Test("CR or LF in a request's own User-Agent is refused")
    func lineBreakInUserAgent() async throws {
        try await expectRefused(
            { Request(url: $0.url("/echo"), headers: ["User-Agent": "ua\r\nX-Injected: yes"]) }, code: .invalidRequest)
    }

    @Test("CR or LF in a locale environment variable never reaches Accept-Language")
    func lineBreakInLocaleEnvironment() {
        let value = DefaultHeaders.acceptLanguage(environment: [
            "LANGUAGE": "fr\r\nX-Injected: 1:de_DE", "LANG": "en_US\n.UTF-8",
        ])
        #expect(value == "de-DE;q=1")
    }

    @Test("an interceptor's adapted request with CR or LF in a header fails the task before anything is sent")
    func lineBreakFromInterceptor() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.interceptor = Interceptor(adapters: [InjectingAdapter()])
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/echo")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .invalidRequest)
        #expect(fixture.server.statistics.acceptedConnections == 0)
        #expect(fixture.server.statistics.requestCount == 0)
        try await fixture.tearDown()
    }

    @Test("CR, LF, space or colon in a header name is refused", arguments: ["X-A\r\nX-B", "X-A\n", "X A", "X:A", ""])
    func badHeaderName(name: String) async throws {
        try await expectRefused({ Request(url: $0.url("/echo"), headers: [name: "v"]) }, code: .invalidRequest)
    }

    @Test(
        "CR, LF or space in the method is refused",
        arguments: ["GET\r\nX-Injected: 1", "GET /x HTTP/1.1\r\n", "GE T", ""])
    func badMethod(method: String) async throws {
        try await expectRefused({ Request(url: $0.url("/echo"), method: method) }, code: .invalidRequest)
    }

    @Test(
        "CR or LF in a URL never reaches the wire raw: Foundation percent-encodes it, the server sees one request line")
    func lineBreakInURL() async throws {
        // `URL(string:)` percent-encodes raw CR and LF (swift-corelibs-foundation), so a URL value can't carry
        // one; `Request.validate` refuses one anyway should a URL ever hold it. What matters is the wire: no
        // header injected, no second request smuggled.
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let suffixes = [
            "/echo\r\nX-Injected: 1", "/echo?q=a\nX-Injected:%201", "/echo?q=a\r\n\r\nGET%20/json%20HTTP/1.1",
        ]
        var sent = 0
        for suffix in suffixes {
            guard let url = URL(string: fixture.server.baseURL.absoluteString + suffix) else { continue }
            #expect(!url.absoluteString.utf8.contains { $0 == 0x0D || $0 == 0x0A })
            let task = try fixture.session.dataTask(with: Request(url: url))
            task.resume()
            sent += 1
            try await fixture.recorder.waitForCompletions(sent, timeout: .seconds(30))
        }
        let requests = fixture.server.requests
        #expect(requests.count == sent)
        for request in requests {
            #expect(request.headerValue("X-Injected") == nil)
            #expect(!request.uri.utf8.contains { $0 == 0x0D || $0 == 0x0A })
            #expect(request.path != "/json")
        }
        try await fixture.tearDown()
    }

    @Test(
        "dangerous and unsupported schemes are refused",
        arguments: [
            "file:///etc/passwd", "gopher://127.0.0.1:70/", "dict://127.0.0.1:2628/d:x", "ldap://127.0.0.1/dc=x",
            "ftp://127.0.0.1/x", "telnet://127.0.0.1:23/", "tftp://127.0.0.1/x", "scp://127.0.0.1/x",
            "smtp://127.0.0.1/", "FILE:///etc/passwd",
        ])
    func dangerousScheme(url: String) async throws {
        let fixture = try await SessionFixture.make()
        #expect {
            _ = try fixture.session.dataTask(with: Request(url: URL(string: url)!))
        } throws: { error in
            (error as? HeraldError)?.code == .unsupportedURL
        }
        try await fixture.tearDown()
    }

    @Test("a redirect to a dangerous scheme is refused: unsupportedURL, and only the first request was sent")
    func redirectToDangerousScheme() async throws {
        for target in ["file:///etc/passwd", "gopher://127.0.0.1:70/", "dict://127.0.0.1:2628/d:x"] {
            let harness = try await FaultHarness.make()
            let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let call = try await harness.expectFailure(
                Request(url: harness.server.url("/redirect-to?url=\(encoded)")), code: .unsupportedURL)
            // Refused by Herald's redirect rules, before curl is handed the URL.
            #expect(call.error?.curlCode == nil)
            #expect(harness.server.requests(forPath: "/redirect-to").count == 1)
        }
    }

    @Test("a session that allows file: and ftp: for its own requests still follows a redirect to http and https only")
    func redirectLeavesHTTPOnlyForHTTP() async throws {
        var configuration = SessionConfiguration.default
        configuration.allowedProtocols = ["http", "https", "file", "ftp"]
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let secret = scratch.url.appendingPathComponent("secret.txt")
        try Data("local secret".utf8).write(to: secret)
        for target in [secret.absoluteString, "ftp://127.0.0.1:1/x"] {
            let harness = try await FaultHarness.make(configuration: configuration)
            let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            // Before, the file's contents became the task's body.
            let call = try await harness.expectFailure(
                Request(url: harness.server.url("/redirect-to?url=\(encoded)")), code: .unsupportedURL)
            #expect(call.error?.message.contains("only http and https") == true, "\(String(describing: call.error))")
            #expect(harness.server.requests(forPath: "/redirect-to").count == 1)
        }
    }

    @Test("credentials in a URL are redacted in the error's description, URL and curl text")
    func credentialsRedacted() async throws {
        let closed = try RefusingPort()
        defer { closed.close() }
        let port = closed.port
        let fixture = try await SessionFixture.make()
        let urls = [
            "http://alice:s3cr3t-pw@127.0.0.1:\(port)/private",
            "http://alice:s3cr3t-pw@\(FaultHarness.unresolvableHost)/private",
        ]
        for text in urls {
            let log = CompletionLog()
            let task = try fixture.session.dataTask(
                with: Request(url: URL(string: text)!), completionHandler: log.handler)
            let identifier = task.taskIdentifier
            task.resume()
            try await fixture.recorder.waitUntil(timeout: .seconds(30)) { events in
                events.contains { $0.kind == .complete && $0.taskIdentifier == identifier }
            }
            let error = try #require(log.all.first?.error)
            for rendered in [
                error.description, error.localizedDescription, "\(error)", error.url?.absoluteString ?? "",
            ] {
                #expect(!rendered.contains("s3cr3t-pw"), "\(rendered)")
                #expect(!rendered.contains("alice"), "\(rendered)")
            }
            #expect(error.curlMessage?.contains("s3cr3t-pw") != true)
            #expect(error.url?.absoluteString.contains("***:***@") == true)
        }
        try await fixture.tearDown()
    }
}

/// Adds a header value that would split the request, as a careless adapter might.
private struct InjectingAdapter: RequestAdapter {
    func adapt(_ request: Request, for task: SessionTask) async throws -> Request {
        var adapted = request
        adapted.headers.add(name: "X-Token", value: "t\r\nX-Injected: 1")
        return adapted
    }
}
