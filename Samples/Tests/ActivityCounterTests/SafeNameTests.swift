import Foundation
import Synchronization
import Testing

@testable import ActivityCounter

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile file names, from the URL and from `Content-Disposition`: nothing is created outside `--output-dir`,
/// nothing is overwritten, and each URL's bytes land in a file of their own.
@Suite("activity-counter: safe file names", .serialized)
struct SafeNameTests {
    /// Answers every request `200` with the request target as the body (so each URL's bytes are its own), and a
    /// `Content-Disposition` taken from the `cd` query item when there is one.
    static func echoServer() async throws -> ScriptedServer {
        try await ScriptedServer.start([
            .route { target in
                let disposition = URLComponents(string: target)?.queryItems?.first { $0.name == "cd" }?.value
                return ScriptedServer.ok(target, headers: disposition.map { ["Content-Disposition: \($0)"] } ?? [])
            }
        ])
    }

    @Test("traversing, absolute, NUL, bidi, 300-byte and colliding names all stay inside --output-dir")
    func hostileNames() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await Self.echoServer()
        let output = scratch.url.appendingPathComponent("out/a/b")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: scratch.url.appendingPathComponent("victim.txt"))
        try Data("keep me".utf8).write(to: output.appendingPathComponent("existing.txt"))
        let long = String(repeating: "n", count: 300)
        let targets = [
            "/any%2F..%2F..%2F..%2Fvictim.txt",
            "/x/%2E%2E",
            "/d1?cd=" + percentEncoded(#"attachment; filename="/etc/passwd""#),
            "/d2?cd=" + percentEncoded(#"attachment; filename="../../../victim.txt""#),
            "/d3?cd=" + percentEncoded("attachment; filename*=UTF-8''a%00b.txt"),
            "/d4?cd=" + percentEncoded("attachment; filename*=UTF-8''invoice%E2%80%AEfdp.exe"),
            "/\(long).bin",
            "/same/report.pdf",
            "/other/report.pdf",
            "/existing.txt",
        ]
        let run = try await ActivityCounterProcess.run(
            ["fetch", "--output-dir", output.path] + targets.map { server.url($0).absoluteString })
        try await server.shutdown()
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")

        // Outside --output-dir: only what was there before, unchanged.
        let all = try scratch.files()
        #expect(all.filter { !$0.hasPrefix("out/a/b/") } == ["victim.txt"])
        #expect(try scratch.contents("victim.txt") == Data("mine".utf8))
        #expect(try scratch.contents("out/a/b/existing.txt") == Data("keep me".utf8))

        let saved = Set(try scratch.files(in: "out/a/b"))
        let longName = String(repeating: "n", count: 251) + ".bin"  // 255 bytes, the extension kept
        #expect(
            saved == [
                "victim.txt", "victim-2.txt", "download", "passwd", "ab.txt", "invoicefdp.exe", longName,
                "report.pdf", "report-2.pdf", "existing.txt", "existing-2.txt",
            ])
        // Each URL's bytes (its own request target) in a file of its own.
        var bodies: [String] = []
        for name in saved where name != "existing.txt" {
            bodies.append(String(decoding: try scratch.contents("out/a/b/" + name), as: UTF8.self))
        }
        #expect(bodies.sorted() == targets.sorted())
        #expect(saved.allSatisfy { $0.utf8.count <= 255 && !$0.contains("/") && !$0.hasPrefix(".") })
    }

    @Test("--overwrite replaces an existing file in --output-dir; without it the download is saved beside it")
    func overwrite() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await Self.echoServer()
        let output = scratch.url.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        try Data("old".utf8).write(to: output.appendingPathComponent("file.txt"))
        let url = server.url("/file.txt").absoluteString
        let beside = try await ActivityCounterProcess.run(["fetch", url, "--output-dir", output.path])
        #expect(beside.status == 0)
        #expect(try scratch.files(in: "out") == ["file-2.txt", "file.txt"])
        #expect(try scratch.contents("out/file.txt") == Data("old".utf8))
        let replaced = try await ActivityCounterProcess.run(["fetch", url, "--output-dir", output.path, "--overwrite"])
        try await server.shutdown()
        #expect(replaced.status == 0)
        #expect(try scratch.files(in: "out") == ["file-2.txt", "file.txt"])
        #expect(try scratch.contents("out/file.txt") == Data("/file.txt".utf8))
    }

    @Test("--overwrite keeps the replaced file's permissions; a new file gets the umask's")
    func overwriteKeepsMode() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await Self.echoServer()
        let output = scratch.url.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        for (name, mode) in [("script.sh", 0o4750), ("private.txt", 0o600)] {
            let file = output.appendingPathComponent(name)
            try Data("old".utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file.path)
        }
        let run = try await ActivityCounterProcess.run(
            [
                "fetch", server.url("/script.sh").absoluteString, server.url("/private.txt").absoluteString,
                server.url("/new.txt").absoluteString, "--output-dir", output.path, "--overwrite",
            ])
        try await server.shutdown()
        #expect(run.status == 0, "\(run.stderr)")
        func mode(_ name: String) throws -> Int {
            let attributes = try FileManager.default.attributesOfItem(atPath: output.appendingPathComponent(name).path)
            return try #require(attributes[.posixPermissions] as? Int)
        }
        #expect(try scratch.contents("out/script.sh") == Data("/script.sh".utf8))
        // Before, both came back 0644 (0666 less the umask): the script no longer ran, the private file was readable.
        // The set-user-ID bit stays behind: it must not pass to downloaded bytes.
        #expect(try mode("script.sh") == 0o750)
        #expect(try mode("private.txt") == 0o600)
        let mask = umask(0o022)
        umask(mask)
        #expect(try mode("new.txt") == 0o666 & ~Int(mask))
    }

    @Test("a file a server names like --continue's resume files is saved as any other, and never read back as one")
    func plantedResumeFiles() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let output = scratch.url.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        let planted = Mutex(#"{"url":"unset"}"#)
        // The planting URLs answer with the body the route is given; names come from `Content-Disposition`.
        let server = try await ScriptedServer.start([
            .route { target in
                let disposition = URLComponents(string: target)?.queryItems?.first { $0.name == "cd" }?.value
                let body = target.hasPrefix("/resume") ? planted.withLock { $0 } : "bytes of the server's choosing"
                return ScriptedServer.ok(body, headers: disposition.map { ["Content-Disposition: \($0)"] } ?? [])
            }
        ])
        // Another URL's resume files, whose names anyone who knows that URL can work out.
        let victim = server.url("/victim.iso")
        let store = ResumeStore(outputDirectory: output)
        planted.withLock { $0 = #"{"url":"\#(victim.absoluteString)","bytesReceived":1000}"# }
        let targets = [
            "/resume?cd="
                + percentEncoded("attachment; filename=\"\(store.resumeFile(for: victim).lastPathComponent)\""),
            "/part?cd="
                + percentEncoded("attachment; filename=\"\(store.partialFile(for: victim).lastPathComponent)\""),
        ]
        let run = try await ActivityCounterProcess.run(
            ["fetch", "--continue", "--output-dir", output.path] + targets.map { server.url($0).absoluteString })
        try await server.shutdown()
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        // Saved under the names the server gave, as any file: beside the index, not where resume files are kept.
        let saved = try scratch.files(in: "out")
        #expect(saved.contains(store.resumeFile(for: victim).lastPathComponent), "\(saved)")
        #expect(saved.contains(store.partialFile(for: victim).lastPathComponent), "\(saved)")
        #expect(store.resumeFile(for: victim).deletingLastPathComponent().lastPathComponent == ResumeStore.folderName)
        // Before, the resume files were kept beside the saved ones: the planted file was the victim's resume data.
        #expect(store.load(for: victim) == nil)
    }

    @Test("resume files in a folder others can write in (another user's, in a shared --output-dir) are not read")
    func sharedResumeFolder() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let output = scratch.url.appendingPathComponent("out")
        let store = ResumeStore(outputDirectory: output)
        try FileManager.default.createDirectory(at: store.directory, withIntermediateDirectories: true)
        let url = try #require(URL(string: "http://127.0.0.1:9/file.iso"))
        try Data(#"{"url":"\#(url.absoluteString)","bytesReceived":10}"#.utf8).write(to: store.resumeFile(for: url))
        #expect(chmod(store.directory.path, 0o777) == 0)
        // Before, whatever such a folder held was taken for this user's own resume data.
        #expect(store.load(for: url) == nil)
        #expect(chmod(store.directory.path, 0o700) == 0)
        #expect(store.load(for: url) != nil)
    }

    private func percentEncoded(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
