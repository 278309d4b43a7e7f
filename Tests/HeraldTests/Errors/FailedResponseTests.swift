import Foundation
import Herald
import HeraldTesting
import Testing

@Suite("A failed response keeps what a caller needs: the head, the body, the metrics")
struct FailedResponseTests {
    @Test("data(for:validation:) on a 404 throws unacceptableStatusCode with the response and its body")
    func statusWithBody() async throws {
        let fixture = try await SessionFixture.make()
        let error = await #expect(throws: HeraldError.self) {
            try await fixture.session.data(
                for: Request(url: fixture.server.url("/status/404")), validation: .default)
        }
        #expect(error?.code == .unacceptableStatusCode)
        #expect(error?.statusCode == 404)
        #expect(error?.response?.statusCode == 404)
        #expect(error?.response?.mimeType == "text/plain")
        #expect(error?.responseBody.map { String(decoding: $0, as: UTF8.self) } == "404 Not Found\n")
        try await fixture.tearDown()
    }

    @Test("data(for:validation:) passes what the check accepts, unchanged")
    func accepted() async throws {
        let fixture = try await SessionFixture.make()
        let (body, response) = try await fixture.session.data(
            for: Request(url: fixture.server.url("/json")), validation: .json)
        #expect(response.statusCode == 200)
        #expect(!body.isEmpty)
        try await fixture.tearDown()
    }

    @Test("a content type the check refuses: unacceptableContentType, with the body")
    func contentType() async throws {
        let fixture = try await SessionFixture.make()
        let error = await #expect(throws: HeraldError.self) {
            try await fixture.session.data(for: Request(url: fixture.server.url("/text")), validation: .json)
        }
        #expect(error?.code == .unacceptableContentType)
        #expect(error?.responseBody.map { String(decoding: $0, as: UTF8.self) } == "Hello, Herald!\n")
        try await fixture.tearDown()
    }

    @Test("the serializer's refusal on the completion path keeps the response, the body and the metrics")
    func serializerRefusal() async throws {
        let fixture = try await SessionFixture.make()
        let error = await #expect(throws: HeraldError.self) {
            try await fixture.session.responseObject(for: Request(url: fixture.server.url("/status/422")))
        }
        #expect(error?.code == .unacceptableStatusCode)
        #expect(error?.response?.statusCode == 422)
        #expect(error?.responseBody.map { String(decoding: $0, as: UTF8.self) } == "422 Unprocessable Entity\n")
        #expect(error?.metrics != nil)
        try await fixture.tearDown()
    }

    @Test("only the first maximumKeptBodyLength bytes of a large failed body are kept")
    func bounded() async throws {
        let fixture = try await SessionFixture.make()
        let error = await #expect(throws: HeraldError.self) {
            try await fixture.session.data(
                for: Request(url: fixture.server.url("/bytes/\(3 << 20)")),
                validation: ResponseValidation(acceptableStatusCodes: [201]))
        }
        #expect(error?.code == .unacceptableStatusCode)
        #expect(error?.responseBody?.count == HeraldError.maximumKeptBodyLength)
        try await fixture.tearDown()
    }

    @Test("bytes(for:validation:) on a HEAD checks no content type: the answer has no body to describe")
    func streamedHeadValidation() async throws {
        let fixture = try await SessionFixture.make()
        // A text/html head declaring a body (the GET's), which a HEAD never carries: `.json` accepts it.
        let (response, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/html"), method: "HEAD"), validation: .json)
        #expect(response.statusCode == 200)
        var received = 0
        for try await chunk in body { received += chunk.count }
        #expect(received == 0)
        try await fixture.recorder.waitForCompletions(1)
        try await fixture.tearDown()
    }

    @Test("bytes(for:validation:) refuses a head before any byte is handed over, keeping the body's start")
    func streamedRefusal() async throws {
        let fixture = try await SessionFixture.make()
        let error = await #expect(throws: HeraldError.self) {
            try await fixture.session.bytes(
                for: Request(url: fixture.server.url("/status/503")), validation: .default)
        }
        #expect(error?.code == .unacceptableStatusCode)
        #expect(error?.response?.statusCode == 503)
        #expect(error?.responseBody.map { String(decoding: $0, as: UTF8.self) } == "503 Service Unavailable\n")
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.completions.count == 1)

        let (response, body) = try await fixture.session.bytes(
            for: Request(url: fixture.server.url("/bytes/4096")), validation: .default)
        #expect(response.statusCode == 200)
        var count = 0
        for try await chunk in body { count += chunk.count }
        #expect(count == 4096)
        try await fixture.tearDown()
    }

    @Test("bytes(for:validation:) cancelled while it reads a refused response's body throws cancelled, not the refusal")
    func streamedRefusalCancelled() async throws {
        let fixture = try await SessionFixture.make()
        let headArrived = OneShot<Void>()
        fixture.session.dataTaskDidReceiveResponse = { _, _ in
            headArrived.send(())
            return .allow
        }
        let session = fixture.session
        let url = fixture.server.url("/events/5?gate=never")
        let call = Task { () async throws -> Void in
            _ = try await session.bytes(
                for: Request(url: url), validation: ResponseValidation(acceptableContentTypes: ["application/json"]))
        }
        try await headArrived.value(timeout: .seconds(20))
        // The body waits at a gate that never opens: the call is reading it for the error, up to keptBodyWait.
        call.cancel()
        let result = await call.result
        #expect(throws: HeraldError.self) { try result.get() }
        // Before, the caller's cancellation was swallowed and the refusal thrown: a cancel counted as a server fault.
        if case .failure(let error) = result { #expect((error as? HeraldError)?.code == .cancelled, "\(error)") }
        try await fixture.recorder.waitForCompletions(1)
        try await fixture.tearDown()
    }

    @Test("bytes(for:validation:) refusing a body that never ends throws after keptBodyWait, keeping what came")
    func streamedRefusalOfEndlessBody() async throws {
        let fixture = try await SessionFixture.make()
        let start = ContinuousClock.now
        // An event stream whose body waits at a gate that never opens, where JSON was expected.
        let error = await #expect(throws: HeraldError.self) {
            try await fixture.session.bytes(
                for: Request(url: fixture.server.url("/events/5?gate=never")),
                validation: ResponseValidation(acceptableContentTypes: ["application/json"]))
        }
        // Before, the call waited for the body's first MiB or its end: here, the request's 60 s idle timeout.
        #expect(ContinuousClock.now - start < .seconds(15))
        #expect(error?.code == .unacceptableContentType)
        #expect(error?.response?.statusCode == 200)
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.completions.first?.error?.code == .cancelled)
        try await fixture.tearDown()
    }
}
