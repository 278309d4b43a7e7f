import Foundation

/// The TCP sockets this process holds that are connected to a given port: the client side of connections to a
/// test server, found by matching this process's socket inodes (`/proc/self/fd`) with the remote port of the
/// kernel's table (`/proc/net/tcp`).
///
/// Counting only sockets whose *remote* port is one test server's port keeps the count exact while other tests
/// run in parallel in the same process: their servers listen on other ports, and the server side of our own
/// connections has the server's port as its local port, not its remote one. `TIME_WAIT` entries have no inode
/// and are not descriptors, so they are not counted.
enum ClientSockets {
    /// The number of open descriptors of this process that are TCP sockets connected to `port`.
    static func count(connectedTo port: Int) -> Int {
        let inodes = socketInodes()
        var count = 0
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 9, let remotePort = fields[2].split(separator: ":").last,
                    Int(remotePort, radix: 16) == port, let inode = Int(fields[9]), inode != 0
                else { continue }
                if inodes.contains(inode) { count += 1 }
            }
        }
        return count
    }

    private static func socketInodes() -> Set<Int> {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
        var inodes = Set<Int>()
        for entry in entries {
            // "socket:[12345]"
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)"),
                target.hasPrefix("socket:["), target.hasSuffix("]"),
                let inode = Int(target.dropFirst("socket:[".count).dropLast())
            else { continue }
            inodes.insert(inode)
        }
        return inodes
    }
}
