import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// The `/json` body, `{"hello":"world","n":1}`.
private struct Hello: Decodable, Sendable, Equatable {
    let hello: String
    let n: Int
}

private struct Rename: Encodable {
    let name: String
}

@Suite("HTTPSessionManager and SessionManager: typed async forms")
struct TypedAsyncTests {
    @Test("each typed verb sends its method and parameters and decodes the body")
    func verbs() async throws {
        let fixture = try await HTTPFixture.make()
        let manager = fixture.manager
        let (get, getResponse) = try await manager.get("echo", parameters: ["q": "swift"], as: EchoedRequest.self)
        #expect(getResponse.statusCode == 200)
        #expect(get.method == "GET")
        #expect(get.uri == "/echo?q=swift")
        let post = try await manager.post("echo", parameters: ["v": "post"], as: EchoedRequest.self).0
        let put = try await manager.put("echo", parameters: ["v": "put"], as: EchoedRequest.self).0
        let patch = try await manager.patch("echo", parameters: ["v": "patch"], as: EchoedRequest.self).0
        let delete = try await manager.delete("echo", parameters: ["v": "delete"], as: EchoedRequest.self).0
        #expect([post, put, patch].map(\.method) == ["POST", "PUT", "PATCH"])
        #expect([post, put, patch].map(\.body) == ["v=post", "v=put", "v=patch"])
        #expect(delete.method == "DELETE")
        #expect(delete.uri == "/echo?v=delete")
        let other = try await manager.response("OPTIONS", "echo", headers: ["X-Probe": "1"], as: EchoedRequest.self)
        #expect(other.0.method == "OPTIONS")
        #expect(other.0.headers["x-probe"] == "1")
        let greeting = try await manager.get("json", as: Hello.self)
        #expect(greeting.0 == Hello(hello: "world", n: 1))
        try await fixture.tearDown()
    }

    @Test("send(_:_:json:headers:as:) sends a JSON body and decodes the answer in one call")
    func sendJSON() async throws {
        let fixture = try await HTTPFixture.make()
        let (echoed, response) = try await fixture.manager.send(
            "PUT", "echo", json: Rename(name: "Ada"), headers: ["X-Trace": "t1"], as: EchoedRequest.self)
        #expect(response.statusCode == 200)
        #expect(echoed.method == "PUT")
        #expect(echoed.body == #"{"name":"Ada"}"#)
        #expect(echoed.headers["content-type"] == "application/json")
        #expect(echoed.headers["x-trace"] == "t1")
        try await fixture.tearDown()
    }

    @Test("the typed multipart post streams the form and decodes the answer")
    func multipart() async throws {
        let fixture = try await HTTPFixture.make()
        let (form, response) = try await fixture.manager.post(
            "multipart", parameters: ["album": "holidays"], as: EchoedMultipart.self
        ) { form in
            try form.append(Data("Sunset".utf8), name: "caption")
        }
        #expect(response.statusCode == 200)
        #expect(form.parts.map(\.name) == ["album", "caption"])
        #expect(form.parts.map(\.size) == [8, 6])
        try await fixture.tearDown()
    }

    @Test("validation is that of DecodableResponseSerializer: status, content type, decoding")
    func validation() async throws {
        let fixture = try await HTTPFixture.make()
        let manager = fixture.manager
        let notFound = await #expect(throws: HeraldError.self) {
            _ = try await manager.get("status/404", as: Hello.self)
        }
        #expect(notFound?.code == .unacceptableStatusCode)
        #expect(notFound?.response?.statusCode == 404)
        let text = await #expect(throws: HeraldError.self) { _ = try await manager.get("text", as: String.self) }
        #expect(text?.code == .unacceptableContentType)
        let shape = await #expect(throws: HeraldError.self) { _ = try await manager.get("json", as: [Int].self) }
        #expect(shape?.code == .serializationFailed)
        #expect(shape?.underlying is DecodingError)
        // No content decodes as JSON null: an Optional type accepts it.
        let (nothing, response) = try await manager.delete("status/204", as: Hello?.self)
        #expect(nothing == nil)
        #expect(response.statusCode == 204)
        // Building the request fails before anything is sent.
        let baseless = HTTPSessionManager(session: fixture.session)
        let bad = await #expect(throws: HeraldError.self) { _ = try await baseless.get("users/1", as: Hello.self) }
        #expect(bad?.code == .badURL)
        try await fixture.tearDown()
    }

    @Test("the typed forms ignore the session's serializer; the untyped ones still use it and are still chosen")
    func untypedStillChosen() async throws {
        let fixture = try await HTTPFixture.make()
        fixture.session.responseSerializer = DataResponseSerializer()
        let typed = try await fixture.manager.get("json", as: Hello.self)
        #expect(typed.0.n == 1)
        // Without `as:` the untyped form is the one that type-checks, returning the session serializer's output.
        let untyped = try await fixture.manager.get("json")
        let sameShape: (any Sendable, HTTPResponse) = untyped
        #expect(sameShape.0 is Data)
        let posted = try await fixture.manager.post("echo", parameters: ["a": 1])
        #expect(posted.0 is Data)
        let sent = try await fixture.manager.send("PUT", "echo", json: Rename(name: "x"))
        #expect(sent.0 is Data)
        try await fixture.tearDown()
    }

    @Test("SessionManager.decode(_:for:decoder:) decodes with the given decoder")
    func sessionDecode() async throws {
        let fixture = try await SessionFixture.make()
        let request = Request(url: fixture.server.url("/json"))
        let (greeting, response) = try await fixture.session.decode(Hello.self, for: request)
        #expect(greeting == Hello(hello: "world", n: 1))
        #expect(response.statusCode == 200)

        struct Shouted: Decodable, Sendable { let HELLO: String }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in ShoutedKey(path.last!.stringValue.uppercased()) }
        let shouted = try await fixture.session.decode(Shouted.self, for: request, decoder: decoder)
        #expect(shouted.0.HELLO == "world")

        let failed = await #expect(throws: HeraldError.self) {
            _ = try await fixture.session.decode(Hello.self, for: Request(url: fixture.server.url("/status/500")))
        }
        #expect(failed?.code == .unacceptableStatusCode)
        try await fixture.tearDown()
    }

    @Test("cancelling the Swift task cancels a typed call's transfer and throws cancelled")
    func cancellation() async throws {
        let fixture = try await HTTPFixture.make()
        let manager = fixture.manager
        let call = startCall { () async throws(HeraldError) in try await manager.get("fault/stall", as: Hello.self) }
        try await fixture.server.waitForRequests(count: 1)
        call.cancel()
        let result = try await outcome(of: call)
        if case .failure(let error) = result {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("a cancelled typed call returned \(result)")
        }
        try await fixture.tearDown()
    }
}

private struct ShoutedKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
