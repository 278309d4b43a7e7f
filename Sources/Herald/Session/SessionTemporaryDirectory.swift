import Foundation
import HeraldNotifications
import HeraldEngine

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A session's private folder for download tasks' temporary files: made on first use with `mkdtemp` (a
/// random name, mode 0700) in ``SessionConfiguration/temporaryDirectory`` or the process's temporary
/// directory, and checked on every use to be a directory of the process's effective user, not a symlink,
/// that no one else can enter.
///
/// A predictable name (a PID, a counter) in a folder others can write lets another user make the folder
/// first and swap or redirect the files written in it; a random name that `mkdtemp` creates or fails
/// cannot be made first.
final class SessionTemporaryDirectory: Sendable {
    /// The folder the caller chose, or `nil` for the process's temporary directory (read when the folder
    /// is made, so `TMPDIR` set after the session was created still applies).
    let parent: URL?
    private let made = Locked<URL?>(nil)

    init(parent: URL?) {
        self.parent = parent
    }

    /// The folder once made, whether or not it still exists.
    var madeURL: URL? { made.withLock { $0 } }

    /// The folder, made now if it was not, or if it is gone (removed after an invalidation).
    /// - Throws: ``HeraldError/Code/fileIO`` when the parent is not a safe place (see
    ///   ``SessionConfiguration/temporaryDirectory``), the folder can't be made, or what is at its path is no
    ///   longer the private folder it was made as.
    func url() throws(HeraldError) -> URL {
        let result: Result<URL, HeraldError> = made.withLock { made in
            if let existing = made {
                switch Self.checkPrivate(existing) {
                case .success: return .success(existing)
                case .failure(let error) where (error.underlying as? POSIXError)?.code != .ENOENT:
                    return .failure(error)
                case .failure: break
                }
            }
            let created = Self.make(in: parent ?? FileManager.default.temporaryDirectory, hidden: parent != nil)
            if case .success(let url) = created { made = url }
            return created
        }
        return try result.get()
    }

    /// Removes the folder if it was made and is empty: a kept file (a failed move, resume data) keeps it.
    func removeIfEmpty() {
        if let url = madeURL { rmdir(url.path) }
    }

    /// Makes a private folder in `parent`, after checking that no one else can replace what is made there.
    static func make(in parent: URL, hidden: Bool) -> Result<URL, HeraldError> {
        if case .failure(let error) = checkParent(parent) { return .failure(error) }
        let name = hidden ? ".herald-XXXXXX" : "herald-XXXXXX"
        var template = Array(parent.appendingPathComponent(name).path.utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }
        }
        guard created != nil else {
            return .failure(HeraldError.fileFailure("Cannot create a temporary folder in", url: parent))
        }
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let url = URL(fileURLWithPath: path, isDirectory: true)
        return checkPrivate(url).map { url }
    }

    /// Whether `url` is a private folder of the effective user: a directory, not a symlink, owned by the
    /// effective user, with no permission for group or others.
    static func checkPrivate(_ url: URL) -> Result<Void, HeraldError> {
        var status = stat()
        guard lstat(url.path, &status) == 0 else {
            return .failure(HeraldError.fileFailure("Cannot inspect the temporary folder", url: url))
        }
        guard status.st_mode & S_IFMT == S_IFDIR, status.st_uid == geteuid(), status.st_mode & 0o077 == 0 else {
            return .failure(
                HeraldError(
                    .fileIO,
                    "The temporary folder \(url.path) is no longer a private folder of this process's user "
                        + "(it was replaced or its permissions changed); nothing is written there."))
        }
        return .success(())
    }

    /// Whether `parent` is a folder in which no other user can replace a folder made there: a directory
    /// (a symlink to one is followed: the caller named it), owned by the effective user or by root, and not
    /// writable by group or others unless sticky (as `/tmp` is: there only a file's owner may rename or
    /// remove it).
    static func checkParent(_ parent: URL) -> Result<Void, HeraldError> {
        var status = stat()
        guard stat(parent.path, &status) == 0 else {
            return .failure(HeraldError.fileFailure("Cannot use the temporary folder", url: parent))
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            return .failure(
                HeraldError(.fileIO, "The temporary folder \(parent.path) is not a directory."))
        }
        guard status.st_uid == geteuid() || status.st_uid == 0 else {
            return .failure(
                HeraldError(
                    .fileIO,
                    "The temporary folder \(parent.path) belongs to another user (uid \(status.st_uid)), who "
                        + "could replace what is written there."))
        }
        guard status.st_mode & 0o022 == 0 || status.st_mode & S_ISVTX != 0 else {
            return .failure(
                HeraldError(
                    .fileIO,
                    "The temporary folder \(parent.path) is writable by other users and not sticky: they "
                        + "could replace what is written there."))
        }
        return .success(())
    }
}
