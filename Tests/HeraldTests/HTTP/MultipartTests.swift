import Foundation
@testable import Herald
import HeraldNotifications
import HeraldTesting
import Testing

@Suite("multipart/form-data: data, files and streams, parsed by the server")
struct MultipartTests {
    /// A stream of `count` pattern bytes, handed out in pieces of at most 1000 bytes.
    static func patternStream(count: Int) -> BodyStream {
        let offset = Locked(0)
        return BodyStream { buffer in
            offset.withLock { offset in
                let length = min(buffer.count, count - offset, 1000)
                guard length > 0 else { return 0 }
                let bytes = TestServer.expectedBytes(in: offset..<(offset + length))
                buffer.copyBytes(from: bytes)
                offset += length
                return length
            }
        }
    }

    @Test("fields, in-memory files, files on disk, streams and custom parts arrive intact, in order")
    func everyKindOfPart() async throws {
        let fixture = try await HTTPFixture.make()
        let scratch = try ScratchDirectory()
        let fileURL = try PatternFile.make(count: 1_000_003, in: scratch.url)
        let jsonURL = scratch.url.appendingPathComponent("report.json")
        try Data(#"{"ok":true}"#.utf8).write(to: jsonURL)
        let avatar = Data(TestServer.expectedBytes(in: 0..<5000))
        let form = try fixture.manager.multipartFormData(parameters: ["user": ["name": "Ada", "id": 7]]) {
            form throws(HeraldError) in
            try form.append(Data("Hello, café".utf8), name: "greeting")
            try form.append(avatar, name: "avatar", fileName: "avatar.png")
            try form.append(fileURL: fileURL, name: "blob", mimeType: "application/x-pattern")
            try form.append(fileURL: jsonURL, name: "report")
            try form.append(length: 12_345, name: "stream", fileName: "stream.bin") {
                Self.patternStream(count: 12_345)
            }
            try form.append(
                headers: ["Content-Disposition": #"form-data; name="custom""#, "X-Part": "7"], body: Data("c".utf8))
        }
        let log = CompletionLog()
        let request = Request(url: fixture.server.url("/multipart"), method: "POST")
        let task = try fixture.session.uploadTask(
            with: request, multipartFormData: form, completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        let echoed = try #require((log.all.first?.object as? JSONValue)?.echoedMultipart)
        #expect(echoed.contentType == "multipart/form-data; boundary=\(form.boundary)")
        let summary = echoed.parts.map { "\($0.name ?? "-") \($0.filename ?? "-") \($0.contentType ?? "-") \($0.size)" }
        #expect(
            summary == [
                "user[id] - - 1", "user[name] - - 3", "greeting - - 12", "avatar avatar.png image/png 5000",
                "blob pattern-1000003.bin application/x-pattern 1000003", "report report.json application/json 11",
                "stream stream.bin application/octet-stream 12345", "custom - - 1",
            ])
        #expect(echoed.parts.map(\.value) == ["7", "Ada", "Hello, café", nil, nil, nil, nil, "c"])
        #expect(echoed.parts[3].sha256 == TestDigest.sha256(avatar))
        #expect(echoed.parts[4].sha256 == (try TestDigest.sha256(ofFileAt: fileURL)))
        #expect(echoed.parts[6].sha256 == TestDigest.sha256(Data(TestServer.expectedBytes(in: 0..<12_345))))
        #expect(echoed.parts[7].headers["x-part"] == "7")
        let recorded = try #require(fixture.server.requests(forPath: "/multipart").first)
        #expect(recorded.headerValue("Content-Length") == "\(form.contentLength)")
        #expect(recorded.bodyByteCount == Int(form.contentLength))
        #expect(task.uploadProgress.completedUnitCount == form.contentLength)
        #expect(task.uploadProgress.totalUnitCount == form.contentLength)
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("the completion-handler POST with a form resumes one upload task; progress reaches the form's length")
    func callbackForm() async throws {
        let fixture = try await HTTPFixture.make()
        let sent = Locked<[Int64]>([])
        let log = CompletionLog()
        let body = Data(TestServer.expectedBytes(in: 0..<250_000))
        let task = try fixture.manager.post(
            "multipart", parameters: ["kind": "callback"], headers: ["X-Trace": "t1"],
            constructingBody: { form in try form.append(body, name: "data", fileName: "data.bin") },
            progress: { progress in sent.withLock { $0.append(progress.completedUnitCount) } },
            completionHandler: log.handler)
        #expect(task.state != .suspended)  // resumed by post, running or already done
        try await fixture.recorder.waitForCompletions(1)
        #expect(fixture.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        #expect(fixture.session.uploadTasks.isEmpty)
        let echoed = try #require((log.all.first?.object as? JSONValue)?.echoedMultipart)
        #expect(echoed.parts.map(\.name) == ["kind", "data"])
        #expect(echoed.parts[1].sha256 == TestDigest.sha256(body))
        let recorded = try #require(fixture.server.requests(forPath: "/multipart").first)
        #expect(recorded.headerValue("X-Trace") == "t1")
        #expect(
            recorded.headerValue("Content-Type")?.hasPrefix("multipart/form-data; boundary=Herald-Boundary-") == true)
        #expect(sent.withLock { $0.last } == Int64(recorded.bodyByteCount))
        #expect(sent.withLock { $0 == $0.sorted() })
        try await fixture.tearDown()
    }

    @Test("a boundary with characters a bare parameter can't carry is quoted, and the server splits the parts by it")
    func quotedBoundary() async throws {
        let fixture = try await HTTPFixture.make()
        for (index, boundary) in ["----=_NextPart_0", "a b", "a:b/c?d"].enumerated() {
            var form = try MultipartFormData(boundary: boundary)
            try form.append(Data("1".utf8), name: "a")
            try form.append(Data("<b/>".utf8), name: "f", fileName: "f.xml")
            #expect(form.contentType == "multipart/form-data; boundary=\"\(boundary)\"")
            let log = CompletionLog()
            let task = try fixture.session.uploadTask(
                with: Request(url: fixture.server.url("/multipart"), method: "POST"), multipartFormData: form,
                completionHandler: log.handler)
            task.resume()
            try await fixture.recorder.waitForCompletions(index + 1)
            let echoed = try #require((log.all.first?.object as? JSONValue)?.echoedMultipart, "\(boundary)")
            #expect(echoed.parts.map(\.name) == ["a", "f"], "\(boundary)")
        }
        #expect(try MultipartFormData(boundary: "XyZ-1").contentType == "multipart/form-data; boundary=XyZ-1")
        try await fixture.tearDown()
    }

    /// `form` POSTed in an upload task to the server's `/echo`, as the server received it.
    private func echoed(_ form: MultipartFormData, by fixture: HTTPFixture) async throws -> EchoedRequest {
        let log = CompletionLog()
        fixture.session.responseSerializer = DataResponseSerializer()
        let task = try fixture.session.uploadTask(
            with: Request(url: fixture.server.url("/echo"), method: "POST"), multipartFormData: form,
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let data = try #require(log.all.first?.object as? Data)
        return try JSONDecoder().decode(EchoedRequest.self, from: data)
    }

    @Test("the body is framed exactly as RFC 7578 says")
    func wireFormat() async throws {
        let fixture = try await HTTPFixture.make()
        var form = try MultipartFormData(boundary: "XyZ")
        try form.append(Data("1".utf8), name: "a")
        try form.append(Data("<b/>".utf8), name: "f", fileName: "f.xml")
        let echoed = try await echoed(form, by: fixture)
        #expect(
            echoed.body
                == "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1"
                + "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f.xml\"\r\nContent-Type: application/xml\r\n\r\n<b/>"
                + "\r\n--XyZ--\r\n")
        #expect(Int64(echoed.bodyLength) == form.contentLength)
        #expect(echoed.headers["content-type"] == "multipart/form-data; boundary=XyZ")
        try await fixture.tearDown()
    }

    @Test("a name or file name with a double quote, CR or LF is sent percent-encoded, as browsers send it")
    func namesEscapedAsBrowsersDo() async throws {
        let fixture = try await HTTPFixture.make()
        var form = try MultipartFormData(boundary: "XyZ")
        // Refused before: a file's own name (`append(fileURL:)`'s default) made the whole request fail.
        try form.append(Data("1".utf8), name: "say \"hi\"\r\nX-Injected: 1")
        try form.append(Data("2".utf8), name: "f", fileName: "report \"final\".txt")
        #expect(MultipartFormData.escapedForQuoting("plain é") == "plain é")
        let echoed = try await echoed(form, by: fixture)
        #expect(
            echoed.body
                == "--XyZ\r\nContent-Disposition: form-data; name=\"say %22hi%22%0D%0AX-Injected: 1\"\r\n\r\n1"
                + "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"report %22final%22.txt\"\r\n"
                + "Content-Type: text/plain\r\n\r\n2\r\n--XyZ--\r\n")
        #expect(Int64(echoed.bodyLength) == form.contentLength)
        try await fixture.tearDown()
    }

    @Test("a 307 resends the whole form: files reread, streams remade")
    func redirectResends() async throws {
        let fixture = try await HTTPFixture.make()
        let scratch = try ScratchDirectory()
        let fileURL = try PatternFile.make(count: 400_000, in: scratch.url)
        let made = Locked(0)
        let resent = try await fixture.manager.post("redirect-to?status=307&url=/multipart") {
            form throws(HeraldError) in
            try form.append(fileURL: fileURL, name: "file")
            try form.append(length: 3000, name: "s", fileName: "s.txt") {
                made.withLock { $0 += 1 }
                return Self.patternStream(count: 3000)
            }
        }
        let echoed = try #require((resent.0 as? JSONValue)?.echoedMultipart)
        #expect(echoed.parts.map(\.size) == [400_000, 3000])
        #expect(echoed.parts[0].sha256 == (try TestDigest.sha256(ofFileAt: fileURL)))
        #expect(echoed.parts[0].contentType == "application/octet-stream")
        #expect(echoed.parts[1].contentType == "text/plain")
        let first = try #require(fixture.server.requests(forPath: "/redirect-to").last)
        #expect(
            Int64(first.bodyByteCount)
                == Int64(fixture.server.requests(forPath: "/multipart").first?.bodyByteCount ?? -1))
        #expect(made.withLock { $0 } == 2)
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("a file part replaced by a FIFO after the form was made fails with fileIO; nothing blocks")
    func filePartReplacedByFIFO() async throws {
        let fixture = try await HTTPFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let fileURL = try PatternFile.make(count: 1000, in: scratch.url)
        var form = MultipartFormData()
        try form.append(fileURL: fileURL, name: "file")
        try FileManager.default.removeItem(at: fileURL)
        try #require(mkfifo(fileURL.path, 0o600) == 0)
        // Before, the part's open blocked its reader until a writer came.
        let error = await #expect(throws: HeraldError.self) {
            _ = try await fixture.session.upload(
                for: Request(url: fixture.server.url("/multipart"), method: "POST"), multipartFormData: form)
        }
        #expect(error?.message.contains("no longer a regular file") == true)
        try await fixture.tearDown()
    }

    @Test("names, file names, types and headers that would corrupt the framing are refused before sending")
    func invalidPartsThrow() async throws {
        var form = MultipartFormData()
        // A backslash: `x\"` would end the quoted string for a parser that reads RFC 9110's escapes, and others
        // take it as it is. (CR, LF and `"` are percent-encoded instead: see `namesEscapedAsBrowsersDo`.)
        for name in ["nul\0", "x\\"] {
            #expect(throws: HeraldError.self) { try form.append(Data(), name: name) }
        }
        #expect(throws: HeraldError.self) { try form.append(Data(), name: "ok", fileName: "C:\\Users\\ada.png") }
        #expect(throws: HeraldError.self) { try form.append(Data(), name: "ok", fileName: "a\0.txt") }
        #expect(throws: HeraldError.self) {
            try form.append(Data(), name: "ok", fileName: "a", mimeType: "text/plain\r\nX: y")
        }
        #expect(throws: HeraldError.self) { try form.append(headers: ["Bad Name": "v"], body: Data()) }
        #expect(throws: HeraldError.self) { try form.append(headers: ["X": "v\r\n"], body: Data()) }
        #expect(throws: HeraldError.self) {
            try form.append(length: -1, name: "s", fileName: "s") { BodyStream(data: Data()) }
        }
        #expect(throws: HeraldError.self) {
            try form.append(fileURL: URL(fileURLWithPath: "/nonexistent/file"), name: "f")
        }
        #expect(throws: HeraldError.self) { try form.append(fileURL: URL(fileURLWithPath: "/tmp"), name: "f") }
        for boundary in ["", String(repeating: "b", count: 71), "has\"quote", "trailing "] {
            #expect(throws: HeraldError.self) { try MultipartFormData(boundary: boundary) }
        }
        #expect(form.count == 0)
        do {
            try form.append(Data(), name: "back\\slash")
        } catch {
            #expect(error.code == .invalidRequest)
        }

        let fixture = try await HTTPFixture.make()
        do {
            _ = try await fixture.manager.post("multipart") { form throws(HeraldError) in
                try form.append(Data("ok".utf8), name: "fine")
                try form.append(Data(), name: "bad\0name")
            }
            Issue.record("a bad field name was accepted")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        #expect(fixture.server.requestCount == 0)
        #expect(fixture.session.tasks.isEmpty)
        #expect(fixture.recorder.timeline.isEmpty)
        try await fixture.tearDown()
    }

    @Test("a file that changed size, or a stream shorter than declared, fails the task without a wrong body")
    func lengthMismatchFails() async throws {
        let fixture = try await HTTPFixture.make()
        let scratch = try ScratchDirectory()
        let fileURL = try PatternFile.make(count: 10_000, in: scratch.url)
        var form = MultipartFormData()
        try form.append(fileURL: fileURL, name: "f")
        let handle = try FileHandle(forWritingTo: fileURL)
        try handle.truncate(atOffset: 9_000)
        try handle.close()
        do {
            _ = try await fixture.manager.post("multipart") { $0 = form }
            Issue.record("a shrunken file was sent")
        } catch {
            #expect(error.code == .fileIO)
        }
        do {
            _ = try await fixture.manager.post("multipart") { form throws(HeraldError) in
                try form.append(length: 5000, name: "s", fileName: "s") { Self.patternStream(count: 4000) }
            }
            Issue.record("a short stream was sent")
        } catch {
            #expect(error.code == .bodyStream)
        }
        do {
            _ = try await fixture.manager.post("multipart") { form throws(HeraldError) in
                try form.append(length: 4, name: "n", fileName: "n") { BodyStream { _ in -1 } }
            }
            Issue.record("a stream whose read failed was sent")
        } catch {
            #expect(error.code == .bodyStream)
            // Before, it read as a stream that ended early.
            #expect(error.message.contains("negative count"), "\(error.message)")
        }
        #expect(fixture.server.requests(forPath: "/multipart").allSatisfy { $0.responseStatus != 200 })
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test(
        "a file that grew, an empty file written before the send, or a stream longer than declared fails the task, never a part cut short"
    )
    func growthFails() async throws {
        let fixture = try await HTTPFixture.make()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        // Grown by 2,000 bytes after it was appended (before the send; growth during it is checked at the file's end).
        let grown = try PatternFile.make(count: 10_000, in: scratch.url)
        var grownForm = MultipartFormData()
        try grownForm.append(fileURL: grown, name: "f")
        let handle = try FileHandle(forWritingTo: grown)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 7, count: 2_000))
        try handle.close()
        await #expect {
            _ = try await fixture.manager.post("multipart") { $0 = grownForm }
        } throws: { ($0 as? HeraldError)?.code == .fileIO && "\($0)".contains("12000 bytes, not the 10000") }
        // Empty when appended, written before the send: before, an empty part went out.
        let empty = scratch.url.appendingPathComponent("empty.txt")
        try Data().write(to: empty)
        var emptyForm = MultipartFormData()
        try emptyForm.append(fileURL: empty, name: "e")
        try Data("now it has bytes".utf8).write(to: empty)
        await #expect {
            _ = try await fixture.manager.post("multipart") { $0 = emptyForm }
        } throws: { ($0 as? HeraldError)?.code == .fileIO }
        // A stream with 1,000 bytes more than the 4,000 it declared: before, the rest was dropped unseen.
        await #expect {
            _ = try await fixture.manager.post("multipart") { form throws(HeraldError) in
                try form.append(length: 4000, name: "s", fileName: "s") { Self.patternStream(count: 5000) }
            }
        } throws: { ($0 as? HeraldError)?.code == .bodyStream && "\($0)".contains("more than the 4000 bytes") }
        #expect(fixture.server.requests(forPath: "/multipart").allSatisfy { $0.responseStatus != 200 })
        // An empty file still empty, and a stream of exactly its length, go as before.
        let stillEmpty = scratch.url.appendingPathComponent("still-empty.txt")
        try Data().write(to: stillEmpty)
        let (_, response) = try await fixture.manager.post("multipart") { form throws(HeraldError) in
            try form.append(fileURL: stillEmpty, name: "e")
            try form.append(length: 4000, name: "s", fileName: "s") { Self.patternStream(count: 4000) }
        }
        #expect(response.statusCode == 200)
        try await fixture.tearDown()
    }

    @Test("content types come from file extensions: mime.types, then the built-in table, then octet-stream")
    func mimeTypes() {
        #expect(MIMEType.forPathExtension("json") == "application/json")
        #expect(MIMEType.forPathExtension("PNG") == "image/png")
        #expect(MIMEType.forPathExtension("txt") == "text/plain")
        #expect(MIMEType.forPathExtension("no-such-extension") == "application/octet-stream")
        #expect(MIMEType.forPathExtension("") == "application/octet-stream")
        let parsed = MIMEType.parse(
            "# comment\ntext/x-a  a aa\n\napplication/x-b\tb # trailing\nimage/x-c a\nnot-a-type c\n")
        #expect(parsed == ["a": "text/x-a", "aa": "text/x-a", "b": "application/x-b"])
    }
}
