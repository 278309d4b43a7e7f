import Foundation
import HeraldObservers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `--continue`: where an interrupted download's bytes and resume data are kept between runs.
///
/// In a hidden folder of `--output-dir`, `.activity-counter-resume`, a download that was interrupted (Ctrl-C,
/// SIGHUP, SIGTERM, a connection lost for good) leaves `download-KEY.part` (the bytes so far) and
/// `download-KEY.resume` (Herald's resume data: the URL, the validator, how many bytes). `KEY` is a hash of the
/// URL, so the next run with `--continue` finds them again and asks the server only for the rest. Both files go
/// once the download is saved, and the folder, once empty, at the end of the run.
///
/// Not beside the saved files: their names are the servers' (`Content-Disposition`, the URL's last component), and
/// a server that named a file `download-KEY.resume` for another URL's `KEY`, which anyone who knows the URL can
/// work out, would have the next run continue that URL from bytes of its choosing. A saved file's name is one
/// path component without leading dots, so it can never be this folder or inside it.
///
/// The folder is its owner's only (0700; one found there that isn't, such as another user's in a shared
/// `--output-dir`, is neither read nor written), both files too (0600), and neither holds the URL's credentials: the
/// resume file stores the URL redacted, `KEY` hashes the redacted URL, and the URL given on the next run,
/// credentials and all, is the one the download continues with.
struct ResumeStore: Sendable {
    /// The folder's name inside `--output-dir`.
    static let folderName = ".activity-counter-resume"

    /// Where the files are kept.
    let directory: URL

    /// The store for `outputDirectory` (`--output-dir`).
    init(outputDirectory: URL) {
        directory = outputDirectory.appendingPathComponent(Self.folderName)
    }

    /// The URL as the resume file keeps it: without user name and password.
    private func stored(_ url: URL) -> String {
        LogRedaction.default.redacting(url)
    }

    private func key(for url: URL) -> String {
        // FNV-1a: stable across runs and processes (Swift's hashValue is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in stored(url).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    /// The partial file kept for `url`.
    func partialFile(for url: URL) -> URL {
        directory.appendingPathComponent("download-\(key(for: url)).part")
    }

    /// The resume data file kept for `url`.
    func resumeFile(for url: URL) -> URL {
        directory.appendingPathComponent("download-\(key(for: url)).resume")
    }

    /// The resume data kept for `url`, pointing at the partial file where it is now; `nil` when there is none, it
    /// is for another URL, or the folder is not one this store would have made (another user's, in a shared
    /// `--output-dir`, say, or one others can write in).
    func load(for url: URL) -> Data? {
        guard isPrivateFolder(), let data = try? Data(contentsOf: resumeFile(for: url)),
            var object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let saved = object["url"] as? String, saved == stored(url)
        else { return nil }
        object["url"] = url.absoluteString
        object["partialFilePath"] = partialFile(for: url).path
        // The continuation starts again at the URL given, not where a redirect led: the fields and credentials
        // sent are that URL's own, and Herald's mark that the resume data's URL left the first origin no longer
        // holds (left in, it would strip them from the very request they are for).
        object.removeValue(forKey: "leftOrigin")
        return try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// Keeps `resumeData`'s partial file as ``partialFile(for:)`` and the resume data beside it.
    ///
    /// - Returns: The partial file's path, or `nil` (and nothing kept) when either could not be written.
    func keep(_ resumeData: Data, for url: URL) -> String? {
        guard var object = try? JSONSerialization.jsonObject(with: resumeData) as? [String: Any],
            let source = object["partialFilePath"] as? String
        else { return nil }
        let partial = partialFile(for: url)
        let manager = FileManager.default
        do {
            try makeDirectory()
            if URL(fileURLWithPath: source).standardizedFileURL != partial.standardizedFileURL {
                if manager.fileExists(atPath: partial.path) { try manager.removeItem(at: partial) }
                try manager.moveItem(at: URL(fileURLWithPath: source), to: partial)
            }
            object["partialFilePath"] = partial.path
            object["url"] = stored(url)
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            try Self.writePrivately(data, to: resumeFile(for: url))
            return partial.path
        } catch {
            try? manager.removeItem(atPath: source)
            try? manager.removeItem(at: partial)
            return nil
        }
    }

    /// Writes `data` to `file` whole or not at all, readable by its owner only: into a new file made with
    /// `O_EXCL | O_NOFOLLOW`, mode 0600, renamed over `file`.
    static func writePrivately(_ data: Data, to file: URL) throws {
        let temporary = file.deletingLastPathComponent()
            .appendingPathComponent(".\(file.lastPathComponent).\(UUID().uuidString)")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            try handle.write(contentsOf: data)
            try handle.close()
            guard rename(temporary.path, file.path) == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        } catch {
            unlink(temporary.path)
            throw error
        }
    }

    /// Removes what was kept for `url` (after it was saved, or when its resume data was refused).
    func discard(for url: URL) {
        try? FileManager.default.removeItem(at: resumeFile(for: url))
        try? FileManager.default.removeItem(at: partialFile(for: url))
    }

    /// Removes the folder if nothing is kept in it. Once the run's downloads have ended: meanwhile another download
    /// may be about to keep its files there.
    func removeFolderIfEmpty() {
        rmdir(directory.path)  // fails, as it should, while a download's files are there
    }

    /// Makes ``directory`` (0700) unless it is there; one that is there must be private (``isPrivateFolder()``).
    private func makeDirectory() throws {
        if mkdir(directory.path, 0o700) == 0 { return }
        guard errno == EEXIST else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        guard isPrivateFolder() else { throw POSIXError(.EACCES) }
    }

    /// Whether ``directory`` is a folder of this user's that no one else can write in, not a link.
    private func isPrivateFolder() -> Bool {
        var status = stat()
        return lstat(directory.path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
            && status.st_uid == geteuid() && status.st_mode & 0o022 == 0
    }
}
