// herald-test-server: HeraldTesting's loopback `TestServer` in a process of its own.
//
// For load tests that need more sockets than one process may hold: 10,000 connections in flight cost 10,000
// descriptors on each side, and with the server in the test process both sides count against one
// `RLIMIT_NOFILE`. Prints the port on the first line of stdout, serves until stdin reaches end of file
// (the parent exiting closes it too), then shuts down.
//
//     herald-test-server [--backlog N]
//
// Its other modes are no server: `herald-test-server cache-churn --directory DIR …` stores, reads and removes
// entries of a DiskResponseCache in DIR (HeraldTesting's DiskCacheChurn has the options), for the tests that
// kill a process mid-store or share one cache folder between two processes; `herald-test-server cache-store
// --directory DIR --key K --version V` stores one entry and exits.
#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import HeraldTesting

if CommandLine.arguments.dropFirst().first == "cache-churn" {
    exit(DiskCacheChurn.run(arguments: Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.dropFirst().first == "cache-store" {
    exit(DiskCacheChurn.storeOne(arguments: Array(CommandLine.arguments.dropFirst(2))))
}

var backlog = 4096
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument == "--backlog", let value = arguments.popFirst().flatMap(Int.init), value > 0 {
        backlog = value
    } else {
        FileHandle.standardError.write(Data("usage: herald-test-server [--backlog N]\n".utf8))
        exit(64)
    }
}

// Raise the descriptor limit to what this process may: every connection is one descriptor.
var limit = rlimit()
if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
}

let server = try await TestServer.start(backlog: backlog)
FileHandle.standardOutput.write(Data("\(server.port)\n".utf8))
// Blocks a thread of the cooperative pool for the whole run; acceptable in a single-purpose tool.
while FileHandle.standardInput.availableData.count > 0 {}
try await server.shutdown()
