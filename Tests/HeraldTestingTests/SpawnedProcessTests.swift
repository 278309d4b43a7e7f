import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("SpawnedProcess", .timeLimit(.minutes(1)))
struct SpawnedProcessTests {
    /// Runs `/bin/sh -c script` and returns what it printed and how it ended.
    private func run(
        _ script: String, environment: [String: String]? = nil, directory: URL? = nil
    ) async throws -> (output: String, status: Int32, reason: Process.TerminationReason) {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.environment = environment
        process.currentDirectoryURL = directory
        process.standardInput = nil
        let pipe = Pipe()
        process.standardOutput = pipe
        let (exited, exit) = AsyncStream.makeStream(of: Void.self)
        process.terminationHandler = { _ in exit.finish() }
        try process.run()
        #expect(process.processIdentifier > 0)
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // Ends when the handler has run (the suite's time limit bounds the wait).
        for await _ in exited {}
        process.waitUntilExit()
        #expect(!process.isRunning)
        return (output, process.terminationStatus, process.terminationReason)
    }

    @Test("with 2,000 descriptors open in this process, the child starts with its three standard streams alone")
    func childGetsNoOtherDescriptor() async throws {
        // More than fill a 32 KiB listing of /proc/self/fd, where Foundation's Process.run() reads past its
        // buffer. Pipes without close-on-exec: a child given them would list them.
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        for _ in 0..<1_000 {
            var ends: [Int32] = [0, 0]
            try #require(pipe(&ends) == 0, "pipe: errno \(errno)")
            held += ends
        }
        let result = try await run("ls /proc/self/fd")
        let listed = Set(result.output.split(separator: "\n").compactMap { Int32($0) })
        // 0, 1 and 2, and the descriptor `ls` lists the folder with.
        #expect(listed.isSuperset(of: [0, 1, 2]))
        #expect(listed.count <= 4, "the child had \(listed.sorted()) open")
        #expect(result.status == 0 && result.reason == .exit)
    }

    @Test("the exit code, a signal, the environment and the starting folder are the child's")
    func statusEnvironmentAndFolder() async throws {
        let exit = try await run("exit 7")
        #expect(exit.status == 7 && exit.reason == .exit)
        let killed = try await run("kill -TERM $$")
        #expect(killed.status == SIGTERM && killed.reason == .uncaughtSignal)
        let environment = try await run("printf '%s' \"$HERALD_SPAWN_TEST\"", environment: ["HERALD_SPAWN_TEST": "a b"])
        #expect(environment.output == "a b")
        let folder = FileManager.default.temporaryDirectory.resolvingSymlinksInPath()
        let directory = try await run("pwd", directory: folder)
        #expect(directory.output == folder.path + "\n")
    }

    @Test("a program that doesn't exist is a thrown error, not a child")
    func missingProgram() {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/nonexistent/herald-no-such-program")
        #expect(throws: SpawnedProcess.SpawnFailed.self) { try process.run() }
        #expect(process.processIdentifier == 0)
    }
}
