import Foundation
import HeraldTesting
import Testing

@testable import Herald

@Suite("A request as a curl command line, credentials redacted")
struct CURLDescriptionTests {
    @Test("method, headers, body and URL, each quoted for the shell; secrets read ***")
    func request() throws {
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer s3cr3t")
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "X-Note", value: "it's here")
        let request = Request(
            url: try #require(URL(string: "https://alice:pa55@api.example/v1/items?q=1")), method: "PUT",
            headers: headers, body: Data(#"{"name":"O'Hara"}"#.utf8))
        let description = request.curlDescription
        #expect(
            description == """
                curl \\
                    -X 'PUT' \\
                    -H 'Authorization: ***' \\
                    -H 'Content-Type: application/json' \\
                    -H 'X-Note: it'\\''s here' \\
                    --data-raw '{"name":"O'\\''Hara"}' \\
                    'https://***:***@api.example/v1/items?q=1'
                """)
        #expect(!description.contains("s3cr3t"))
        #expect(!description.contains("pa55"))
    }

    @Test("a field sent empty is written Name; as curl sends it empty, not Name: which curl reads as removing it")
    func emptyField() throws {
        let request = Request(
            url: try #require(URL(string: "http://127.0.0.1/")), headers: ["User-Agent": "", "X-Blank": " "])
        let description = request.curlDescription
        #expect(description.contains("-H 'User-Agent;'"))
        #expect(description.contains("-H 'X-Blank;'"))
        #expect(!description.contains("User-Agent: "))
    }

    @Test("GET needs no -X, POST with a body neither; a binary body is read from a file, a text body sent as written")
    func impliedMethods() throws {
        let url = try #require(URL(string: "http://127.0.0.1:8080/"))
        #expect(Request(url: url).curlDescription == "curl \\\n    'http://127.0.0.1:8080/'")
        let binary = Request(url: url, method: "POST", body: Data([0xFF, 0xFE, 0x00]))
        #expect(!binary.curlDescription.contains("-X"))
        // The note is a line of its own before the command: after an option it would swallow the `\` that
        // continues the command, and the shell would run `curl` without its URL.
        #expect(
            binary.curlDescription == "# The body: 3 bytes of binary data, not shown; save them as body.bin.\n"
                + "curl \\\n    --data-binary @body.bin \\\n    'http://127.0.0.1:8080/'")
        // A text body starting with `@` is sent as written, not read as a file's name.
        #expect(
            Request(url: url, method: "POST", body: Data("@channel deployed".utf8)).curlDescription
                == "curl \\\n    --data-raw '@channel deployed' \\\n    'http://127.0.0.1:8080/'")
        // `-X HEAD` would have curl wait for the body the answer's Content-Length announces.
        #expect(
            Request(url: url, method: "HEAD").curlDescription == "curl \\\n    --head \\\n    'http://127.0.0.1:8080/'")
    }

    @Test("the session's form adds its headers, its User-Agent and a redacted Cookie when it holds cookies")
    func session() throws {
        var configuration = SessionConfiguration.default
        configuration.httpAdditionalHeaders = ["X-App": "demo"]
        let store = CookieStore()
        configuration.httpCookieStore = store
        let session = SessionManager(configuration: configuration)
        defer { session.invalidate(cancelingTasks: true) }
        let url = try #require(URL(string: "http://127.0.0.1:8080/items"))
        store.store(setCookieFields: ["session=abc123; Path=/"], from: url)
        let description = session.curlDescription(for: Request(url: url))
        #expect(description.contains("-H 'X-App: demo'"))
        #expect(description.contains("-H 'User-Agent: \(DefaultHeaders.userAgent)'"))
        #expect(description.contains("-H 'Cookie: ***'"))
        #expect(!description.contains("abc123"))
    }
}
