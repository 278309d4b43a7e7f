import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Temporary files no other user can touch")
struct TemporaryFolderTests {
    /// The tests that act as the user nobody (with setpriv), or mount a tmpfs, need root; CI runs as root.
    static let needsRoot = ConditionTrait.enabled(
        if: geteuid() == 0, "acts as another user or mounts a file system: needs root (CI runs as root)")

    @Test("a session's temporary folder has a random name, mode 0700, and belongs to the process's user")
    func privateFolder() async throws {
        let fixture = try await SessionFixture.make()
        let (url, _) = try await fixture.session.download(for: Request(url: fixture.server.url("/bytes/1000")))
        let folder = url.deletingLastPathComponent()
        #expect(folder.lastPathComponent.hasPrefix("herald-"))
        #expect(!folder.lastPathComponent.contains("\(getpid())"))
        var status = stat()
        #expect(lstat(folder.path, &status) == 0)
        #expect(status.st_mode & S_IFMT == S_IFDIR)
        #expect(status.st_mode & 0o777 == 0o700)
        #expect(status.st_uid == geteuid())
        #expect(lstat(url.path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        try FileManager.default.removeItem(at: url)
        try await fixture.tearDown()
    }

    @Test(
        "another user's planted folders and symlinks are never used; nothing is written outside the chosen folders",
        needsRoot,
        arguments: [true, false])
    func plantedFoldersAreIgnored(usesOption: Bool) async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        // A folder everyone may write, as /tmp is: the chosen one, or the process's temporary directory.
        let shared = scratch.url.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: false)
        #expect(chmod(shared.path, 0o1777) == 0)
        #expect(chmod(scratch.url.path, 0o755) == 0)
        let parent = usesOption ? shared : FileManager.default.temporaryDirectory
        var configuration = SessionConfiguration()
        if usesOption { configuration.temporaryDirectory = shared }
        let fixture = try await SessionFixture.make(configuration: configuration)
        // The names a predictable scheme (process ID, session number) would give this session and the next: half folders of the
        // other user, half symlinks to a folder of theirs.
        let names = (0..<40).map { "herald-\(getpid())-session-\(fixture.session.identifier + $0)" }
        let trap = scratch.url.appendingPathComponent("attacker")
        let script = """
            trap=$1; parent=$2; shift 2; mkdir -m 777 "$trap" || exit 1; odd=0
            for name; do
                if [ $odd = 1 ]; then ln -s "$trap" "$parent/$name"; else mkdir -m 777 "$parent/$name"; fi || exit 1
                odd=$((1 - odd))
            done
            """
        #expect(chmod(scratch.url.path, 0o777) == 0)
        try OtherUser.run(["/bin/sh", "-c", script, "sh", trap.path, parent.path] + names)
        #expect(chmod(scratch.url.path, 0o755) == 0)
        defer {
            for name in names {
                unlink(parent.appendingPathComponent(name).path); rmdir(parent.appendingPathComponent(name).path)
            }
        }

        let destination = scratch.url.appendingPathComponent("result.bin")
        let size = 300_000
        // Looked at when the whole body is on disk, before the move: what the other user's folders hold then.
        let seenByTheOtherUser = Locked<[String]>([])
        let (url, _) = try await fixture.session.download(
            for: Request(url: fixture.server.url("/bytes/\(size)")),
            destination: { _, _ in
                let planted = [trap.path] + names.map { parent.appendingPathComponent($0).path }
                let entries = planted.flatMap { (try? FileManager.default.contentsOfDirectory(atPath: $0)) ?? [] }
                seenByTheOtherUser.withLock { $0 = entries }
                return destination
            })
        #expect(seenByTheOtherUser.withLock { $0 } == [])
        #expect(url == destination)
        #expect(try PatternFile.matches(destination, count: size))
        var status = stat()
        #expect(stat(destination.path, &status) == 0)
        #expect(status.st_uid == geteuid())
        // Nothing in the other user's folders, nothing where the symlinks point.
        #expect(try FileManager.default.contentsOfDirectory(atPath: trap.path).isEmpty)
        for (index, name) in names.enumerated() where index % 2 == 0 {
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: parent.appendingPathComponent(name).path).isEmpty)
        }
        let folder = try #require(fixture.session.downloadDirectory.madeURL)
        #expect(folder.deletingLastPathComponent().standardizedFileURL.path == parent.standardizedFileURL.path)
        #expect(!names.contains(folder.lastPathComponent))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        if usesOption {
            // The chosen folder holds the planted names and the session's own hidden folder, nothing else.
            let entries = Set(try FileManager.default.contentsOfDirectory(atPath: shared.path))
            #expect(entries == Set(names).union([folder.lastPathComponent]))
            #expect(folder.lastPathComponent.hasPrefix(".herald-"))
        }
        await fixture.session.invalidateAndWait()
        #expect(!FileManager.default.fileExists(atPath: folder.path))
        try await fixture.server.shutdown()
    }

    @Test("a chosen folder others could rename entries in is refused before anything is made there", needsRoot)
    func unsafeChosenFolders() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let open = scratch.url.appendingPathComponent("open")
        let theirs = scratch.url.appendingPathComponent("theirs")
        let file = scratch.url.appendingPathComponent("file")
        for folder in [open, theirs] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        }
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data()))
        #expect(chmod(open.path, 0o777) == 0)
        #expect(chown(theirs.path, 65534, 65534) == 0)
        let server = try await TestServer.start()
        for folder in [open, theirs, file, scratch.url.appendingPathComponent("missing")] {
            var configuration = SessionConfiguration()
            configuration.temporaryDirectory = folder
            let session = SessionManager(configuration: configuration, notificationCenter: NotificationHub())
            #expect {
                _ = try session.downloadTask(with: Request(url: server.url("/bytes/10")))
            } throws: { error in
                (error as? HeraldError)?.code == .fileIO
            }
            await session.invalidateAndWait()
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: open.path).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: theirs.path).isEmpty)
        try await server.shutdown()
    }

    @Test("an existing temporary file is written only if it is a regular file of ours with one link")
    func existingFileChecks() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let victim = scratch.url.appendingPathComponent("victim")
        #expect(FileManager.default.createFile(atPath: victim.path, contents: Data("keep".utf8)))
        let symlink = scratch.url.appendingPathComponent("download-1.part")
        #expect(Glibc.symlink(victim.path, symlink.path) == 0)
        #expect(throws: TransferError.self) { try PrivateFile.openForWriting(symlink) }
        let hardLink = scratch.url.appendingPathComponent("download-2.part")
        #expect(link(victim.path, hardLink.path) == 0)
        #expect(throws: TransferError.self) { try PrivateFile.openForWriting(hardLink) }
        #expect(try String(contentsOf: victim, encoding: .utf8) == "keep")
        let fresh = scratch.url.appendingPathComponent("download-3.part")
        let descriptor = try PrivateFile.openForWriting(fresh)
        close(descriptor)
        var status = stat()
        #expect(stat(fresh.path, &status) == 0 && status.st_mode & 0o777 == 0o600)
        let again = try PrivateFile.openForWriting(fresh)
        close(again)
    }

    @Test(
        "a download larger than a small temporary file system succeeds with the folder on the destination's", needsRoot)
    func largerThanSmallTemporaryFileSystem() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let small = scratch.url.appendingPathComponent("small-tmp")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: false)
        guard mount("tmpfs", small.path, "tmpfs", 0, "size=1m,mode=1777") == 0 else {
            Issue.record("mounting a tmpfs failed: \(String(cString: strerror(errno)))")
            return
        }
        defer { umount2(small.path, Int32(MNT_DETACH)) }
        let size = 3 << 20
        let output = scratch.url.appendingPathComponent("output")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: false)

        var onSmall = SessionConfiguration()
        onSmall.temporaryDirectory = small
        let failing = try await SessionFixture.make(configuration: onSmall)
        await #expect {
            _ = try await failing.session.download(
                for: Request(url: failing.server.url("/bytes/\(size)")), to: output.appendingPathComponent("a.bin"))
        } throws: { error in
            (error as? HeraldError)?.code == .fileIO
        }
        try await failing.tearDown()

        var beside = SessionConfiguration()
        beside.temporaryDirectory = output
        let fixture = try await SessionFixture.make(configuration: beside)
        let inode = Locked<ino_t>(0)
        let destination = output.appendingPathComponent("b.bin")
        _ = try await fixture.session.download(
            for: Request(url: fixture.server.url("/bytes/\(size)")),
            destination: { temporaryURL, _ in
                var status = stat()
                if stat(temporaryURL.path, &status) == 0 { inode.withLock { $0 = status.st_ino } }
                return destination
            })
        #expect(try PatternFile.matches(destination, count: size))
        var status = stat()
        #expect(stat(destination.path, &status) == 0)
        // The same file, renamed into place: not a copy.
        #expect(status.st_ino == inode.withLock { $0 })
        try await fixture.tearDown()
    }
}

/// Runs a command as the user `nobody`, as another local user of the machine would.
enum OtherUser {
    static func run(_ arguments: [String]) throws {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"] + arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw HeraldError(.internal, "setpriv \(arguments.first ?? "") exited \(process.terminationStatus)")
        }
    }
}
