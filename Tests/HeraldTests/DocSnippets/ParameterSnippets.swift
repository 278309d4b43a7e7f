import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

// The examples of the Herald DocC article "Making requests with parameters", of the migration guide's
// HTTP rows and of the README's HTTP section, run against a loopback server.

struct NewUser: Encodable {
    let name: String
    let admin: Bool
}

struct Receipt: Decodable, Sendable {
    let method: String
    let bodyLength: Int
}

@Suite("Making requests with parameters: snippets")
struct ParameterSnippets {
    @Test("a manager with a base URL: GET with a query, form and JSON bodies, a multipart upload")
    func requestsWithParameters() async throws {
        let server = try await TestServer.start()
        let scratch = try ScratchDirectory()
        // doc-line: let photoURL = URL(fileURLWithPath: "/var/tmp/photo.jpg")
        let photoURL = scratch.url.appendingPathComponent("photo.jpg")
        // doc-line: let videoURL = URL(fileURLWithPath: "/var/tmp/clip.mp4")
        let videoURL = scratch.url.appendingPathComponent("clip.mp4")
        let videoLength: Int64 = 50_000  // exactly the bytes the stream yields
        let makeVideoStream: @Sendable () -> BodyStream = {
            // Any BodyStream; this one reads a file, a chunk whenever the connection can take one.
            let file = FileHandle(forReadingAtPath: videoURL.path)
            return BodyStream { buffer in
                guard let chunk = try file?.read(upToCount: buffer.count), !chunk.isEmpty else { return 0 }
                return chunk.copyBytes(to: buffer)
            }
        }
        try Data(TestServer.expectedBytes(in: 0..<70_000)).write(to: photoURL)
        try Data(TestServer.expectedBytes(in: 0..<Int(videoLength))).write(to: videoURL)

        // doc-line: let api = HTTPSessionManager(baseURL: URL(string: "https://api.example.com/v1")!)
        let api = HTTPSessionManager(baseURL: server.url("/v1"))
        // doc-line: let (json, response) = try await api.get("search", parameters: ["q": "swift", "page": 2])
        let (json, response) = try await api.get("/echo", parameters: ["q": "swift", "page": 2])
        // GET https://api.example.com/v1/search?page=2&q=swift
        #expect(response.statusCode == 200)
        #expect((json as? JSONValue)?.echoed?.uri == "/echo?page=2&q=swift")
        #expect(api.baseURL?.absoluteString == server.url("/v1/").absoluteString)

        // doc-line: let (greeting, _) = try await api.get("greeting", as: Greeting.self)  // {"hello":"world","n":1}
        let (greeting, _) = try await api.get("/json", as: Greeting.self)  // {"hello":"world","n":1}
        let ada = NewUser(name: "Ada", admin: true)
        // doc-line: let (receipt, _) = try await api.send("PUT", "users/1", json: ada, as: Receipt.self)
        let (receipt, _) = try await api.send("PUT", "/echo", json: ada, as: Receipt.self)
        print(greeting.hello, receipt.method)  // world PUT
        #expect(greeting.hello == "world")
        #expect(receipt.method == "PUT")
        #expect(receipt.bodyLength == #"{"admin":true,"name":"Ada"}"#.utf8.count)

        // application/x-www-form-urlencoded: name=Ada%20Lovelace&tags%5B%5D=math&tags%5B%5D=engines
        // doc-line: _ = try await api.post("users", parameters: ["name": "Ada Lovelace", "tags": ["math", "engines"]])
        let form = try await api.post("/echo", parameters: ["name": "Ada Lovelace", "tags": ["math", "engines"]])
        #expect(echoed(form)?.body == "name=Ada%20Lovelace&tags%5B%5D=math&tags%5B%5D=engines")

        // application/json, from any Encodable
        // doc-line: _ = try await api.send("POST", "users", json: NewUser(name: "Ada", admin: false))
        let json2 = try await api.send("POST", "/echo", json: NewUser(name: "Ada", admin: false))
        #expect(echoed(json2)?.body == #"{"admin":false,"name":"Ada"}"#)

        // or the parameters of POST, PUT and PATCH as JSON (GET, HEAD and DELETE keep theirs in the query)
        api.requestSerializer = JSONRequestSerializer()
        let json3 = try await api.post("/echo", parameters: ["name": "Ada"])
        #expect(echoed(json3)?.headers["content-type"] == "application/json")

        // doc-line: let (result, _) = try await api.post("uploads", parameters: ["album": "holidays"]) { form in
        let (result, _) = try await api.post("/multipart", parameters: ["album": "holidays"]) { form in
            try form.append(fileURL: photoURL, name: "photo")  // photo.jpg, image/jpeg
            try form.append(Data("Sunset".utf8), name: "caption")
            try form.append(length: videoLength, name: "clip", fileName: "clip.mp4") {
                makeVideoStream()  // a fresh BodyStream each time the body is sent
            }
        }
        let parts = try #require((result as? JSONValue)?.echoedMultipart?.parts)
        #expect(parts.map(\.name) == ["album", "photo", "caption", "clip"])
        #expect(parts.map(\.contentType) == [nil, "image/jpeg", nil, "video/mp4"])
        #expect(parts.map(\.size) == [8, 70_000, 6, 50_000])

        do {
            // doc-line: _ = try api.request("POST", "users", parameters: ["ratio": .number(.nan)])
            _ = try api.request("POST", "/echo", parameters: ["ratio": .number(.nan)])
        } catch {
            // error.code == .invalidRequest: nothing was sent
        }
        #expect {
            try api.request("POST", "/echo", parameters: ["ratio": .number(.nan)])
        } throws: { error in
            (error as? HeraldError)?.code == .invalidRequest
        }
        #expect(server.requests.count == 7)

        api.session.invalidate(cancelingTasks: true)
        scratch.remove()
        try await server.shutdown()
    }

    @Test("a User-Agent of the app's own, before Herald's")
    func userAgent() async throws {
        let server = try await TestServer.start()
        var configuration = SessionConfiguration()
        configuration.httpAdditionalHeaders = ["User-Agent": "MyApp/1.2 " + HeraldVersion.userAgent]
        let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
        _ = try await session.data(for: Request(url: server.url("/status/204")))
        #expect(server.requests.first?.headerValue("User-Agent") == "MyApp/1.2 " + HeraldVersion.userAgent)
        session.invalidate(cancelingTasks: true)
        try await server.shutdown()
    }
}
