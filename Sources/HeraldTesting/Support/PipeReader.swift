import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Reads what a child process writes to a pipe, as it arrives, on a thread of its own: for a test that starts
/// a server or a command-line tool and watches its output.
///
/// The thread blocks in `read(2)` until the output ends; it never uses `FileHandle.readabilityHandler`. On
/// Linux, tearing a readability handler down at the end of a child's output races libdispatch's epoll
/// bookkeeping: its manager thread can then crash on a registration already freed, taking the whole test
/// process with it.
public enum PipeReader {
    /// Starts a thread that reads `handle` until the end of its output, calling `onData` with each chunk as
    /// it is read, then `onEnd` once.
    ///
    /// Call it after `Process.run()`: Foundation has closed this process's copy of the pipe's write end by
    /// then, so the child's exit (and that of any process it passed the pipe to) ends the reads. The thread
    /// holds `handle`, so the descriptor stays open until the last read has returned. A read that fails
    /// (other than being interrupted by a signal) ends the output too.
    ///
    /// - Parameters:
    ///   - handle: The pipe's reading end, `Pipe.fileHandleForReading`.
    ///   - name: The thread's name, for a debugger or a crash report.
    ///   - onData: Called on the reading thread with each chunk, in order; never with an empty chunk.
    ///   - onEnd: Called on the reading thread after the last chunk.
    public static func start(
        reading handle: FileHandle, name: String, onData: @escaping @Sendable (Data) -> Void,
        onEnd: @escaping @Sendable () -> Void = {}
    ) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                onData(Data(buffer[..<count]))
            }
            onEnd()
        }
        thread.name = name
        thread.start()
    }
}
