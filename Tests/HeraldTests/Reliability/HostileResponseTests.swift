import Foundation
@testable import Herald
@testable import HeraldEngine
import HeraldTesting
import Testing

/// Hostile input that comes back from a server or from stored data: server-supplied file names,
/// header bytes that are not UTF-8, repeated header fields, and crafted resume data.
@Suite("Hostile responses and stored data")
struct HostileResponseTests {
    private func response(disposition: String?, url: String = "http://127.0.0.1/files/report.pdf") -> HTTPResponse {
        var headers = HTTPHeaders()
        if let disposition { headers.add(name: "Content-Disposition", value: disposition) }
        return HTTPResponse(url: URL(string: url)!, statusCode: 200, headers: headers)
    }

    @Test(
        "a server-supplied file name is reduced to one safe path component",
        arguments: [
            (#"attachment; filename="../../etc/passwd""#, "passwd"),
            (#"attachment; filename="..\..\windows\system32\cmd.exe""#, "cmd.exe"),
            (#"attachment; filename="/etc/shadow""#, "shadow"),
            (#"attachment; filename="..""#, "report.pdf"),
            (#"attachment; filename="../""#, "report.pdf"),
            (#"attachment; filename=".bashrc""#, "bashrc"),
            (#"attachment; filename="...hidden""#, "hidden"),
            ("attachment; filename=\"a\u{0}b.txt\"", "ab.txt"),
            ("attachment; filename=\"a\r\nX-Evil: 1.txt\"", "aX-Evil: 1.txt"),
            ("attachment; filename=\"invoice\u{202E}fdp.exe\"", "invoicefdp.exe"),
            ("attachment; filename=\"invoice\u{061C}fdp.exe\"", "invoicefdp.exe"),
            ("attachment; filename=\"a\u{200E}\u{2067}b\u{2069}.txt\"", "ab.txt"),
            (#"attachment; filename*=UTF-8''%2e%2e%2f%2e%2e%2fetc%2fpasswd"#, "passwd"),
            (#"attachment; filename*=UTF-8''%00%2e%2e"#, "report.pdf"),
            (#"attachment; filename*=UTF-8''%E2%82%AC%20rates.txt"#, "€ rates.txt"),
            (#"attachment; filename="fallback.txt"; filename*=UTF-8''%C3%A9t%C3%A9.txt"#, "été.txt"),
            (#"attachment; filename*=UTF-8''%FF%FE.txt; filename="plain.txt""#, "plain.txt"),
            (#"attachment; filename*=iso-8859-1'en'caf%E9.txt"#, "café.txt"),
            (#"attachment; filename*=UTF-8''%zz; filename="ok.txt""#, "ok.txt"),
            (#"attachment; filename="quo\"ted.txt""#, "quo\"ted.txt"),
            (#"attachment; filename=unquoted.txt; size=3"#, "unquoted.txt"),
            // An extended value that leaves no safe name doesn't hide a good plain one.
            (#"attachment; filename*=UTF-8''; filename="report-2.pdf""#, "report-2.pdf"),
            (#"attachment; filename*=UTF-8''%2e%2e; filename="real.pdf""#, "real.pdf"),
            // A parameter without `=` is skipped, not read as the next one's name.
            (#"attachment; foo; filename="a.txt""#, "a.txt"),
            (#"attachment; foo"#, "report.pdf"),
            ("attachment", "report.pdf"),
            ("attachment; filename=", "report.pdf"),
            ("attachment; filename=\"   \"", "report.pdf"),
            (";;;===\"\"\"", "report.pdf"),
        ])
    func suggestedFilename(disposition: String, expected: String) {
        #expect(response(disposition: disposition).suggestedFilename == expected)
    }

    @Test("a long name is cut to 255 UTF-8 bytes, keeping a short extension; no name at all becomes \"download\"")
    func lengthAndFallback() {
        let long = response(disposition: "attachment; filename=\"\(String(repeating: "é", count: 300)).txt\"")
        #expect(long.suggestedFilename.utf8.count <= 255)
        #expect(long.suggestedFilename.hasPrefix("éé"))
        #expect(long.suggestedFilename.hasSuffix(".txt"))
        let longURL = response(disposition: nil, url: "http://127.0.0.1/\(String(repeating: "n", count: 300)).tar.gz")
        #expect(longURL.suggestedFilename == String(repeating: "n", count: 252) + ".gz")
        let noExtension = response(disposition: "attachment; filename=\"\(String(repeating: "x", count: 300))\"")
        #expect(noExtension.suggestedFilename == String(repeating: "x", count: 255))
        let longExtension = HTTPResponse.safeFilename("a." + String(repeating: "e", count: 300))
        #expect(longExtension == "a." + String(repeating: "e", count: 253))
        #expect(response(disposition: nil, url: "http://127.0.0.1/").suggestedFilename == "download")
        #expect(response(disposition: nil, url: "http://127.0.0.1/a/..%2F..%2Fx").suggestedFilename == "x")
    }

    @Test("whatever the value, the name stays inside the directory it is appended to")
    func neverEscapes() {
        var random = SeededGenerator(seed: 7)
        let alphabet: [String] = [
            "/", "\\", ".", "..", "%2e", "%2f", "%00", "\u{0}", "\r", "\n", "\"", ";", "a",
            "é", "\u{202E}", " ", "filename=", "filename*=UTF-8''", "'",
            // A combining mark makes one Character of the scalar before it (a `/`, a `.`), and a long run of
            // them one Character of hundreds of bytes.
            "\u{301}", String(repeating: "\u{301}", count: 130),
        ]
        let directory = URL(fileURLWithPath: "/tmp/herald-downloads", isDirectory: true)
        for _ in 0..<5_000 {
            var value = "attachment; "
            for _ in 0..<Int(random.next() % 12) { value += alphabet[Int(random.next() % UInt64(alphabet.count))] }
            let name = response(disposition: value, url: "http://127.0.0.1/..").suggestedFilename
            // Bytes, not Characters: "/\u{301}" is one Character that isn't "/".
            #expect(!name.isEmpty && name.utf8.first != UInt8(ascii: ".") && name.utf8.count <= 255, "\(value)")
            #expect(!name.utf8.contains(UInt8(ascii: "/")) && !name.utf8.contains(UInt8(ascii: "\\")), "\(value)")
            #expect(!name.unicodeScalars.contains { $0.value < 0x20 }, "\(value)")
            let destination = directory.appendingPathComponent(name).standardizedFileURL
            #expect(destination.deletingLastPathComponent().path == directory.path, "\(value) → \(name)")
        }
    }

    @Test("combining marks can't smuggle a separator or a leading dot into a suggested name")
    func combiningMarks() {
        let accents = String(repeating: "\u{301}", count: 130)
        // One 261-byte Character before the extension: cut, the name must not become a hidden file.
        let cut = HTTPResponse.safeFilename("a" + accents + ".htaccess")
        #expect(cut.map { $0.utf8.first != UInt8(ascii: ".") && $0.utf8.count <= 255 } == true, "\(cut ?? "nil")")
        #expect(HTTPResponse.safeFilename("a" + accents + ".") != ".")
        // "/\u{301}" is one Character: the separator must still separate.
        #expect(HTTPResponse.safeFilename("a/\u{301}b") == "\u{301}b")
        #expect(HTTPResponse.safeFilename("x/..\u{301}/y") == "y")
        // The last part that has something in it, as before: a trailing separator keeps the name.
        #expect(HTTPResponse.safeFilename("dir/report.pdf/") == "report.pdf")
        #expect(HTTPResponse.safeFilename("report.pdf\\\\") == "report.pdf")
    }

    @Test("a download saved under its suggested name lands in the chosen directory, whatever the server says")
    func downloadToSuggestedName() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let directory = scratch.url.appendingPathComponent("inbox", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let disposition = #"attachment; filename="../../escaped.txt""#
        let encoded = disposition.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let log = DownloadLog()
        let task = try fixture.session.downloadTask(
            with: Request(url: fixture.server.url("/headers?Content-Disposition=\(encoded)")),
            destination: { _, response in directory.appendingPathComponent(response.suggestedFilename) },
            completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        #expect(log.all.first?.error == nil)
        #expect(log.all.first?.fileURL == directory.appendingPathComponent("escaped.txt"))
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("escaped.txt").path))
        #expect(
            !FileManager.default.fileExists(
                atPath: scratch.url.deletingLastPathComponent().appendingPathComponent("escaped.txt").path))
        scratch.remove()
        try await fixture.tearDown()
    }

    @Test("header bytes that are not UTF-8 are decoded lossily and repeated fields are all kept, in order")
    func rawHeaders() async throws {
        let fixture = try await SessionFixture.make(serializer: DataResponseSerializer())
        let log = CompletionLog()
        let task = try fixture.session.dataTask(
            with: Request(url: fixture.server.url("/fault/raw-headers")), completionHandler: log.handler)
        task.resume()
        try await fixture.recorder.waitForCompletions(1)
        let call = try #require(log.all.first)
        #expect(call.error == nil)
        let response = try #require(call.response)
        #expect(response.statusCode == 200)
        #expect(response.headers["X-Latin1"] == "caf\u{FFFD}")
        #expect(response.headers["x-invalid"]?.hasPrefix("a\u{FFFD}") == true)
        #expect(response.headers["x-invalid"]?.hasSuffix("b") == true)
        #expect(response.headers.values(for: "x-dup") == ["one", "two", "three"])
        #expect(response.headers.values(for: "Set-Cookie") == ["a=1", "b=2"])
        #expect(response.headers["X-Dup"] == "one")
        // A folded field's lines, joined with a space each.
        #expect(response.headers["X-Folded"] == "first second third")
        #expect(call.object as? Data == Data("ok\n".utf8))
        try await fixture.tearDown()
    }

    @Test(
        "the head-line parser never traps and reads what it can",
        arguments: [
            ("HTTP/1.1 200 OK\r\n", ResponseHeadLine.statusLine(version: "HTTP/1.1", statusCode: 200)),
            ("HTTP/2 204\r\n", .statusLine(version: "HTTP/2", statusCode: 204)),
            ("HTTP/1.0 404 Not Found\r\n", .statusLine(version: "HTTP/1.0", statusCode: 404)),
            ("HTTP/1.1x 200\r\n", .statusLine(version: "HTTP/1.1x", statusCode: 200)),
            ("HTTP/1.1 200OK\r\n", .statusLine(version: "HTTP/1.1", statusCode: 200)),
            ("HTTP/1.1 404\tNot Found\r\n", .statusLine(version: "HTTP/1.1", statusCode: 404)),
            ("HTTP/1.1 2000 OK\r\n", .statusLine(version: "HTTP/1.1", statusCode: 0)),
            ("Content-Length: 1024\r\n", .field(name: "Content-Length", value: "1024")),
            ("content-LENGTH: 7\r\n", .field(name: "content-LENGTH", value: "7")),
            ("Content-Lengths: 7\r\n", .field(name: "Content-Lengths", value: "7")),
            ("Transfer-Encoding: chunked\r\n", .field(name: "Transfer-Encoding", value: "chunked")),
            ("Date: Fri, 27 Nov 2026 10:40:55 GMT\r\n", .field(name: "Date", value: "Fri, 27 Nov 2026 10:40:55 GMT")),
            ("Dat\u{E9}: x\r\n", .field(name: "Dat\u{E9}", value: "x")),
            ("HTTP/1.1 99999999999999999999999 Big\r\n", .statusLine(version: "HTTP/1.1", statusCode: 0)),
            ("HTTP/1.1 -20 Negative\r\n", .statusLine(version: "HTTP/1.1", statusCode: 0)),
            ("HTTP/\r\n", .statusLine(version: "HTTP/", statusCode: 0)),
            ("Name:   value with spaces  \r\n", .field(name: "Name", value: "value with spaces")),
            ("Empty:\r\n", .field(name: "Empty", value: "")),
            (":no-name\r\n", .field(name: "", value: "no-name")),
            ("A: b: c\r\n", .field(name: "A", value: "b: c")),
            ("\t folded  \r\n", .continuation("folded")),
            ("no colon at all\r\n", .ignored),
            ("\r\n", .ignored),
            ("", .ignored),
        ])
    func headLineParser(line: String, expected: ResponseHeadLine) {
        let parsed = Array(line.utf8).withUnsafeBytes { ResponseHeadLine.parse($0) }
        #expect(parsed == expected)
    }

    @Test(
        "a field name comes back exactly as sent, common or not",
        arguments: [
            "Date", "ETag", "Vary", "date", "Server", "server", "Expires", "Location", "Connection", "Keep-Alive",
            "Set-Cookie", "Content-Type", "content-type", "Accept-Ranges", "Cache-Control", "Content-Range",
            "Last-Modified", "Content-Length", "content-length", "Content-Encoding", "Transfer-Encoding",
            // Near misses: the same length and first byte as a common name.
            "Dato", "EType", "Vars", "dote", "Serves", "sErver", "Expired", "Locatio", "Connectio", "Keep-Alivf",
            "Set-Cookiz", "Content-Typo", "content-typo", "Accept-Range5", "Cache-Contro1", "Content-Rang3",
            "Last-Modifie", "Content-Lengtx", "content-lengtx", "Content-Encodinx", "Transfer-Encodinx",
        ])
    func fieldNameAsSent(name: String) {
        let parsed = Array("\(name): v\r\n".utf8).withUnsafeBytes { ResponseHeadLine.parse($0) }
        #expect(parsed == .field(name: name, value: "v"))
    }

    @Test("crafted resume data is refused with cannotResume: truncated, wrong types, huge numbers, foreign files")
    func craftedResumeData() async throws {
        let fixture = try await SessionFixture.make()
        let scratch = try ScratchDirectory()
        let part = scratch.url.appendingPathComponent("download-1-x.part")
        try Data(repeating: 1, count: 100).write(to: part)
        let victim = scratch.url.appendingPathComponent("victim.txt")
        try Data("keep me".utf8).write(to: victim)
        // A real partial file reached through `sub/..`, for the combining-mark case below.
        try FileManager.default.createDirectory(
            at: scratch.url.appendingPathComponent("sub"), withIntermediateDirectories: false)
        let hidden = scratch.url.appendingPathComponent("\u{301}x")
        try FileManager.default.createDirectory(at: hidden, withIntermediateDirectories: false)
        try Data(repeating: 1, count: 100).write(to: hidden.appendingPathComponent("download-1-x.part"))
        let link = scratch.url.appendingPathComponent("download-2-x.part")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: victim)
        func resume(_ fields: [String: String]) -> Data {
            var all = [
                "format": #""herald.download-resume-data""#, "version": "1", "url": #""http://127.0.0.1:1/x""#,
                "headers": "[]", "bytesReceived": "10", "entityTag": #""\"e\"""#,
                "partialFilePath": "\"\(part.path)\"",
            ]
            for (key, value) in fields { all[key] = value }
            return Data(("{" + all.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}").utf8)
        }
        // The valid baseline is accepted, so each refusal below is down to its one change.
        let baseline = try fixture.session.downloadTask(withResumeData: resume([:]))
        baseline.cancel()
        // The cancel deletes the partial file: made again, so that no case below is refused only for its absence.
        try await fixture.recorder.waitForCompletions(1)
        try Data(repeating: 1, count: 100).write(to: part)
        let valid = resume([:])
        let cases: [(String, Data)] = [
            ("truncated", valid.prefix(valid.count / 2)),
            ("truncated by one byte", valid.dropLast()),
            ("version as a string", resume(["version": #""1""#])),
            ("version 2", resume(["version": "2"])),
            ("bytesReceived as a string", resume(["bytesReceived": #""10""#])),
            ("bytesReceived negative", resume(["bytesReceived": "-1"])),
            ("bytesReceived beyond Int64", resume(["bytesReceived": "99999999999999999999999"])),
            ("bytesReceived beyond the file", resume(["bytesReceived": "9223372036854775807"])),
            ("bytesReceived a float", resume(["bytesReceived": "1e300"])),
            ("headers not pairs", resume(["headers": #"[["A"]]"#])),
            ("headers wrong type", resume(["headers": #"{"A":"b"}"#])),
            ("header with CR LF", resume(["headers": #"[["X-A","b\r\nX-Injected: 1"]]"#])),
            ("url not a URL", resume(["url": "42"])),
            ("url with a file scheme", resume(["url": #""file:///etc/passwd""#])),
            ("url with a gopher scheme", resume(["url": #""gopher://127.0.0.1/""#])),
            ("no validator", resume(["entityTag": "null"])),
            // If-Range may carry neither a weak tag nor a date beside one.
            (
                "a weak ETag beside a date",
                resume(["entityTag": #""W/\"e\"""#, "lastModified": #""Mon, 01 Jan 2024 00:00:00 GMT""#])
            ),
            ("ETag with CR LF", resume(["entityTag": #""\"e\"\r\nX-Injected: 1""#])),
            ("Last-Modified with LF", resume(["entityTag": "null", "lastModified": #""Wed\nX-Injected: 1""#])),
            ("path to a non-Herald file", resume(["partialFilePath": "\"\(victim.path)\""])),
            ("path through a symbolic link", resume(["partialFilePath": "\"\(link.path)\""])),
            ("relative path", resume(["partialFilePath": #""download-1-x.part""#])),
            (
                "path with ..",
                resume([
                    "partialFilePath": "\"\(scratch.url.path)/../\(scratch.url.lastPathComponent)/download-1-x.part\""
                ])
            ),
            (
                // "/\u{301}" is one Character: split on Characters, the `..` before it would go unseen.
                "path with .. hidden by a combining mark",
                resume(["partialFilePath": "\"\(scratch.url.path)/sub/../\\u0301x/download-1-x.part\""])
            ),
            ("path a directory", resume(["partialFilePath": "\"\(scratch.url.path)/download-dir.part\""])),
            ("path with NUL", resume(["partialFilePath": "\"\(part.path)\\u0000.txt\""])),
            (
                // The C string the kernel gets ends at the NUL: it would name the victim, a regular file.
                "path with NUL before a Herald file name",
                resume(["partialFilePath": "\"\(victim.path)\\u0000/download-1-x.part\"", "bytesReceived": "0"])
            ),
            (
                "huge path",
                resume(["partialFilePath": "\"/\(String(repeating: "a", count: 100_000))/download-1.part\""])
            ),
            ("a JSON array", Data("[1,2,3]".utf8)),
            (
                "deeply nested",
                Data((String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)).utf8)
            ),
        ]
        try FileManager.default.createDirectory(
            at: scratch.url.appendingPathComponent("download-dir.part"), withIntermediateDirectories: true)
        for (label, data) in cases {
            let error = #expect(throws: HeraldError.self, "\(label)") {
                try fixture.session.downloadTask(withResumeData: data)
            }
            #expect(
                error?.code == .cannotResume || error?.code == .unsupportedURL || error?.code == .invalidRequest,
                "\(label): \(error.map { "\($0)" } ?? "")")
        }
        #expect(try String(contentsOf: victim, encoding: .utf8) == "keep me")
        // The partial file is still there and unclaimed: the valid data is accepted after every refusal.
        let accepted = try fixture.session.downloadTask(withResumeData: valid)
        accepted.cancel()
        scratch.remove()
        try await fixture.tearDown()
    }
}
