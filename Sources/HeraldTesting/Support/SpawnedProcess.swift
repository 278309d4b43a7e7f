import Foundation
import HeraldNotifications

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started with `posix_spawn`: what the test servers and the tests start other programs
/// with (nginx, proxies, `openssl`, a second test server), in place of Foundation's `Process`, whose members it
/// mirrors.
///
/// Foundation's `Process.run()` on Linux lists `/proc/self/fd` to close the parent's descriptors in the child,
/// and in Swift 6.3 it copies each entry's whole 256-byte name field: in a process with more than about 1,350
/// descriptors open (a test process with thousands of connections has them), the listing fills its 32 KiB
/// buffer, the copy of its last entry reads past the buffer's end, and the process crashes when that is the
/// end of mapped memory. This one has the child close them with `posix_spawn_file_actions_addclosefrom_np`.
///
/// The child leads a process group of its own (as with `Process`, so a daemon's workers can be killed with
/// it), starts with no signal blocked (a child of a libdispatch worker would otherwise inherit that thread's
/// mask, in which `SIGTERM` is blocked), and inherits the parent's ignored signals. A thread of its own waits
/// for it to exit.
package final class SpawnedProcess: @unchecked Sendable {
    // Safety: the configuration members are set before `run()` and read by it alone, as with `Process`;
    // what changes once the child runs is guarded by `state`'s lock, and the handler is called outside it.

    /// Why the child could not be started: the system call that failed and its `errno`.
    package struct SpawnFailed: Error, CustomStringConvertible {
        package let description: String
    }

    /// The program to run.
    package var executableURL: URL?
    /// Its arguments, without the program's name (which it is given first).
    package var arguments: [String] = []
    /// Its environment; `nil` passes the parent's.
    package var environment: [String: String]?
    /// The folder it starts in; `nil` is the parent's.
    package var currentDirectoryURL: URL?
    /// A `Pipe` (the child gets its read end), a `FileHandle`, or `nil` or `FileHandle.nullDevice` for
    /// `/dev/null`; the parent's by default.
    package var standardInput: Any? = FileHandle.standardInput
    /// A `Pipe` (the child gets its write end), a `FileHandle`, or `nil` or `FileHandle.nullDevice` for
    /// `/dev/null`; the parent's by default.
    package var standardOutput: Any? = FileHandle.standardOutput
    /// As ``standardOutput``.
    package var standardError: Any? = FileHandle.standardError
    /// Called once, on the thread that waits for the child, when it has exited.
    package var terminationHandler: (@Sendable (SpawnedProcess) -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    private struct State {
        var processIdentifier: pid_t = 0
        var isRunning = false
        var status: Int32 = 0
        var reason: Process.TerminationReason = .exit
        var handler: (@Sendable (SpawnedProcess) -> Void)?
    }
    private let state = Locked(State())
    private let exited = NSCondition()

    package init() {}

    /// The child's process id; 0 before ``run()``.
    package var processIdentifier: Int32 { state.withLock { $0.processIdentifier } }
    /// Whether the child has started and not yet exited.
    package var isRunning: Bool { state.withLock { $0.isRunning } }
    /// Its exit code, or the number of the signal that ended it (``terminationReason`` says which). Once it
    /// has exited.
    package var terminationStatus: Int32 { state.withLock { $0.status } }
    /// Whether it exited or a signal ended it. Once it has exited.
    package var terminationReason: Process.TerminationReason { state.withLock { $0.reason } }

    /// Starts the child.
    ///
    /// - Throws: ``SpawnFailed`` when there is no executable, a standard stream is neither a `Pipe` nor a
    ///   `FileHandle`, or the system refuses (with its `errno`: a missing program, a folder it can't enter).
    package func run() throws {
        guard let executableURL else { throw SpawnFailed(description: "no executable to run") }
        let path = executableURL.path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        var nullDevice: FileHandle?
        defer { try? nullDevice?.close() }
        let streams: [(target: Int32, stream: Any?, reads: Bool)] = [
            (STDIN_FILENO, standardInput, true), (STDOUT_FILENO, standardOutput, false),
            (STDERR_FILENO, standardError, false),
        ]
        for (target, stream, reads) in streams {
            let descriptor: Int32
            switch stream {
            case let pipe as Pipe:
                descriptor = (reads ? pipe.fileHandleForReading : pipe.fileHandleForWriting).fileDescriptor
            case let handle as FileHandle where handle.fileDescriptor >= 0:
                descriptor = handle.fileDescriptor
            // `FileHandle.nullDevice` has no descriptor: /dev/null, as nil.
            case is FileHandle, nil:
                if nullDevice == nil { nullDevice = FileHandle(forUpdatingAtPath: "/dev/null") }
                guard let nullDevice else { throw SpawnFailed(description: "cannot open /dev/null: errno \(errno)") }
                descriptor = nullDevice.fileDescriptor
            default:
                throw SpawnFailed(description: "standard stream \(target) is neither a Pipe nor a FileHandle")
            }
            if descriptor != target {
                try check(posix_spawn_file_actions_adddup2(&actions, descriptor, target), "adddup2")
            }
        }
        // Every descriptor but the three: the parent's sockets, pipes and files are none of the child's.
        guard let addCloseFrom = Self.addCloseFrom else {
            throw SpawnFailed(
                description: "this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34)")
        }
        try check(addCloseFrom(&actions, 3), "addclosefrom")
        if let directory = currentDirectoryURL?.path {
            guard let addChdir = Self.addChdir else {
                throw SpawnFailed(description: "this C library can't start a child in another folder")
            }
            try check(addChdir(&actions, directory), "addchdir")
        }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK))

        let argumentList = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argumentList.forEach { free($0) } }
        let environmentList = environment.map { variables in
            variables.map { name, value in strdup("\(name)=\(value)") } + [nil]
        }
        defer { environmentList?.forEach { free($0) } }

        var spawnedChild: pid_t = 0
        let spawned = argumentList.withUnsafeBufferPointer { argv -> Int32 in
            guard let argv = argv.baseAddress else { return EINVAL }
            if let environmentList {
                return environmentList.withUnsafeBufferPointer { envp -> Int32 in
                    guard let envp = envp.baseAddress else { return EINVAL }
                    return posix_spawn(&spawnedChild, path, &actions, &attributes, argv, envp)
                }
            }
            return posix_spawn(&spawnedChild, path, &actions, &attributes, argv, environ)
        }
        let child = spawnedChild
        guard spawned == 0 else {
            throw SpawnFailed(description: "cannot start \(path): \(String(cString: strerror(spawned)))")
        }
        state.withLock {
            $0.processIdentifier = child
            $0.isRunning = true
        }
        // The child has its own copies; the parent keeps only its ends.
        if let pipe = standardInput as? Pipe { try? pipe.fileHandleForReading.close() }
        if let pipe = standardOutput as? Pipe { try? pipe.fileHandleForWriting.close() }
        if let pipe = standardError as? Pipe { try? pipe.fileHandleForWriting.close() }

        let waiter = Thread { [self] in
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1 && errno == EINTR {}
            exited.lock()
            let handler = state.withLock { state -> (@Sendable (SpawnedProcess) -> Void)? in
                let signal = status & 0x7f
                if signal == 0 {
                    state.status = (status >> 8) & 0xff
                    state.reason = .exit
                } else {
                    state.status = signal
                    state.reason = .uncaughtSignal
                }
                state.isRunning = false
                defer { state.handler = nil }
                return state.handler
            }
            exited.broadcast()
            exited.unlock()
            handler?(self)
        }
        waiter.name = "herald-spawned-process-\(child)"
        waiter.start()
    }

    /// Blocks until the child has exited (as `Process`'s, it doesn't wait for the ``terminationHandler``, which
    /// may call it). At once before ``run()``.
    package func waitUntilExit() {
        exited.lock()
        defer { exited.unlock() }
        while isRunning { exited.wait() }
    }

    /// Sends the child `SIGTERM`.
    package func terminate() {
        let child = processIdentifier
        if child > 0 { kill(child, SIGTERM) }
    }

    /// Sends the child `SIGINT`.
    package func interrupt() {
        let child = processIdentifier
        if child > 0 { kill(child, SIGINT) }
    }

    private func check(_ result: Int32, _ step: String) throws {
        guard result == 0 else {
            throw SpawnFailed(description: "posix_spawn \(step): \(String(cString: strerror(result)))")
        }
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    private typealias AddChdir =
        @convention(c) (
            UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?
        ) -> Int32

    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34 and later: every platform Herald supports), which
    /// Swift's Glibc module doesn't declare.
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }
    /// `posix_spawn_file_actions_addchdir_np` (glibc 2.29 and later), likewise.
    private static let addChdir: AddChdir? = dlsym(nil, "posix_spawn_file_actions_addchdir_np")
        .map { unsafeBitCast($0, to: AddChdir.self) }
}
