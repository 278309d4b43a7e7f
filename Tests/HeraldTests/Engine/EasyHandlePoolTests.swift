import CCurl
import Foundation
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("Easy handle reuse")
struct EasyHandlePoolTests {
    @Test("a pool hands back the handle given to it, keeps at most its capacity, and frees all once closed")
    func poolKeepsAndFrees() throws {
        let pool = EasyHandlePool(capacity: 2)
        #expect(pool.take() == nil)
        let first = try #require(curl_easy_init())
        let second = try #require(curl_easy_init())
        let third = try #require(curl_easy_init())
        #expect(Set([first, second, third]).count == 3)
        pool.give(first, profile: nil)
        pool.give(second, profile: nil)
        pool.give(third, profile: nil)  // over capacity: freed
        #expect(pool.idleCount == 2)
        let reused = try #require(pool.take())
        #expect(reused.easy == second || reused.easy == first)
        #expect(reused.profile == nil)
        #expect(pool.idleCount == 1)
        pool.close()
        #expect(pool.idleCount == 0)
        pool.give(reused.easy, profile: nil)  // closed: freed, not kept
        #expect(pool.idleCount == 0)
    }

    @Test("a session's finished transfers report their metrics and leave their handle in the pool")
    func metricsAfterHandOver() async throws {
        let fixture = try await SessionFixture.make()
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/bytes/100")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        // The session's default serializer reads JSON, so these bytes fail it; the transfer itself succeeded.
        #expect(try #require(log.all.first).response?.statusCode == 200)
        let metrics = try #require(task.metrics)
        #expect(metrics.responseBodyBytes == 100)
        #expect(metrics.remotePort == fixture.server.port)
        #expect(fixture.session.multi?.easyHandles.idleCount == 1)
        try await fixture.tearDown()
    }

    @Test("a reused handle carries nothing over: method, body, HEAD and headers are each request's own")
    func reusedHandleStartsClean() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let echo = fixture.server.url("/echo")
        func echoed(_ data: Data) throws -> EchoedRequest { try JSONDecoder().decode(EchoedRequest.self, from: data) }

        var put = Request(url: echo, method: "PUT", headers: ["X-Only-First": "1"])
        put.timeoutInterval = 5
        let (putData, _) = try await session.upload(for: put, from: Data("first body".utf8))
        let putEcho = try echoed(putData)
        #expect(putEcho.method == "PUT" && putEcho.body == "first body" && putEcho.headers["x-only-first"] == "1")

        let (headData, head) = try await session.data(for: Request(url: echo, method: "HEAD"))
        #expect(head.statusCode == 200 && headData.isEmpty)

        let (getData, _) = try await session.data(for: Request(url: echo))
        let getEcho = try echoed(getData)
        #expect(getEcho.method == "GET")
        #expect(getEcho.bodyLength == 0)
        #expect(getEcho.headers["x-only-first"] == nil)
        #expect(getEcho.headers["content-length"] == nil && getEcho.headers["transfer-encoding"] == nil)

        // One request at a time: every transfer after the first ran on the first one's handle.
        #expect(session.multi?.easyHandles.idleCount == 1)
        try await fixture.tearDown()
    }

    @Test("requests with the same options reuse a handle's settings, and each still sends its own URL and headers")
    func sameProfileSetsOnlyItsOwnOptions() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let fields: [[String: String]] = [["X-First": "1"], [:], ["X-Third": "3", "X-Also": "yes"]]
        for (index, extra) in fields.enumerated() {
            var request = Request(url: fixture.server.url("/echo?n=\(index)"))
            for (name, value) in extra { request.headers.add(name: name, value: value) }
            let (data, _) = try await session.data(for: request)
            let echo = try JSONDecoder().decode(EchoedRequest.self, from: data)
            #expect(echo.uri == "/echo?n=\(index)")
            let custom = echo.headers.filter { $0.key.hasPrefix("x-") }
            #expect(custom == Dictionary(uniqueKeysWithValues: extra.map { ($0.key.lowercased(), $0.value) }))
            #expect(echo.headers["user-agent"] == DefaultHeaders.userAgent)
        }
        // One handle served all three, and it went back with the profile its options were set from.
        let pool = try #require(session.multi?.easyHandles)
        #expect(pool.idleCount == 1)
        let idle = try #require(pool.take())
        #expect(idle.profile?.options.method == "GET")
        #expect(idle.profile?.options.decodesContent == true)
        pool.give(idle.easy, profile: idle.profile)
        try await fixture.tearDown()
    }

    @Test("requests with bodies of other lengths, or of none known, reuse a handle's settings and send their own body")
    func bodiesOfOtherLengthsShareAProfile() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let url = fixture.server.url("/echo")
        var request = Request(url: url)
        request.method = "POST"
        func echoed(_ data: Data) throws -> EchoedRequest { try JSONDecoder().decode(EchoedRequest.self, from: data) }
        // Each length is set for its own transfer: a handle that kept the last one would cut a body short, or
        // wait for bytes that never come.
        let bodies = [
            Data("first".utf8), Data(repeating: UInt8(ascii: "b"), count: 100_000), Data(), Data("last".utf8),
        ]
        for body in bodies {
            let (data, response) = try await session.upload(for: request, from: body)
            let echo = try echoed(data)
            #expect(response.statusCode == 200)
            #expect(echo.method == "POST" && echo.bodyLength == body.count)
            #expect(echo.headers["content-length"] == "\(body.count)")
        }
        // A streamed body of no known length goes in chunks on the same handle, and a sized one after it is
        // sized again.
        session.responseSerializer = DataResponseSerializer()
        let log = CompletionLog()
        let streamed = Data(repeating: UInt8(ascii: "s"), count: 70_000)
        try session.uploadTask(
            withStreamedRequest: request, bodyProvider: BodyStream(data: streamed), completionHandler: log.handler
        ).resume()
        // The four uploads above and this one.
        try await fixture.recorder.waitForCompletions(5)
        let call = try #require(log.all.first)
        #expect(call.error == nil, "\(String(describing: call.error))")
        let chunked = try echoed(try #require(call.object as? Data))
        #expect(chunked.bodyLength == streamed.count)
        #expect(chunked.headers["transfer-encoding"] == "chunked" && chunked.headers["content-length"] == nil)
        let (data, _) = try await session.upload(for: request, from: Data("sized".utf8))
        #expect(try echoed(data).headers["content-length"] == "5" && echoed(data).body == "sized")

        let pool = try #require(session.multi?.easyHandles)
        #expect(pool.idleCount == 1)
        let idle = try #require(pool.take())
        #expect(idle.profile?.options.method == "POST" && idle.profile?.options.sendsBody == true)
        pool.give(idle.easy, profile: idle.profile)
        try await fixture.tearDown()
    }

    @Test("a request with other options starts from a reset handle: a download after a data task never decodes")
    func otherProfileResetsTheHandle() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let gzip = fixture.server.url("/gzip")
        // In memory the body is decoded; a download keeps the bytes as sent, on the same handle.
        let (decoded, _) = try await session.data(for: Request(url: gzip))
        #expect(String(decoding: decoded, as: UTF8.self) == TestServer.gzipDecodedText)
        let scratch = try ScratchDirectory()
        let (file, _) = try await session.download(for: Request(url: gzip), to: scratch.url.appendingPathComponent("z"))
        #expect([UInt8](try Data(contentsOf: file)) == TestServer.gzipBody)
        let (again, _) = try await session.data(for: Request(url: gzip))
        #expect(again == decoded)
        scratch.remove()
        #expect(session.multi?.easyHandles.idleCount == 1)
        try await fixture.tearDown()
    }

    @Test("after transfers that fail before a connection (an unresolvable host, a refused port), the next ones succeed")
    func failedTransfersDoNotSpoilHandles() async throws {
        let fixture = try await SessionFixture.make()
        let session = fixture.session
        let refused = try RefusingPort()
        defer { refused.close() }
        let refusedURL = refused.url("/status/200")
        let failing = [URL(string: "http://\(FaultHarness.unresolvableHost)/")!, refusedURL]
        for (round, url) in failing.enumerated() {
            await #expect(throws: HeraldError.self, "round \(round)") {
                _ = try await session.data(for: Request(url: url))
            }
            for kind in ["memory", "file"] {
                let target = fixture.server.url("/bytes/1000")
                if kind == "memory" {
                    let (data, response) = try await session.data(for: Request(url: target))
                    #expect(response.statusCode == 200 && data.count == 1000, "round \(round), \(kind)")
                } else {
                    let scratch = try ScratchDirectory()
                    let destination = scratch.url.appendingPathComponent("body")
                    let (file, response) = try await session.download(for: Request(url: target), to: destination)
                    #expect(response.statusCode == 200, "round \(round), \(kind)")
                    #expect((try? Data(contentsOf: file).count) == 1000, "round \(round), \(kind)")
                    scratch.remove()
                }
            }
        }
        try await fixture.tearDown()
    }
}

extension EasyHandlePoolTests {
    @Test(
        "connecting is limited by the idle timeout, else the resource timeout, else hardly at all: never curl's 300 s")
    func connectTimeout() {
        #expect(Transfer.connectTimeoutMilliseconds(requestTimeout: 60, resourceTimeout: 600) == 60_000)
        #expect(Transfer.connectTimeoutMilliseconds(requestTimeout: 0, resourceTimeout: 600) == 600_000)
        // Both turned off: 0 would leave libcurl's default of 300 s, a limit the caller never set.
        #expect(Transfer.connectTimeoutMilliseconds(requestTimeout: 0, resourceTimeout: 0) == Int(Int32.max))
        #expect(
            Transfer.connectTimeoutMilliseconds(requestTimeout: .infinity, resourceTimeout: .nan) == Int(Int32.max))
    }
}
