import Foundation
@testable import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// Redirects Herald follows by hand: the rules, the hook that sees every hop, and cancellation between hops.
@Suite("Redirects")
struct RedirectTests {
    private static func echoed(_ data: Data) throws -> EchoedRequest {
        try JSONDecoder().decode(EchoedRequest.self, from: data)
    }

    private static func redirect(to target: String, status: Int, on server: TestServer) -> URL {
        let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target
        return server.url("/redirect-to?url=\(encoded)&status=\(status)")
    }

    @Test("a 3xx whose Location is blank is the task's response, as libcurl and URLSession take it, not a failure")
    func blankLocation() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let (_, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/redirect-to?url=%20&status=302")))
        // Before, the task failed with badServerResponse ("The redirect's Location is not a URL").
        #expect(response.statusCode == 302)
        #expect(fixture.server.requestCount == 1)
        try await fixture.tearDown()
    }

    @Test("a redirection hook's timeoutInterval is the hop's: a stalled target times out")
    func hookTimeout() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskWillPerformHTTPRedirection = { _, _, proposed in
            var shorter = proposed
            shorter.timeoutInterval = 0.5
            return shorter
        }
        let error = await #expect(throws: HeraldError.self) {
            _ = try await fixture.session.data(
                for: Request(url: Self.redirect(to: "/delay/5000", status: 302, on: fixture.server)))
        }
        // Before, the hop kept the session's 60 s timeout and the delay's answer came after 5 s.
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        try await fixture.tearDown()
    }

    @Test("301/302 turn POST into GET without a body, 303 turns PUT into GET, 307/308 keep method and body")
    func methodRewrite() async throws {
        let fixture = try await SessionFixture.make()
        let cases: [(status: Int, method: String, expected: String, keepsBody: Bool)] = [
            (301, "POST", "GET", false), (302, "POST", "GET", false), (303, "PUT", "GET", false),
            (307, "POST", "POST", true), (308, "PUT", "PUT", true), (302, "PUT", "PUT", true),
            // A `GET` with a body (a search query, as some APIs take): the same request again only on 307 and 308.
            (307, "GET", "GET", true), (308, "GET", "GET", true), (301, "GET", "GET", false),
            (302, "GET", "GET", false), (303, "GET", "GET", false),
        ]
        for entry in cases {
            let request = Request(
                url: Self.redirect(to: "/echo", status: entry.status, on: fixture.server), method: entry.method,
                headers: ["Content-Type": "text/plain"], body: Data("hello".utf8))
            let (data, response) = try await fixture.session.data(for: request)
            #expect(response.statusCode == 200)
            let echoed = try Self.echoed(data)
            #expect(echoed.method == entry.expected, "status \(entry.status)")
            #expect(echoed.body == (entry.keepsBody ? "hello" : ""), "status \(entry.status)")
            #expect((echoed.headers["content-type"] != nil) == entry.keepsBody, "status \(entry.status)")
        }
        try await fixture.tearDown()
    }

    @Test("a 307 resends a file upload's body and asks taskNeedNewBodyStream for a streamed one")
    func bodiesRewound() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let url = Self.redirect(to: "/echo", status: 307, on: fixture.server)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-redirect-\(UUID()).txt")
        try Data("from a file".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (fileData, _) = try await fixture.session.upload(for: Request(url: url, method: "POST"), fromFile: file)
        #expect(try Self.echoed(fileData).body == "from a file")

        let renewals = Locked(0)
        fixture.session.taskNeedNewBodyStream = { _ in
            renewals.withLock { $0 += 1 }
            return BodyStream(data: Data("streamed".utf8))
        }
        let log = CompletionLog()
        let task = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: url, method: "POST"),
            bodyProvider: BodyStream(data: Data("streamed".utf8)),
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(2, timeout: .seconds(30))
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        #expect(try Self.echoed(try #require(call.object as? Data)).body == "streamed")
        #expect(renewals.withLock { $0 } == 1)

        fixture.session.taskNeedNewBodyStream = nil
        let failing = CompletionLog()
        let orphan = try fixture.session.uploadTask(
            withStreamedRequest: Request(url: url, method: "POST"), bodyProvider: BodyStream(data: Data("once".utf8)),
            completionHandler: failing.handler)
        orphan.resume()
        try await fixture.recorder.waitForCompletions(3, timeout: .seconds(30))
        #expect(failing.all.count == 1)
        #expect(failing.all.first?.error?.code == .bodyStream)
        #expect(fixture.server.requests(forPath: "/echo").count == 2)  // the orphan never reached /echo
        try await fixture.tearDown()
    }

    @Test("a redirection hook that turns an upload's 307 into a GET without a body drops the upload's body")
    func hookDropsUploadBody() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        fixture.session.taskWillPerformHTTPRedirection = { _, _, proposed in
            var chosen = proposed
            chosen.method = "GET"
            chosen.body = nil
            return chosen
        }
        let url = Self.redirect(to: "/echo", status: 307, on: fixture.server)
        let request = Request(url: url, method: "POST", headers: ["Content-Type": "text/plain"])
        let (data, _) = try await fixture.session.upload(for: request, from: Data("uploaded".utf8))
        let echoed = try Self.echoed(data)
        // Before, the GET went out with the upload's body: the hook had no way to drop what it was not shown.
        #expect(echoed.method == "GET")
        #expect(echoed.body == "")
        #expect(echoed.headers["content-type"] == nil)
        #expect(fixture.server.requests(forPath: "/echo").first?.bodyByteCount == 0)
        try await fixture.tearDown()
    }

    @Test("the hook is shown the body the hop would send: an adapter's, not the request's as the caller made it")
    func hookShownAdaptedBody() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        fixture.session.interceptor = Interceptor(adapt: { request, _ in
            var request = request
            request.body = Data("adapted".utf8)
            return request
        })
        let shown = Locked<[String?]>([])
        fixture.session.taskWillPerformHTTPRedirection = { _, _, proposed in
            shown.withLock { $0.append(proposed.body.map { String(decoding: $0, as: UTF8.self) }) }
            return proposed
        }
        let request = Request(
            url: Self.redirect(to: "/echo", status: 307, on: fixture.server), method: "POST",
            body: Data("original".utf8))
        let (data, _) = try await fixture.session.data(for: request)
        #expect(try Self.echoed(data).body == "adapted")
        // Before, the hook saw "original", which no hop sent.
        #expect(shown.withLock { $0 } == ["adapted"])

        // An upload's body in memory is shown too; a 303 drops it, and the 307 after shows none.
        shown.withLock { $0 = [] }
        fixture.session.interceptor = nil
        let chain = Self.redirect(
            to: Self.redirect(to: "/echo", status: 307, on: fixture.server).absoluteString, status: 303,
            on: fixture.server)
        let (uploaded, _) = try await fixture.session.upload(
            for: Request(url: Self.redirect(to: chain.absoluteString, status: 307, on: fixture.server), method: "PUT"),
            from: Data("uploaded".utf8))
        #expect(try Self.echoed(uploaded).body == "")
        #expect(shown.withLock { $0 } == ["uploaded", nil, nil])
        try await fixture.tearDown()
    }

    @Test("a hook's request that carries the caller's Content-Length is framed by the engine: no length without a body")
    func hookRequestFramedByEngine() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        fixture.session.taskWillPerformHTTPRedirection = { task, _, proposed in
            // Keeps the POST, as a hook that starts from the task's own request does; the 302 dropped its body.
            var chosen = task.originalRequest
            chosen.url = proposed.url
            chosen.body = nil
            return chosen
        }
        let request = Request(
            url: Self.redirect(to: "/echo", status: 302, on: fixture.server), method: "POST",
            headers: ["Content-Length": "5"], body: Data("hello".utf8), timeoutInterval: 10)
        let (data, _) = try await fixture.session.data(for: request)
        let echoed = try Self.echoed(data)
        // Before, the caller's `Content-Length: 5` went out with no body, and the server waited for five bytes.
        #expect(echoed.method == "POST")
        #expect(echoed.body == "")
        #expect(echoed.headers["content-length"] ?? "0" == "0")
        try await fixture.tearDown()
    }

    @Test("a Location without a fragment keeps the request's; one with its own keeps that")
    func fragmentCarriedOver() throws {
        let base = try #require(URL(string: "http://127.0.0.1:8080/a?q=1#sec%202"))
        #expect(RedirectRules.target(of: "/b", relativeTo: base)?.absoluteString == "http://127.0.0.1:8080/b#sec%202")
        #expect(RedirectRules.target(of: "/b#own", relativeTo: base)?.absoluteString == "http://127.0.0.1:8080/b#own")
        let plain = try #require(URL(string: "http://127.0.0.1:8080/a"))
        #expect(RedirectRules.target(of: "c?x=1", relativeTo: plain)?.absoluteString == "http://127.0.0.1:8080/c?x=1")
    }

    @Test("the hook sees every hop with the proposed request; per-hop metrics are kept")
    func hookSeesEveryHop() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let seen = Locked<[(status: Int, from: String, to: String)]>([])
        fixture.session.taskWillPerformHTTPRedirection = { _, response, proposed in
            seen.withLock { $0.append((response.statusCode, response.url.path, proposed.url.path)) }
            return proposed
        }
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/redirect/3")))
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(task.error == nil)
        #expect(task.response?.statusCode == 200)
        #expect(task.response?.url.path == "/redirect/0")
        let hops = seen.withLock { $0 }
        #expect(hops.map(\.status) == [302, 302, 302])
        #expect(hops.map(\.from) == ["/redirect/3", "/redirect/2", "/redirect/1"])
        #expect(hops.map(\.to) == ["/redirect/2", "/redirect/1", "/redirect/0"])
        #expect(task.hopMetrics.count == 4)
        #expect(task.hopMetrics.map(\.redirectCount) == [0, 1, 2, 3])
        #expect(task.hopMetrics.last == task.metrics)
        #expect(task.metrics?.redirectCount == 3)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("the hook may modify the next request, or return nil to complete with the 3xx itself")
    func hookModifiesOrStops() async throws {
        let fixture = try await SessionFixture.make()
        fixture.session.taskWillPerformHTTPRedirection = { _, _, proposed in
            guard proposed.url.path == "/echo" else { return nil }
            var modified = proposed
            modified.headers.add(name: "X-Hop", value: "yes")
            return modified
        }
        let (data, _) = try await fixture.session.data(
            for: Request(url: Self.redirect(to: "/echo", status: 302, on: fixture.server)))
        #expect(try Self.echoed(data).headers["x-hop"] == "yes")

        let (body, response) = try await fixture.session.data(for: Request(url: fixture.server.url("/redirect/2")))
        #expect(response.statusCode == 302)
        #expect(response.headers["Location"] == "/redirect/1")
        #expect(String(decoding: body, as: UTF8.self) == "302 Found\n")
        #expect(fixture.server.requests(forPath: "/redirect/1").isEmpty)
        // One transfer, counted once: before, the 302's metrics were both its hop's and the final transfer's.
        let stopped = try fixture.session.dataTask(with: Request(url: fixture.server.url("/redirect/2")))
        stopped.resume()
        try await fixture.recorder.waitUntil {
            $0.contains { $0.kind == .complete && $0.taskIdentifier == stopped.taskIdentifier }
        }
        #expect(stopped.hopMetrics.count == 1)
        #expect(stopped.hopMetrics.first == stopped.metrics)
        try await fixture.tearDown()
    }

    @Test("with followsRedirects false the 3xx is the result and the hook is not called")
    func notFollowing() async throws {
        var configuration = SessionConfiguration()
        configuration.followsRedirects = false
        let fixture = try await SessionFixture.make(configuration: configuration)
        let calls = Locked(0)
        fixture.session.taskWillPerformHTTPRedirection = { _, _, proposed in
            calls.withLock { $0 += 1 }
            return proposed
        }
        let (_, response) = try await fixture.session.data(for: Request(url: fixture.server.url("/redirect/1")))
        #expect(response.statusCode == 302)
        #expect(calls.withLock { $0 } == 0)
        #expect(fixture.server.requests(forPath: "/redirect/0").isEmpty)
        try await fixture.tearDown()
    }

    @Test("credentials and a Host of the caller's are dropped on a hop to another origin, kept on a same-origin hop")
    func crossOriginDropsCredentials() async throws {
        let fixture = try await SessionFixture.make()
        let other = try await TestServer.start()
        let headers: HTTPHeaders = [
            "Authorization": "Bearer secret", "Cookie": "session=1", "Proxy-Authorization": "Basic eDp5", "X-Kept": "1",
            "Host": "first.test",
        ]
        _ = try await fixture.session.data(
            for: Request(
                url: Self.redirect(to: other.url("/echo").absoluteString, status: 302, on: fixture.server),
                headers: headers))
        let received = try #require(other.requests(forPath: "/echo").first)
        #expect(received.headerValue("Authorization") == nil)
        #expect(received.headerValue("Cookie") == nil)
        #expect(received.headerValue("Proxy-Authorization") == nil)
        #expect(received.headerValue("Host") == "127.0.0.1:\(other.port)")
        #expect(received.headerValue("X-Kept") == "1")

        let (data, _) = try await fixture.session.data(
            for: Request(url: Self.redirect(to: "/echo", status: 302, on: fixture.server), headers: headers))
        let echoed = try Self.echoed(data)
        #expect(echoed.headers["authorization"] == "Bearer secret")
        #expect(echoed.headers["cookie"] == "session=1")
        #expect(echoed.headers["host"] == "first.test")
        try await other.shutdown()
        try await fixture.tearDown()
    }

    @Test("a hook that moves a hop to another origin and edits its fields: the credentials it was shown stay behind")
    func hookMovingToAnotherOriginDropsShownCredentials() async throws {
        let fixture = try await SessionFixture.make()
        let other = try await TestServer.start()
        fixture.session.taskWillPerformHTTPRedirection = { _, _, proposed in
            var moved = proposed
            moved.url = other.url("/echo")
            moved.headers.add(name: "X-Hop", value: "1")
            // Chosen for the new origin: kept.
            moved.headers.replaceOrAdd(name: "Cookie", value: "chosen=1")
            return moved
        }
        let headers: HTTPHeaders = ["Authorization": "Bearer secret", "Cookie": "session=1", "X-Kept": "1"]
        _ = try await fixture.session.data(
            for: Request(url: Self.redirect(to: "/echo", status: 302, on: fixture.server), headers: headers))
        let received = try #require(other.requests(forPath: "/echo").first)
        #expect(received.headerValue("Authorization") == nil)
        #expect(received.headerValue("Cookie") == "chosen=1")
        #expect(received.headerValue("X-Hop") == "1")
        #expect(received.headerValue("X-Kept") == "1")
        try await other.shutdown()
        try await fixture.tearDown()
    }

    @Test("a download's file holds only the final response's body, never a 3xx's")
    func downloadSkipsRedirectBodies() async throws {
        let fixture = try await SessionFixture.make()
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/redirect/2")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        let file = try #require(call.fileURL)
        #expect(try String(contentsOf: file, encoding: .utf8) == "redirected\n")
        try? FileManager.default.removeItem(at: file)
        try await fixture.tearDown()
    }

    @Test("a cancel while the hook decides completes the task once with cancelled; the next hop is not sent")
    func cancelBetweenHops() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        fixture.session.taskWillPerformHTTPRedirection = { task, _, proposed in
            task.cancel()
            task.cancel()
            return proposed
        }
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/redirect/1")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        await fixture.session.engineBarrier()
        #expect(log.all.count == 1)
        #expect(log.all.first?.error?.code == .cancelled)
        #expect(task.state == .completed)
        #expect(fixture.server.requests(forPath: "/redirect/0").isEmpty)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        try await fixture.tearDown()
    }

    @Test("a suspend while the hook decides holds the next hop until resume")
    func suspendBetweenHops() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let decided = OneShot<Void>()
        fixture.session.taskWillPerformHTTPRedirection = { task, _, proposed in
            task.suspend()
            decided.send(())
            return proposed
        }
        let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/redirect/1")))
        task.resume()
        try await decided.value(timeout: .seconds(30))
        await fixture.session.engineBarrier()
        #expect(task.state == .suspended)
        #expect(fixture.server.requests(forPath: "/redirect/0").isEmpty)
        task.resume()
        try await fixture.recorder.waitForCompletions(1, timeout: .seconds(30))
        #expect(task.error == nil)
        #expect(task.response?.statusCode == 200)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .suspend, .resume, .complete])
        try await fixture.tearDown()
    }

    @Test("https → http is refused unless allowed; schemes outside allowedProtocols are refused")
    func redirectRefusals() throws {
        let secure = try #require(URL(string: "https://example.com/a"))
        let plain = try #require(URL(string: "http://example.com/b"))
        let refusal = RedirectRules.refusal(
            from: secure, to: plain, allowedProtocols: ["http", "https"], allowsInsecureRedirects: false)
        #expect(refusal?.code == .unsupportedURL)
        #expect(
            RedirectRules.refusal(
                from: secure, to: plain, allowedProtocols: ["http", "https"], allowsInsecureRedirects: true)
                == nil)
        #expect(SessionConfiguration().allowsInsecureRedirects == false)
        let file = try #require(URL(string: "file:///etc/passwd"))
        #expect(
            RedirectRules.refusal(
                from: plain, to: file, allowedProtocols: ["http", "https"], allowsInsecureRedirects: true)?
                .code == .unsupportedURL)
        #expect(RedirectRules.isSameOrigin(plain, try #require(URL(string: "http://example.com:80/c"))))
        #expect(!RedirectRules.isSameOrigin(plain, try #require(URL(string: "http://example.com:8080/c"))))
        #expect(!RedirectRules.isSameOrigin(plain, secure))
    }
}
