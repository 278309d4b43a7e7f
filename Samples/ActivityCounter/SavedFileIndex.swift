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
/// the log shows it (no user name or password, signatures redacted), to the saved file's name. It is written
/// whole or not at all (a new file renamed over the old one), readable by its owner only; an index that can't
/// be read or parsed counts as empty: the URLs are fetched again, never skipped wrongly.
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

    /// The file an earlier run saved from `url`, when it is still there (a regular file, not a symlink).
    func existingFile(for url: URL) -> URL? {
        guard let name = lock.withLock({ _ in read()[Self.key(for: url)] }) else { return nil }
        let file = directory.appendingPathComponent(name, isDirectory: false)
        var status = stat()
        guard lstat(file.path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return file
    }

    /// Records that `file` (in ``directory``) was saved from `url`; any other URL recorded for the same name
    /// is forgotten, its file having been replaced.
    ///
    /// - Throws: The error that kept the index from being written; the index is then as it was.
    func record(_ file: URL, for url: URL) throws {
        let name = file.lastPathComponent
        try lock.withLock { _ in
            // Read again under the lock: another download of this run may have saved since.
            var entries = read().filter { $0.value != name }
            entries[Self.key(for: url)] = name
            let object: [String: Any] = ["version": 1, "files": entries]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
            try ResumeStore.writePrivately(data, to: self.file)
        }
    }

    /// The entries that make sense: names that are one safe path component, never the index's own.
    private func read() -> [String: String] {
        guard let data = try? Data(contentsOf: file),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let files = object["files"] as? [String: Any]
        else { return [:] }
        var entries: [String: String] = [:]
        for (key, value) in files {
            guard let name = value as? String, !name.isEmpty, name != ".", name != "..", name != Self.fileName,
                !name.contains("/"), !name.contains("\0")
            else { continue }
            entries[key] = name
        }
        return entries
    }
}
