import Foundation
import Herald

#if canImport(Glibc)
    import Glibc
#endif

/// Stores, reads and removes entries of a ``Herald/DiskResponseCache`` in a loop, for the tests that kill a
/// process mid-store or share one cache folder between two processes: `herald-test-server cache-churn …`
/// runs ``run(arguments:)``, and the tests check what the folder serves with ``check(_:key:)``.
///
/// Every entry's body follows from its key, its version and its size (written in its header fields), so a
/// checker that knows none of what was stored still knows the one right body of anything served.
package enum DiskCacheChurn {
    /// The keys the churn uses: `0..<keys`, few enough that stores replace and evict each other constantly.
    package static let keys = 24

    /// The request whose entry is key `key`'s.
    package static func request(key: Int) -> Request {
        // Safe to force: a literal scheme and host with a decimal path.
        Request(url: URL(string: "http://churn.invalid/entry/\(key)")!)
    }

    /// The body of key `key`'s entry `version` of `size` bytes: a line naming both, then bytes of a
    /// generator seeded by them.
    package static func body(key: Int, version: String, size: Int) -> Data {
        var bytes = Array("key=\(key) version=\(version)\n".utf8.prefix(size))
        var seed: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a of the first line
        for byte in bytes { seed = (seed ^ UInt64(byte)) &* 0x100_0000_01b3 }
        var generator = SeededGenerator(seed: seed)
        bytes.reserveCapacity(size)
        while bytes.count < size {
            let word = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) where bytes.count < size {
                bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        return Data(bytes)
    }

    /// Key `key`'s entry `version` with a body of `size` bytes.
    package static func entry(key: Int, version: String, size: Int) -> CachedResponse {
        let url = request(key: key).url
        let headers: HTTPHeaders = [
            "Cache-Control": "max-age=600", "X-Churn-Version": version, "X-Churn-Size": String(size),
        ]
        return CachedResponse(
            response: HTTPResponse(url: url, statusCode: 200, headers: headers),
            data: body(key: key, version: version, size: size), storageDate: Date())
    }

    /// `nil` when `served` is a whole, right entry for key `key` (its URL, status, and the body its version
    /// and size fields call for); otherwise what is wrong with it.
    package static func check(_ served: CachedResponse, key: Int) -> String? {
        let response = served.response
        guard response.url == request(key: key).url, response.statusCode == 200 else {
            return "key \(key): served \(response.statusCode) for \(response.url)"
        }
        guard let version = response.headers["X-Churn-Version"],
            let size = response.headers["X-Churn-Size"].flatMap(Int.init)
        else { return "key \(key): served without its version and size fields" }
        guard served.data.count == size else {
            return "key \(key) version \(version): \(served.data.count) bytes served, \(size) stored"
        }
        guard served.data == body(key: key, version: version, size: size) else {
            return "key \(key) version \(version): the \(size) bytes served are not the ones stored"
        }
        return nil
    }

    /// One store and nothing else: `--directory DIR --key K --version V [--size BYTES]` stores key `K`'s entry
    /// `V` (default 100 bytes) in the cache in `DIR`, prints `stored`, and answers 0; a bad command line answers
    /// 64, a cache that can't be opened 2. For the tests of what one process stores while another has the
    /// folder open.
    package static func storeOne(arguments: [String]) -> Int32 {
        var remaining = arguments[...]
        var directory: URL?
        var key: Int?
        var version: String?
        var size = 100
        while let argument = remaining.popFirst() {
            let value = remaining.popFirst()
            switch argument {
            case "--directory": directory = value.map { URL(fileURLWithPath: $0, isDirectory: true) }
            case "--key": key = value.flatMap(Int.init)
            case "--version": version = value
            case "--size": size = value.flatMap(Int.init) ?? size
            default: return 64
            }
        }
        guard let directory, let key, (0..<keys).contains(key), let version, size >= 0 else { return 64 }
        do {
            let cache = try DiskResponseCache(directory: directory)
            cache.storeCachedResponse(entry(key: key, version: version, size: size), for: request(key: key))
        } catch {
            say("cannot open the cache: \(error)")
            return 2
        }
        say("stored")
        return 0
    }

    /// Writes `line` to standard output at once (unbuffered: the parent reads it while the churn runs).
    private static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The churn's command line: `--directory DIR --writer NAME --seed N --capacity BYTES
    /// [--operations N]`. Opens the cache, prints `ready`, then stores (three in five operations), reads and
    /// checks (one in four) and removes entries of random keys and sizes (mostly under 4 KiB, some up to
    /// 64 KiB, a few larger than a small capacity), versions `NAME.1`, `NAME.2`…. Without `--operations` it runs
    /// until killed; with it, it prints `done stores=… hits=… foreign=… misses=… start=… end=…` (`foreign`: hits
    /// on another writer's entries; `start` and `end`: the loop's, in seconds since 1970) and answers 0. A wrong entry served
    /// prints `wrong: …` and answers 1; a bad command line answers 64, a cache that can't be opened 2.
    package static func run(arguments: [String]) -> Int32 {
        var remaining = arguments[...]
        var directory: URL?
        var writer = "w"
        var seed: UInt64 = 1
        var capacity = 256 << 10
        var operations: Int?
        while let argument = remaining.popFirst() {
            let value = remaining.popFirst()
            switch argument {
            case "--directory": directory = value.map { URL(fileURLWithPath: $0, isDirectory: true) }
            case "--writer": writer = value ?? writer
            case "--seed": seed = value.flatMap(UInt64.init) ?? seed
            case "--capacity": capacity = value.flatMap(Int.init) ?? capacity
            case "--operations": operations = value.flatMap(Int.init)
            default: return 64
            }
        }
        guard let directory else { return 64 }
        let cache: DiskResponseCache
        do {
            cache = try DiskResponseCache(directory: directory, capacity: capacity)
        } catch {
            say("cannot open the cache: \(error)")
            return 2
        }
        say("ready")
        let start = Date().timeIntervalSince1970
        var generator = SeededGenerator(seed: seed)
        var (stores, hits, foreign, misses, version) = (0, 0, 0, 0, 0)
        var done = 0
        while operations.map({ done < $0 }) ?? true {
            done += 1
            let key = Int.random(in: 0..<keys, using: &generator)
            let roll = Int.random(in: 0..<20, using: &generator)
            if roll < 12 {
                version += 1
                let size: Int
                switch Int.random(in: 0..<20, using: &generator) {
                case 0: size = Int.random(in: capacity...(capacity + (16 << 10)), using: &generator)
                case 1..<5: size = Int.random(in: 4096..<(64 << 10), using: &generator)
                default: size = Int.random(in: 0..<4096, using: &generator)
                }
                let entry = entry(key: key, version: "\(writer).\(version)", size: size)
                cache.storeCachedResponse(entry, for: request(key: key))
                stores += 1
            } else if roll < 17 {
                guard let served = cache.cachedResponse(for: request(key: key)) else {
                    misses += 1
                    continue
                }
                if let wrong = check(served, key: key) {
                    say("wrong: \(wrong)")
                    return 1
                }
                hits += 1
                if served.response.headers["X-Churn-Version"]?.hasPrefix(writer + ".") != true { foreign += 1 }
            } else {
                cache.removeCachedResponse(for: request(key: key))
            }
        }
        let end = Date().timeIntervalSince1970
        say("done stores=\(stores) hits=\(hits) foreign=\(foreign) misses=\(misses) start=\(start) end=\(end)")
        return 0
    }
}
