#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

import HeraldObservers
import Synchronization

/// stdout and stderr for a person or a program: written with HeraldObservers' ``FileDescriptorOutput``, which
/// never ends the process when the stream is closed or full (`FileHandle.write(_:)` traps on `EPIPE`, `EBADF`
/// and `ENOSPC`).
enum StandardStream {
    /// Writes all of `text` to `descriptor`.
    /// - Returns: `nil` once everything is written, else the `errno` of the write that failed (`EPIPE`: the
    ///   reader has gone; `EBADF`: the stream is closed; `ENOSPC`: it is full).
    @discardableResult
    static func write(_ text: String, to descriptor: Int32) -> Int32? {
        FileDescriptorOutput.write(text, to: descriptor)
    }

    /// The standard streams that were closed when the process started, filled by ``fillClosedDescriptors()``.
    static let closedAtLaunch = Mutex<Set<Int32>>([])

    /// Opens `/dev/null` on each of stdin, stdout and stderr that was closed (`2>&-`), so that no file or
    /// socket the run opens takes its number: a display line must never land in a download. Called first thing
    /// in `main`, before ArgumentParser, libdispatch or Swift concurrency open anything (libdispatch's eventfd
    /// and epoll descriptors would otherwise be given the lowest free numbers: a closed stream's).
    /// - Returns: The descriptors that were closed, also kept in ``closedAtLaunch``.
    @discardableResult
    static func fillClosedDescriptors() -> Set<Int32> {
        var closed: Set<Int32> = []
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(descriptor, F_GETFD) == -1 {
            closed.insert(descriptor)
            // open(2) returns the lowest free number: this one, the lower ones being open by now.
            _ = open("/dev/null", descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY)
        }
        closedAtLaunch.withLock { $0.formUnion(closed) }
        return closed
    }
}
