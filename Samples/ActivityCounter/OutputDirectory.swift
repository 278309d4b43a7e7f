import Foundation
import Herald
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `--output-dir`: checked before the first request, and the only place a download is ever saved.
///
/// A saved file's name is the response's ``HTTPResponse/suggestedFilename`` (`Content-Disposition`, else the
/// URL's last path component, through Herald's safe-filename rules: one path component, no `..`, no control
/// or bidirectional characters, at most 255 bytes), so it can't name a path outside the directory. Two URLs
/// that suggest the same name get `name-2.ext`, `name-3.ext`…; a file already there is never replaced unless
/// `overwrite` is set, and even then only a regular file is.
final class OutputDirectory: Sendable {
    /// The directory, absolute and standardized.
    let url: URL
    let overwrite: Bool
    /// The permissions a saved file gets: `0666 & ~umask`, as `open(2)` would give a new file (Herald writes
    /// its temporary files as 0600, readable by no one else while they are incomplete).
    let fileMode: mode_t
    /// The names handed out this run, and the `--continue` index's, never a download's.
    private let claimed = Mutex<Set<String>>([SavedFileIndex.fileName])
    /// The permission bits of each file a claimed name replaces (`overwrite`): the download that replaces it
    /// keeps them, as a file rewritten in place would (an executable script stays executable, a private file
    /// private), without the set-user-ID, set-group-ID and sticky bits.
    private let replacedModes = Mutex<[String: mode_t]>([:])

    /// Why the directory can't be used: one line for the user.
    struct Unusable: Error, CustomStringConvertible {
        let description: String
    }

    /// Creates `path` if it is missing and proves it can be written by creating and removing a file in it.
    ///
    /// - Throws: ``Unusable`` when it is not a directory, can't be created, or can't be written.
    init(path: String, overwrite: Bool) throws(Unusable) {
        let url = URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw Unusable(description: "--output-dir \(path) exists and is not a directory")
            }
        } else {
            do {
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            } catch {
                throw Unusable(description: "--output-dir \(path) can't be created: \(Self.reason(error))")
            }
        }
        // access(W_OK) says nothing about a full disk or a read-only mount for root: write a byte for real.
        let probe = url.appendingPathComponent(".activity-counter-probe-\(getpid())").path
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else {
            throw Unusable(description: "--output-dir \(path) is not writable: \(String(cString: strerror(errno)))")
        }
        let written = write(descriptor, "x", 1)
        let writeErrno = errno
        close(descriptor)
        unlink(probe)
        guard written == 1 else {
            throw Unusable(
                description: "--output-dir \(path) is not writable: \(String(cString: strerror(writeErrno)))")
        }
        self.url = url
        self.overwrite = overwrite
        // umask can only be read by setting it: set it back at once, before any download starts.
        let mask = umask(0o022)
        umask(mask)
        self.fileMode = 0o666 & ~mask
    }

    /// Reserves a file name for `response` and returns where to save it: inside ``url``, not used by another
    /// download of this run, and not an existing file unless ``overwrite`` allows replacing it.
    func claim(for response: HTTPResponse) -> URL {
        claim(response.suggestedFilename)
    }

    /// The most names ``claim(_:)`` tries before it gives up and returns the last.
    static let maximumAttempts = 10_000

    /// Keeps `name` from every later ``claim(_:)`` of this run: a file an earlier run saved that this one skips
    /// (`--continue`), which no other URL's download may then replace, even with `--overwrite`.
    func reserve(_ name: String) {
        _ = claimed.withLock { $0.insert(name) }
    }

    /// Reserves `suggested` (already one safe path component) or the first free `name-N.ext` after it. When the
    /// folder can't be read (it was removed, or made unreadable, while the run goes on) or no name is free
    /// within ``maximumAttempts``, it returns a name all the same: the move there fails, and the download is
    /// reported as not saved, instead of the search going on for ever.
    func claim(_ suggested: String) -> URL {
        claimed.withLock { claimed in
            var attempt = 1
            while true {
                let name = Self.numbered(suggested, attempt)
                if !claimed.contains(name) {
                    switch isFree(name) {
                    case .free, .unknown:
                        claimed.insert(name)
                        return url.appendingPathComponent(name, isDirectory: false)
                    case .replaceable(let mode):
                        claimed.insert(name)
                        replacedModes.withLock { $0[name] = mode }
                        return url.appendingPathComponent(name, isDirectory: false)
                    case .taken:
                        break
                    }
                }
                guard attempt < Self.maximumAttempts else {
                    return url.appendingPathComponent(name, isDirectory: false)
                }
                attempt += 1
            }
        }
    }

    /// Gives a saved file ``fileMode``, or the permission bits of the file it replaced, on the file itself,
    /// never through a symlink put in its place.
    func applyFileMode(to file: URL) {
        let descriptor = open(file.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        let replaced = replacedModes.withLock { $0[file.lastPathComponent] }
        fchmod(descriptor, replaced ?? fileMode)
        close(descriptor)
    }

    /// What is at a name in the folder, for ``claim(_:)``.
    private enum NameStatus {
        /// Nothing: the name is free.
        case free
        /// A regular file that ``overwrite`` allows replacing, with its permission bits.
        case replaceable(mode: mode_t)
        /// Something that is not replaced.
        case taken
        /// The folder can't say (an error other than "no such file").
        case unknown
    }

    private func isFree(_ name: String) -> NameStatus {
        var status = stat()
        guard lstat(url.appendingPathComponent(name).path, &status) == 0 else {
            return errno == ENOENT ? .free : .unknown
        }
        guard overwrite, (status.st_mode & S_IFMT) == S_IFREG else { return .taken }
        // The permission bits only: a set-user-ID or set-group-ID bit must not pass to downloaded bytes.
        return .replaceable(mode: status.st_mode & 0o777)
    }

    /// `report.pdf`, `report-2.pdf`, `report-3.pdf`…; kept within 255 UTF-8 bytes by shortening the stem.
    static func numbered(_ name: String, _ attempt: Int) -> String {
        guard attempt > 1 else { return name }
        // An extension is what follows the last dot, when it is short; otherwise the number goes at the end.
        let dot = name.lastIndex(of: ".").flatMap {
            $0 == name.startIndex || name[$0...].utf8.count > 32 ? nil : $0
        }
        var stem = dot.map { String(name[..<$0]) } ?? name
        let suffix = "-\(attempt)" + (dot.map { String(name[$0...]) } ?? "")
        while !stem.isEmpty, stem.utf8.count + suffix.utf8.count > 255 { stem.removeLast() }
        return stem + suffix
    }

    private static func reason(_ error: any Error) -> String {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        if let underlying, underlying.domain == NSPOSIXErrorDomain,
            let code = POSIXErrorCode(rawValue: Int32(underlying.code))
        {
            return String(cString: strerror(code.rawValue))
        }
        return (error as NSError).localizedDescription
    }
}
