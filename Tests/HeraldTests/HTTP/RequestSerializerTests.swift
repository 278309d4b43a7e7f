import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("Request serializers against the echoing test server")
struct RequestSerializerTests {
    @Test("GET puts the parameters in the query, AF-encoded, after the URL's own query")
    func getQuery() async throws {
        let fixture = try await HTTPFixture.make()
        let plain = try await fixture.manager.get("echo", parameters: ["q": "swift testing", "tags": ["a", "b"]])
        #expect(echoed(plain)?.uri == "/echo?q=swift%20testing&tags%5B%5D=a&tags%5B%5D=b")
        #expect(echoed(plain)?.method == "GET")
        #expect(echoed(plain)?.bodyLength == 0)
        let appended = try await fixture.manager.get("echo?page=2", parameters: ["sort": "name"])
        #expect(echoed(appended)?.uri == "/echo?page=2&sort=name")
        // An empty query: the pairs follow the `?` directly.
        let empty = try await fixture.manager.get("echo?", parameters: ["sort": "name"])
        #expect(echoed(empty)?.uri == "/echo?sort=name")
        let none = try await fixture.manager.get("echo", parameters: [:])
        #expect(echoed(none)?.uri == "/echo")
        try await fixture.tearDown()
    }

    @Test("DELETE puts the parameters in the query; PUT and PATCH in a form body")
    func methodsAndDestinations() async throws {
        let fixture = try await HTTPFixture.make()
        let delete = try await fixture.manager.delete("echo", parameters: ["id": 7])
        #expect(echoed(delete)?.method == "DELETE")
        #expect(echoed(delete)?.uri == "/echo?id=7")
        #expect(echoed(delete)?.bodyLength == 0)
        for (method, result) in [
            ("PUT", try await fixture.manager.put("echo", parameters: ["name": "Ada Lovelace", "admin": true])),
            ("PATCH", try await fixture.manager.patch("echo", parameters: ["name": "Ada Lovelace", "admin": true])),
        ] {
            let request = try #require(echoed(result))
            #expect(request.method == method)
            #expect(request.uri == "/echo")
            #expect(request.body == "admin=1&name=Ada%20Lovelace")
            #expect(request.headers["content-type"] == "application/x-www-form-urlencoded")
            #expect(request.headers["content-length"] == "\(request.body.utf8.count)")
        }
        try await fixture.tearDown()
    }

    @Test("the methods that put their parameters in the query are matched ignoring case, as the request's are")
    func methodSetIgnoresCase() throws {
        let request = Request(url: URL(string: "http://127.0.0.1/items")!)
        let form = try FormRequestSerializer(methodsEncodingParametersInURI: ["get"])
            .serialize(request, parameters: ["q": "a"])
        // Before, a lower-case set sent a GET's parameters as a form body.
        #expect(form.url.query == "q=a")
        #expect(form.body == nil)
        let json = try JSONRequestSerializer(methodsEncodingParametersInURI: ["get"]).serialize(
            request, parameters: ["q": "a"])
        #expect(json.url.query == "q=a")
    }

    @Test("a form POST keeps a Content-Type the caller set")
    func formKeepsCallerContentType() async throws {
        let fixture = try await HTTPFixture.make()
        let result = try await fixture.manager.post(
            "echo", parameters: ["a": "b"],
            headers: ["Content-Type": "application/x-www-form-urlencoded; charset=utf-8"])
        #expect(echoed(result)?.headers["content-type"] == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(echoed(result)?.body == "a=b")
        try await fixture.tearDown()
    }

    @Test("the JSON serializer sends the parameters as a sorted JSON body, and GET still uses the query")
    func jsonBody() async throws {
        let fixture = try await HTTPFixture.make(requestSerializer: JSONRequestSerializer())
        let parameters: JSONValue = ["name": "Ada", "scores": [1, 2.5], "extra": ["note": nil, "ok": true]]
        let result = try await fixture.manager.post("echo", parameters: parameters)
        let request = try #require(echoed(result))
        #expect(request.headers["content-type"] == "application/json")
        let sent = try JSONDecoder().decode(JSONValue.self, from: Data(request.body.utf8))
        #expect(sent == parameters)
        let keys = ["\"extra\"", "\"name\"", "\"scores\""].map { request.body.range(of: $0)?.lowerBound }
        #expect(keys.compactMap { $0 } == keys.compactMap { $0 }.sorted() && keys.allSatisfy { $0 != nil })
        let get = try await fixture.manager.get("echo", parameters: ["a": 1])
        #expect(echoed(get)?.uri == "/echo?a=1")
        #expect(echoed(get)?.bodyLength == 0)
        try await fixture.tearDown()
    }

    struct Signup: Codable, Equatable {
        var email: String
        var age: Int
        var tags: [String]
    }

    @Test("an Encodable value is sent as the JSON body")
    func encodableBody() async throws {
        let fixture = try await HTTPFixture.make()
        let value = Signup(email: "ada@example.com", age: 36, tags: ["math", "engines"])
        let result = try await fixture.manager.send("PUT", "echo", json: value)
        let request = try #require(echoed(result))
        #expect(request.method == "PUT")
        #expect(request.headers["content-type"] == "application/json")
        #expect(request.body == #"{"age":36,"email":"ada@example.com","tags":["math","engines"]}"#)
        try await fixture.tearDown()
    }

    struct Measurement: Encodable {
        var ratio: Double
    }

    @Test("non-encodable parameters throw invalidRequest before a task exists: nothing sent, nothing posted")
    func badParametersSendNothing() async throws {
        let fixture = try await HTTPFixture.make(requestSerializer: JSONRequestSerializer())
        await #expect(throws: HeraldError.self) {
            try await fixture.manager.post("echo", parameters: ["r": .number(.nan)])
        }
        do {
            _ = try fixture.manager.request("POST", "echo", parameters: ["deep": ["r": .number(.infinity)]])
            Issue.record("an infinite number was encoded")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("$.deep.r"))
        }
        do {
            _ = try await fixture.manager.send("POST", "echo", json: Measurement(ratio: .nan))
            Issue.record("a NaN was encoded")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.underlying is EncodingError)
        }
        fixture.manager.requestSerializer = FormRequestSerializer()
        do {
            _ = try fixture.manager.get("echo", parameters: ["r": .number(.nan)]) { _, _, _ in }
            Issue.record("a NaN was put in a query")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        do {
            _ = try fixture.manager.request("GET", "echo", parameters: ["just", "an", "array"])
            Issue.record("an array was accepted as query parameters")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        #expect(fixture.session.tasks.isEmpty)
        #expect(fixture.recorder.timeline.isEmpty)
        #expect(fixture.server.requestCount == 0)
        try await fixture.tearDown()
    }

    @Test("a POST without parameters is sent as AF sends it: an empty form body with its Content-Type")
    func emptyParametersPost() async throws {
        let fixture = try await HTTPFixture.make()
        let request = try #require(echoed(try await fixture.manager.post("echo")))
        #expect(request.method == "POST")
        #expect(request.headers["content-type"] == "application/x-www-form-urlencoded")
        #expect(request.headers["content-length"] == "0")
        #expect(request.bodyLength == 0)
        // GET, HEAD and DELETE carry no body, parameters or not.
        let get = try #require(echoed(try await fixture.manager.get("echo")))
        #expect(get.headers["content-type"] == nil && get.bodyLength == 0)
        try await fixture.tearDown()
    }

    @Test("without parameters: the option off sends neither, a body of the caller's own stays, JSON adds nothing")
    func emptyParametersChoices() throws {
        let url = URL(string: "http://127.0.0.1/echo")!
        let post = Request(url: url, method: "POST")
        let form = try FormRequestSerializer().serialize(post, parameters: nil)
        #expect(form.body == Data() && form.headers["Content-Type"] == "application/x-www-form-urlencoded")
        let put = try FormRequestSerializer().serialize(Request(url: url, method: "put"), parameters: nil)
        #expect(put.body == Data() && put.headers["Content-Type"] == "application/x-www-form-urlencoded")

        let off = try FormRequestSerializer(sendsEmptyFormWithoutParameters: false).serialize(post, parameters: nil)
        #expect(off.body == nil && off.headers["Content-Type"] == nil)

        let own = Request(url: url, method: "POST", headers: ["Content-Type": "text/plain"], body: Data("hi".utf8))
        #expect(try FormRequestSerializer().serialize(own, parameters: nil) == own)
        let delete = Request(url: url, method: "DELETE")
        #expect(try FormRequestSerializer().serialize(delete, parameters: nil) == delete)
        // AF's JSON serializer sets a body only for parameters it was given.
        #expect(try JSONRequestSerializer().serialize(post, parameters: nil) == post)
    }
}
