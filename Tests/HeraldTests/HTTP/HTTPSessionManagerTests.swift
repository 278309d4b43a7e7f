import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("HTTPSessionManager: base URL, verbs, progress, completion")
struct HTTPSessionManagerTests {
    @Test(
        "paths resolve against the base URL as in AFNetworking",
        arguments: [
            ("foo", "http://example.com/v1/foo"),
            ("foo?bar=baz", "http://example.com/v1/foo?bar=baz"),
            ("/foo", "http://example.com/foo"),
            ("foo/", "http://example.com/v1/foo/"),
            ("/foo/", "http://example.com/foo/"),
            ("http://example2.com/", "http://example2.com/"),
            ("", "http://example.com/v1/"),
            ("../foo", "http://example.com/foo"),
            ("?page=2", "http://example.com/v1/?page=2"),
        ])
    func resolution(path: String, expected: String) throws {
        // No traffic: resolution only. Both base spellings resolve alike (the slash is added).
        for base in ["http://example.com/v1/", "http://example.com/v1"] {
            let manager = HTTPSessionManager(
                baseURL: URL(string: base), session: SessionManager(notificationCenter: NotificationHub()))
            #expect(try manager.url(for: path).absoluteString == expected)
        }
    }

    @Test("a base URL gets a trailing slash only when it has a path without one")
    func baseNormalization() throws {
        let session = SessionManager(notificationCenter: NotificationHub())
        func base(_ text: String) -> String? {
            HTTPSessionManager(baseURL: URL(string: text), session: session).baseURL?.absoluteString
        }
        #expect(base("http://example.com/v1") == "http://example.com/v1/")
        #expect(base("http://example.com/v1/") == "http://example.com/v1/")
        #expect(base("http://example.com") == "http://example.com")
        #expect(base("http://example.com/a%20b?x=1") == "http://example.com/a%20b/?x=1")
        let rootless = HTTPSessionManager(baseURL: URL(string: "http://example.com"), session: session)
        #expect(try rootless.url(for: "foo").absoluteString == "http://example.com/foo")
    }

    @Test("without a base URL a relative path is refused with badURL; an absolute one is used as is")
    func noBaseURL() throws {
        let manager = HTTPSessionManager(session: SessionManager(notificationCenter: NotificationHub()))
        #expect(try manager.url(for: "http://127.0.0.1:1/x").absoluteString == "http://127.0.0.1:1/x")
        #expect(throws: HeraldError.self) { try manager.url(for: "users/1") }
        let error = #expect(throws: HeraldError.self) { _ = try manager.get("users/1") { _, _, _ in } }
        #expect(error?.code == .badURL)
        #expect(manager.session.tasks.isEmpty)
    }

    @Test("requests reach the server at the resolved paths")
    func resolvedOnTheWire() async throws {
        let fixture = try await HTTPFixture.make(basePath: "/v1")
        let log = CompletionLog()
        let tasks = [
            try fixture.manager.get("status/204", completionHandler: log.handler),
            try fixture.manager.get("/status/204", completionHandler: log.handler),
        ]
        try await fixture.recorder.waitForCompletions(2)
        #expect(Set(fixture.server.requests.map(\.path)) == ["/v1/status/204", "/status/204"])
        #expect(tasks.allSatisfy { $0.state == .completed })
        try await fixture.tearDown()
    }

    @Test("each verb resumes one task with its method; the timeline is resume then complete")
    func verbs() async throws {
        let fixture = try await HTTPFixture.make()
        let log = CompletionLog()
        let manager = fixture.manager
        let tasks: [DataTask] = [
            try manager.get("echo", parameters: ["v": "get"], completionHandler: log.handler),
            try manager.post("echo", parameters: ["v": "post"], completionHandler: log.handler),
            try manager.put("echo", parameters: ["v": "put"], completionHandler: log.handler),
            try manager.patch("echo", parameters: ["v": "patch"], completionHandler: log.handler),
            try manager.delete("echo", parameters: ["v": "delete"], completionHandler: log.handler),
            try manager.head("echo", parameters: ["v": "head"], completionHandler: log.handler),
        ]
        try await fixture.recorder.waitForCompletions(6)
        for task in tasks {
            #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        }
        let seen = Set(fixture.server.requests.map { "\($0.method) \($0.uri) \($0.bodyByteCount)" })
        #expect(
            seen == [
                "GET /echo?v=get 0", "POST /echo 6", "PUT /echo 5", "PATCH /echo 7", "DELETE /echo?v=delete 0",
                "HEAD /echo?v=head 0",
            ])
        #expect(log.all.count == 6)
        try await fixture.tearDown()
    }

    @Test("GET reports download progress and POST upload progress, each reaching the body's length")
    func progress() async throws {
        let fixture = try await HTTPFixture.make()
        let downloaded = Locked<[Int64]>([])
        let uploaded = Locked<[Int64]>([])
        let log = CompletionLog()
        fixture.session.responseSerializer = DataResponseSerializer()
        let get = try fixture.manager.get(
            "bytes/300000", progress: { progress in downloaded.withLock { $0.append(progress.completedUnitCount) } },
            completionHandler: log.handler)
        let text = String(repeating: "x", count: 200_000)
        let post = try fixture.manager.post(
            "status/204", parameters: ["text": .string(text)],
            progress: { progress in uploaded.withLock { $0.append(progress.completedUnitCount) } },
            completionHandler: log.handler)
        try await fixture.recorder.waitForCompletions(2)
        #expect(downloaded.withLock { $0.last } == 300_000)
        #expect(downloaded.withLock { $0 == $0.sorted() })
        #expect(uploaded.withLock { $0.last } == Int64("text=".count + 200_000))
        #expect(get.downloadProgress.completedUnitCount == 300_000)
        #expect(post.uploadProgress.completedUnitCount == Int64("text=".count + 200_000))
        #expect(log.all.allSatisfy { $0.error == nil })
        try await fixture.tearDown()
    }

    @Test("async forms return the session serializer's output; a 404 throws unacceptableStatusCode")
    func asyncForms() async throws {
        let fixture = try await HTTPFixture.make()
        let (object, response) = try await fixture.manager.get("json")
        #expect(response.statusCode == 200)
        #expect((object as? JSONValue)?["hello"] == "world")
        let (text, _) = try await fixture.manager.value("GET", "text", serializer: StringResponseSerializer())
        #expect(text == "Hello, Herald!\n")
        do {
            _ = try await fixture.manager.get("status/404")
            Issue.record("a 404 was a success")
        } catch {
            #expect(error.code == .unacceptableStatusCode)
        }
        try await fixture.recorder.waitForCompletions(3)
        try await fixture.tearDown()
    }

    @Test("the session's hooks and configuration apply to the manager's requests")
    func buildsOnTheSession() async throws {
        var configuration = SessionConfiguration()
        configuration.httpAdditionalHeaders = ["X-Session": "yes"]
        let fixture = try await HTTPFixture.make(configuration: configuration)
        let redirected = Locked(0)
        fixture.session.taskWillPerformHTTPRedirection = { _, _, proposed in
            redirected.withLock { $0 += 1 }
            return proposed
        }
        let result = try await fixture.manager.get("redirect-to", parameters: ["url": "/echo"])
        #expect(echoed(result)?.headers["x-session"] == "yes")
        #expect(redirected.withLock { $0 } == 1)
        try await fixture.tearDown()
    }
}
