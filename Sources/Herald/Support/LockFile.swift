import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A file that exists to be locked with `flock(2)`: the response cache's folder lock and a cookie file's. Made
/// if missing, readable by its owner alone, never through a symbolic link; never deleted (two holders could
/// otherwise lock two files of one name).
enum LockFile {
    /// Opens (or makes) the lock file at `url`; the descriptor, or -1 with `errno` set.
    static func open(_ url: URL) -> Int32 {
        Glibc.open(url.path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
    }

    /// `flock(descriptor, operation)`, again when a signal interrupted it; `false` with `errno` set when it
    /// failed (`EWOULDBLOCK`: held by another, for a non-blocking `operation`).
    static func lock(_ descriptor: Int32, _ operation: Int32) -> Bool {
        while flock(descriptor, operation) != 0 {
            guard errno == EINTR else { return false }
        }
        return true
    }

    /// Unlocks and closes `descriptor`. A lock belongs to the open file, which a child process started at that
    /// moment shares until its `exec` closes its copy of the descriptor: closing ours alone would leave the
    /// lock held meanwhile, and a store opened right after would be told another process holds it.
    static func release(_ descriptor: Int32) {
        _ = lock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
