import Foundation
import HeraldObservers
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `--continue`: which URL each file in `--output-dir` was saved from, so that a later run skips exactly the
/// URLs whose file is still there, and nothing else.
///
/// A file's name says little about where it came from: `/a/f.txt` and `/b/f.txt` (or `/get?id=1` and
/// `/get?id=2`) suggest the same name, and a name from `Content-Disposition` or a redirect's target is not
/// the URL's at all. So each save is recorded in ``fileName`` in the directory: a JSON object from the URL, as
/// the log shows it (no user name or password, signatures redacted), to the saved file's name and identity (its
/// device, inode, size and modification time when it was saved). A file of that name that is no longer that
/// file (replaced by a run without `--continue`, by another URL's download with `--overwrite`, deleted and made
/// again) is no reason to skip the URL. The index is written whole or not at all (a new file renamed over the
/// old one), readable by its owner only; an index that can't be read or parsed, or an entry without an identity
/// (an older run's), counts as empty: the URLs are fetched again, never skipped wrongly.
final class SavedFileIndex: Sendable {
    /// The index's name in `--output-dir`; ``OutputDirectory`` never saves a download under it.
    static let fileName = ".activity-counter-index.json"

    let directory: URL
    /// Serializes read-modify-write between this run's downloads.
    private let lock = Mutex(())

    init(directory: URL) {
        self.directory = directory
    }

    private var file: URL { directory.appendingPathComponent(Self.fileName, isDirectory: false) }

    /// The URL as the index keeps it: as the log shows it, so that no password is ever written.
    static func key(for url: URL) -> String {
        LogRedaction.default.redacting(url)
    }

    /// What tells a saved file from another file given its name since: where it is and what it holds.
    struct Identity: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        /// The modification time, in nanoseconds since 1970.
        var modified: Int64

        /// The identity of the regular file at `path` (not followed through a symlink), or `nil`.
        init?(ofFileAt path: String) {
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
            size = Int64(status.st_size)
            modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        }

        /// Read from the index, where each number is a decimal string: a JSON number past 2^53 (a modification time
        /// in nanoseconds is) may come back rounded as a double.
        init?(json: [String: Any]) {
            guard let device = (json["device"] as? String).flatMap({ UInt64($0) }),
                let inode = (json["inode"] as? String).flatMap({ UInt64($0) }),
                let size = (json["size"] as? String).flatMap({ Int64($0) }),
                let modified = (json["modified"] as? String).flatMap({ Int64($0) })
            else { return nil }
            self.device = device
            self.inode = inode
            self.size = size
            self.modified = modified
        }

        var json: [String: Any] {
            ["device": String(device), "inode": String(inode), "size": String(size), "modified": String(modified)]
        }
    }

    /// One saved file: its name in ``directory`` and its identity when it was saved.
    struct Entry {
        var name: String
        var identity: Identity
    }

    /// The file an earlier run saved from `url`, when it is still there and still that file: a regular file (not
    /// a symlink) of the identity recorded when it was saved.
    func existingFile(for url: URL) -> URL? {
        guard let entry = lock.withLock({ _ in read()[Self.key(for: url)] }) else { return nil }
        let file = directory.appendingPathComponent(entry.name, isDirectory: false)
        guard Identity(ofFileAt: file.path) == entry.identity else { return nil }
        return file
    }

    /// Records that `file` (in ``directory``) was saved from `url`, as it is now; any other URL recorded for the
    /// same name is forgotten, its file having been replaced.
    ///
    /// - Throws: The error that kept the index from being written; the index is then as it was.
    func record(_ file: URL, for url: URL) throws {
        let name = file.lastPathComponent
        // Gone already (removed meanwhile): nothing to skip later, and the name's other entries go all the same.
        let identity = Identity(ofFileAt: file.path)
        try lock.withLock { _ in
            // Read again under the lock: another download of this run may have saved since.
            var entries = read().filter { $0.value.name != name }
            if let identity { entries[Self.key(for: url)] = Entry(name: name, identity: identity) }
            let files = entries.mapValues { entry -> [String: Any] in
                var json = entry.identity.json
                json["name"] = entry.name
                return json
            }
            let object: [String: Any] = ["version": 2, "files": files]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
            try ResumeStore.writePrivately(data, to: self.file)
        }
    }

    /// The entries that make sense: names that are one safe path component, never the index's own, each with an
    /// identity (an older index's plain names have none, and are left out).
    private func read() -> [String: Entry] {
        guard let data = try? Data(contentsOf: file),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let files = object["files"] as? [String: Any]
        else { return [:] }
        var entries: [String: Entry] = [:]
        for (key, value) in files {
            guard let json = value as? [String: Any], let name = json["name"] as? String, !name.isEmpty,
                name != ".", name != "..", name != Self.fileName, !name.contains("/"), !name.contains("\0"),
                let identity = Identity(json: json)
            else { continue }
            entries[key] = Entry(name: name, identity: identity)
        }
        return entries
    }
}
