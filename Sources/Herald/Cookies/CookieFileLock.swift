import Foundation
import HeraldNotifications

#if canImport(Glibc)
    import Glibc
#endif

/// The claim a persistent ``CookieStore`` holds on its file for its life: an exclusive `flock(2)` on
/// `.<name>.lock` beside the file, so that a second store on the same file — in another process, or in this one —
/// fails at once with ``HeraldError/Code/fileInUse`` instead of each one's saves writing over the other's
/// cookies.
///
/// The lock is on a file of its own because each save renames a new file over the cookie file: a lock on the
/// cookie file itself would stay with the file the first save replaced. The lock file is never deleted (two
/// stores could otherwise lock two files of one name). The claims of this process are also kept in a set, by
/// the lock file's device and inode, so that a second store of this process is refused on file systems where
/// `flock` doesn't exclude two descriptors of one process (NFS, where it becomes a POSIX lock).
final class CookieFileLock: Sendable {
    private struct Identity: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    private static let claimed = Locked<Set<Identity>>([])
    private let descriptor: Int32
    private let identity: Identity

    /// Claims `fileURL` for one store.
    /// - Throws: ``HeraldError/Code/fileInUse`` when another store holds it; ``HeraldError/Code/fileIO`` when
    ///   the lock file can't be opened (the folder is missing or not writable) or locked.
    init(for fileURL: URL) throws(HeraldError) {
        let lockURL = fileURL.deletingLastPathComponent().appendingPathComponent(".\(fileURL.lastPathComponent).lock")
        let descriptor = LockFile.open(lockURL)
        guard descriptor >= 0 else {
            throw HeraldError.fileFailure("Cannot open the cookie file's lock file", url: lockURL)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let error = HeraldError.fileFailure("Cannot read the cookie file's lock file", url: lockURL)
            close(descriptor)
            throw error
        }
        let identity = Identity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
        guard Self.claimed.withLock({ $0.insert(identity).inserted }) else {
            close(descriptor)
            throw HeraldError(
                .fileInUse,
                "Another CookieStore of this process keeps its cookies in \(fileURL.path): share it, or close() it first.",
                url: fileURL)
        }
        guard LockFile.lock(descriptor, LOCK_EX | LOCK_NB) else {
            let error =
                errno == EWOULDBLOCK
                ? HeraldError(
                    .fileInUse, "A CookieStore of another process keeps its cookies in \(fileURL.path).", url: fileURL)
                : HeraldError.fileFailure("Cannot lock the cookie file's lock file", url: lockURL)
            close(descriptor)
            Self.claimed.withLock { _ = $0.remove(identity) }
            throw error
        }
        self.descriptor = descriptor
        self.identity = identity
    }

    deinit {
        // The lock first; then a new store of this process may claim the file.
        LockFile.release(descriptor)
        Self.claimed.withLock { _ = $0.remove(identity) }
    }
}
