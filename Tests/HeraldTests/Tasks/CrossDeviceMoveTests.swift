import Foundation
import Testing

@testable import Herald

#if canImport(Glibc)
    import Glibc
#endif

/// `/dev/shm` when it is a folder on another device than the temporary folder.
private func otherDevice() -> URL? {
    var shared = stat()
    var temporary = stat()
    guard stat("/dev/shm", &shared) == 0, (shared.st_mode & S_IFMT) == S_IFDIR,
        stat(FileManager.default.temporaryDirectory.path, &temporary) == 0, shared.st_dev != temporary.st_dev
    else { return nil }
    return URL(fileURLWithPath: "/dev/shm", isDirectory: true)
}

/// A download moved onto another file system with `.replaceExistingFile`, where rename(2) can't reach: between
/// the system's temporary folder and `/dev/shm` (a tmpfs), when the two are on different devices.
@Suite(
    "Download moves across file systems",
    .enabled(if: otherDevice() != nil, "/dev/shm is on the temporary folder's device, or absent"))
struct CrossDeviceMoveTests {
    /// A source in the temporary folder and a destination in a folder of its own on the other device, so
    /// that what is left beside the destination is this test's alone, whatever runs beside it.
    private struct Files {
        let source: URL
        let folder: URL
        let destination: URL

        init() throws {
            let other = try #require(otherDevice())
            source = FileManager.default.temporaryDirectory.appendingPathComponent("herald-move-\(UUID().uuidString)")
            folder = other.appendingPathComponent("herald-move-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            destination = folder.appendingPathComponent("destination")
            try Data("new".utf8).write(to: source)
            try Data("old, keep me".utf8).write(to: destination)
        }

        func remove() {
            unlink(source.path)
            try? FileManager.default.removeItem(at: folder)
        }

        /// The files Herald left beside the destination.
        func leftovers() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
                $0 != destination.lastPathComponent
            }
        }
    }

    @Test("replacing across file systems: the new file takes the old one's place, and the source goes")
    func replaces() throws {
        let files = try Files()
        defer { files.remove() }
        try DownloadTask.moveItem(at: files.source, to: files.destination, options: [.replaceExistingFile])
        #expect(FileManager.default.contents(atPath: files.destination.path) == Data("new".utf8))
        #expect(!FileManager.default.fileExists(atPath: files.source.path))
        #expect(try files.leftovers().isEmpty)
    }

    @Test("a copy that fails (a full disk) leaves the file it was to replace whole, and the download where it was")
    func failedCopyLosesNothing() throws {
        let files = try Files()
        defer { files.remove() }
        struct DiskFull: Error {}
        #expect(throws: DiskFull.self) {
            try DownloadTask.moveItem(at: files.source, to: files.destination, options: [.replaceExistingFile]) {
                _, sibling in
                // Half a copy, then the failure.
                try Data("ne".utf8).write(to: sibling)
                throw DiskFull()
            }
        }
        #expect(FileManager.default.contents(atPath: files.destination.path) == Data("old, keep me".utf8))
        #expect(FileManager.default.contents(atPath: files.source.path) == Data("new".utf8))
        #expect(try files.leftovers().isEmpty)
    }

    @Test("without replacing, across file systems: a free name gets the whole file; a taken one is refused, both kept")
    func movesWithoutReplacing() throws {
        let files = try Files()
        defer { files.remove() }
        #expect(throws: POSIXError.self) {
            try DownloadTask.moveItem(at: files.source, to: files.destination, options: [])
        }
        #expect(FileManager.default.contents(atPath: files.destination.path) == Data("old, keep me".utf8))
        #expect(FileManager.default.contents(atPath: files.source.path) == Data("new".utf8))
        #expect(try files.leftovers().isEmpty)
        let free = files.folder.appendingPathComponent("free")
        try DownloadTask.moveItem(at: files.source, to: free, options: [])
        #expect(FileManager.default.contents(atPath: free.path) == Data("new".utf8))
        #expect(!FileManager.default.fileExists(atPath: files.source.path))
        #expect(try files.leftovers() == ["free"])
    }

    @Test("without replacing, a copy that fails part-way leaves nothing under the destination's name")
    func failedCopyWithoutReplacingShowsNoPartialFile() throws {
        let files = try Files()
        defer { files.remove() }
        struct DiskFull: Error {}
        let free = files.folder.appendingPathComponent("free")
        #expect(throws: DiskFull.self) {
            try DownloadTask.moveItem(at: files.source, to: free, options: []) { _, copy in
                try Data("ne".utf8).write(to: copy)
                // What another process sees while the copy runs: not the destination's name.
                #expect(!FileManager.default.fileExists(atPath: free.path))
                throw DiskFull()
            }
        }
        #expect(!FileManager.default.fileExists(atPath: free.path))
        #expect(FileManager.default.contents(atPath: files.source.path) == Data("new".utf8))
        #expect(try files.leftovers().isEmpty)
    }

    @Test("without replacing, onto a file system without hard links (FAT): the copy takes a free name, not a taken one")
    func movesOntoFileSystemWithoutLinks() throws {
        let files = try Files()
        defer { files.remove() }
        // A FAT or exFAT drive: no link(2) at all; from the temporary folder, another device.
        let noLinks: (String, String) -> Int32 = { from, _ in
            errno = from == files.source.path ? EXDEV : EPERM
            return -1
        }
        #expect(throws: POSIXError.self) {
            try DownloadTask.moveItem(at: files.source, to: files.destination, options: [], makeLink: noLinks)
        }
        #expect(FileManager.default.contents(atPath: files.destination.path) == Data("old, keep me".utf8))
        #expect(FileManager.default.contents(atPath: files.source.path) == Data("new".utf8))
        #expect(try files.leftovers().isEmpty)
        let free = files.folder.appendingPathComponent("free")
        try DownloadTask.moveItem(at: files.source, to: free, options: [], makeLink: noLinks)
        #expect(FileManager.default.contents(atPath: free.path) == Data("new".utf8))
        #expect(!FileManager.default.fileExists(atPath: files.source.path))
        #expect(try files.leftovers() == ["free"])
    }
}

/// A download moved within one file system that has no hard links (FAT, some FUSE ones): the name is reserved
/// before the file is renamed onto it, so a taken name is never replaced.
@Suite("Download moves on a file system without hard links")
struct NoLinkMoveTests {
    @Test("a free name gets the file; a taken one is refused with EEXIST, both files kept")
    func reservesTheName() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-nolink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("source")
        let taken = folder.appendingPathComponent("taken")
        try Data("new".utf8).write(to: source)
        try Data("old, keep me".utf8).write(to: taken)
        let noLinks: (String, String) -> Int32 = { _, _ in
            errno = EPERM
            return -1
        }
        let refused = #expect(throws: POSIXError.self) {
            try DownloadTask.moveItem(at: source, to: taken, options: [], makeLink: noLinks)
        }
        #expect(refused?.code == .EEXIST)
        #expect(FileManager.default.contents(atPath: taken.path) == Data("old, keep me".utf8))
        #expect(FileManager.default.contents(atPath: source.path) == Data("new".utf8))
        let free = folder.appendingPathComponent("free")
        try DownloadTask.moveItem(at: source, to: free, options: [], makeLink: noLinks)
        #expect(FileManager.default.contents(atPath: free.path) == Data("new".utf8))
        #expect(!FileManager.default.fileExists(atPath: source.path))
    }
}
