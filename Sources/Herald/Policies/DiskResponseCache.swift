import CSQLite
import Foundation
import HeraldNotifications

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A ``ResponseCache`` on disk, in a folder the caller names, that outlives the process: a new session over
/// the same folder answers from what an earlier one stored. Bounded by the total size of its entries: when a
/// store would go past ``capacity``, the least recently used entries are evicted first. Safe from any thread.
///
/// Several caches, in one process or in several, may use one folder at once: they share its entries (what
/// one stores, the others answer from), and each store, eviction and removal is one transaction of the index,
/// which SQLite's write-ahead log serializes between processes. Each should be given the same capacity: every
/// store evicts down to its own cache's.
///
/// The folder holds an SQLite index (`index.sqlite`: each entry's key, response head, body file, size and
/// last use), a lock file (`lock`, which also holds the store counts below) and the bodies, one file each in
/// `bodies/`. A body is written to a temporary name, flushed to disk and renamed before the index names it; a
/// body file is never written again once renamed, and is removed only after the index stops naming it. So a process killed at any point leaves
/// either the old entry or the new one, never a partial body: an entry whose body is missing or of another size
/// than the index says is dropped when read, and files the index doesn't name (a store cut short) are removed
/// when a cache opens the folder and no other cache has it open.
///
/// A lookup or a removal that finds no entry costs no index read the next time for the same request, as long as
/// no cache on the folder has stored an entry whose key falls in the same one of 256 buckets since: every
/// store counts itself in the lock file, which each cache maps shared, before it starts and after it has
/// committed, and a cache remembers the keys it found absent with the bucket's count at the time. So an
/// uncacheable response, which asks for a lookup before its request and a removal after it, costs the index
/// nothing once its URL is known to be absent. Caches of Herald versions before this one don't count their
/// stores: don't have them open on one folder at the same time as caches of this version.
///
/// The folder is made, mode `0700`, when it is missing; it must be a directory of the process's effective
/// user, not a symlink, that no one else can enter, and it is checked again on every store. Without a folder,
/// use ``InMemoryResponseCache``.
///
/// Empty a cache with ``removeAllCachedResponses()``, never by deleting its folder while a cache has it open: the
/// open cache goes on with the deleted index and lock, its stores fail the folder check until the folder is
/// there again, and a cache opened on a folder made anew shares nothing with it (not its entries, removals or
/// size). Delete the folder only while no session uses it.
public final class DiskResponseCache: ResponseCache {
    /// The most bytes the entries may take together (bodies plus response heads).
    public let capacity: Int
    /// The folder the cache keeps its index and bodies in.
    public let directory: URL

    private let bodies: URL
    private let database: Locked<Database>
    /// The folder's `lock` file, held with a shared `flock(2)` for the cache's lifetime: a cache that opens the
    /// folder and gets it exclusively knows no other cache is mid-store, so files the index doesn't name are
    /// leftovers it may remove. The kernel lets go of it when the process ends, however it ends.
    private let lockDescriptor: Int32
    /// The store counters in the lock file, shared with every other cache on the folder: a cache that can't map
    /// them isn't made, as its stores would go uncounted and another cache could go on taking a key it stored as
    /// absent (serving an entry its removal had to remove).
    private let counters: StoreCounters
    /// When set, every body write fails with this `errno` after opening its temporary file, as a full or
    /// failing disk would make it: for tests of the write-failure path.
    let simulatedWriteError = Locked<Int32?>(nil)

    /// Makes every index statement fail (`true`) or run again (`false`), as a lock another process holds past
    /// the busy timeout, or a damaged index, would: for tests of the index-failure path.
    func simulateIndexFailure(_ failing: Bool) {
        database.withLock { $0.failsStatements = failing }
    }

    /// Opens the cache in `directory`, making the folder when it is missing, and, when no other cache has the
    /// folder open, removes what a process killed mid-store left behind.
    /// - Parameters:
    ///   - directory: The cache's own folder: created with mode `0700` when missing, with any missing folders
    ///     above it (each `0700` too); otherwise it must be a
    ///     directory of the effective user that no one else can enter.
    ///   - capacity: The most bytes (bodies plus response heads) kept; default 50 MiB.
    /// - Throws: ``HeraldError/Code/fileIO`` when the folder is not private, can't be made, its lock file
    ///   can't be opened or locked, or its store counts can't be mapped from it (a full disk), or its index can't
    ///   be opened or is not one of this cache's. An index SQLite
    ///   finds damaged or not a database is not an error when no other cache has the folder open: it starts
    ///   again empty, and the bodies it named are removed.
    public init(directory: URL, capacity: Int = 50 << 20) throws(HeraldError) {
        self.capacity = max(0, capacity)
        self.directory = directory.standardizedFileURL
        self.bodies = self.directory.appendingPathComponent("bodies", isDirectory: true)
        try Self.makePrivateFolder(self.directory)
        try Self.makePrivateFolder(bodies)
        let lockURL = self.directory.appendingPathComponent("lock")
        let lockDescriptor = LockFile.open(lockURL)
        guard lockDescriptor >= 0 else {
            throw HeraldError.fileFailure("Cannot open the response cache's lock file", url: lockURL)
        }
        let alone = LockFile.lock(lockDescriptor, LOCK_EX | LOCK_NB)
        // Another cache has the folder open, or is opening it alone: wait for its shared lock, which it takes
        // once its index is set up and its sweep done, before opening the index. Two connections setting up a
        // new index at once can fail ("database is locked") without waiting for each other. Without the
        // shared lock, too, a cache opening the folder alone could settle the store counts while a store of
        // this one's is in flight, and take as absent a key that store is about to commit.
        if !alone, !LockFile.lock(lockDescriptor, LOCK_SH) {
            close(lockDescriptor)
            throw HeraldError.fileFailure("Cannot lock the response cache's lock file", url: lockURL)
        }
        guard let counters = StoreCounters(descriptor: lockDescriptor) else {
            let failure = HeraldError.fileFailure("Cannot map the response cache's store counts in", url: lockURL)
            close(lockDescriptor)
            throw failure
        }
        let database: Database
        let indexPath = self.directory.appendingPathComponent("index.sqlite").path
        do throws(HeraldError) {
            do throws(HeraldError) {
                database = try Database(path: indexPath, checked: alone)
            } catch {
                guard alone, error.underlying is Database.Damaged else { throw error }
                // A damaged index (a copy of the folder without its write-ahead log, a bad sector) would refuse
                // every open for good, or, damaged past its first pages, open and then fail the statements that
                // read every row: the size (eviction would stop, and the folder grow without bound), the sweep,
                // `removeAll`. A cache is disposable: with no other cache on the folder, the index starts again
                // empty, and the sweep below removes the bodies it no longer names.
                for suffix in ["", "-wal", "-shm"] { unlink(indexPath + suffix) }
                database = try Database(path: indexPath)
            }
        } catch {
            close(lockDescriptor)
            throw error
        }
        self.lockDescriptor = lockDescriptor
        self.counters = counters
        self.database = Locked(database)
        if alone {
            removeOrphans()
            // No other cache has the folder open, so none is mid-store: a store a killed process left
            // counted as begun and never ended is over.
            counters.settle()
            // From exclusive to shared: no sweep starts while this cache is open. (Thrown now, the cache is
            // whole: deinit closes the lock file.)
            guard LockFile.lock(lockDescriptor, LOCK_SH) else {
                throw HeraldError.fileFailure("Cannot lock the response cache's lock file", url: lockURL)
            }
        }
        trim()
    }

    deinit {
        LockFile.release(lockDescriptor)
    }

    /// The bytes the entries take now (0 when the index can't be read).
    public var currentSize: Int { database.withLock { $0.totalSize() ?? 0 } }

    /// The number of entries.
    public var count: Int { database.withLock { $0.count() } }

    /// The entry stored for `request`, or `nil`; a hit makes it the most recently used. An entry whose
    /// body file is missing or not of the size the index records is removed and not returned; one whose body
    /// can't be read now (the process out of descriptors, an I/O error) is a miss, and stays.
    public func cachedResponse(for request: Request) -> CachedResponse? {
        let key = Self.key(for: request)
        return database.withLock { database -> CachedResponse? in
            // A store or removal of the key that failed may have left an older entry in the index.
            guard database.mayServe(key), case .found(let row) = entry(for: key, in: database).lookup
            else { return nil }
            guard let path = bodyPath(row.file) else {
                // Not a name this cache gives a body (the index was edited): the row goes, no file is touched.
                _ = database.delete(key: key, file: row.file)
                return nil
            }
            let head = database.decodedHeads[row.file] ?? (try? JSONDecoder().decode(StoredHead.self, from: row.head))
            let body = head == nil ? nil : Self.readBody(at: path, size: row.bodySize)
            if case .unreadable = body { return nil }
            guard let head, case .read(let data) = body, data.count == row.bodySize else {
                // Only this row: another process may have replaced it meanwhile (a body file is never
                // written again once named, so a missing or short one is gone for good).
                if database.delete(key: key, file: row.file) { unlink(path) }
                return nil
            }
            // A hit on the most recently used entry changes nothing: no write, which a reader would otherwise
            // pay for on every hit.
            if !row.isMostRecent { database.touch(key: key) }
            database.remember(head, of: row.file)
            return head.entry(body: data)
        }
    }

    /// Stores `cachedResponse` for `request`, evicting least recently used entries to make room. An entry
    /// larger than the whole capacity is not stored, and any earlier one for the same request is removed.
    /// When the folder is no longer private or a write fails, nothing is stored (and the earlier entry is
    /// removed). When the index can't be written (another process holds it past the busy timeout, the disk is
    /// full), this cache serves no entry for the request until a later store or removal of it commits; after
    /// more than 4,096 requests' stores and removals failed so, it serves none at all until the index can be
    /// written again, and then removes every entry first.
    public func storeCachedResponse(_ cachedResponse: CachedResponse, for request: Request) {
        let key = Self.key(for: request)
        guard let head = try? JSONEncoder().encode(StoredHead(cachedResponse)),
            head.count + cachedResponse.data.count <= capacity,
            Self.checkPrivate(directory) == nil, Self.checkPrivate(bodies) == nil
        else { return removeCachedResponse(for: request) }
        let file = UUID().uuidString.lowercased()
        guard writeBody(cachedResponse.data, as: file) else { return removeCachedResponse(for: request) }
        let bucket = StoreCounters.bucket(of: key)
        database.withLock { database in
            guard settleLostFailures(in: database) else { return removeBody(file) }
            database.forgetAbsent(key)
            // Counted as begun before the transaction and as ended after it, committed or not: a cache that
            // saw the counts equal before a lookup that missed knows that no store of the bucket was in flight
            // then, so any that commits later has begun later and changed the count.
            counters.beginStore(in: bucket)
            defer { counters.endStore(in: bucket) }
            // The replaced and evicted bodies are removed once the transaction that stops naming them commits.
            let unnamed = database.transaction { () -> [String]? in
                let replaced: String?
                switch database.entry(for: key) {
                case .found(let row): replaced = row.file
                case .absent: replaced = nil
                case .failed: return nil
                }
                guard database.insert(key: key, head: head, file: file, bodySize: cachedResponse.data.count),
                    let evicted = evict(in: database)
                else { return nil }
                return (replaced.map { [$0] } ?? []) + evicted
            }
            database.setServable(key, unnamed != nil)
            for name in unnamed ?? [file] { removeBody(name) }
        }
    }

    /// Removes the entry for `request`, if any.
    public func removeCachedResponse(for request: Request) {
        let key = Self.key(for: request)
        database.withLock { database in
            guard settleLostFailures(in: database) else { return }
            // Every uncacheable response asks for a removal, and most find nothing: none at all when the key
            // is known to be absent, else a read, and the write lock only when there is a row to delete.
            let (lookup, settled) = entry(for: key, in: database)
            // A read that failed may have missed a row: the removal is tried all the same.
            if case .absent = lookup, database.mayServe(key) { return }
            let removed = database.transaction { () -> [String]? in
                switch database.entry(for: key) {
                case .found(let row): database.delete(key: key, file: row.file) ? [row.file] : nil
                case .absent: []
                case .failed: nil
                }
            }
            database.setServable(key, removed != nil)
            // Committed, the key is absent: no store can have committed it again within the transaction.
            if removed != nil, let settled { database.rememberAbsent(key, settled) }
            for name in removed ?? [] { removeBody(name) }
        }
    }

    /// What the index holds for `key`, and the bucket's store count when no store of it was in flight just
    /// before the read (`nil` when one was, or the counts are not mapped). No read at all when the key is known
    /// to be absent; a read that finds nothing is remembered with that count (a read that failed is not).
    /// Under the database's lock.
    private func entry(for key: String, in database: Database) -> (
        lookup: Database.Lookup, settled: Database.Absence?
    ) {
        if isKnownAbsent(key, in: database) { return (.absent, nil) }
        let bucket = StoreCounters.bucket(of: key)
        let settled = counters.settledGeneration(of: bucket).map { Database.Absence(bucket: bucket, generation: $0) }
        let lookup = database.entry(for: key)
        if case .absent = lookup, let settled { database.rememberAbsent(key, settled) }
        return (lookup, settled)
    }

    /// Whether `key` was found absent by a read that began after the moment its bucket's store counts were
    /// seen equal, and no store of the bucket has begun since, in any cache on the folder: then no row for it
    /// can have been committed since either. Under the database's lock.
    private func isKnownAbsent(_ key: String, in database: Database) -> Bool {
        guard let absence = database.absence(of: key) else { return false }
        if counters.generation(of: absence.bucket) == absence.generation {
            database.skippedReads += 1
            return true
        }
        database.forgetAbsent(key)
        return false
    }

    /// Removes every entry: the index's rows and the body files they name. (Files a store cut short left
    /// behind are removed when a cache next opens the folder with no other cache using it.)
    public func removeAllCachedResponses() {
        database.withLock { database in _ = removeAll(in: database) }
    }

    /// Removes every entry; `false` when the index could not be changed. Under the database's lock.
    private func removeAll(in database: Database) -> Bool {
        let removed = database.transaction { () -> [String]? in
            guard let files = database.files() else { return nil }
            return database.deleteAll() ? files : nil
        }
        guard let removed else { return false }
        database.allRemoved()
        for name in removed { removeBody(name) }
        return true
    }

    /// The most keys whose store or removal failed that a cache keeps track of: about 4,096 URLs' worth of
    /// memory, however long the index fails.
    static let unservableLimit = 4096

    /// When more stores and removals failed than the cache keeps track of (``unservableLimit``), any
    /// entry may be one a failed removal left: every entry is removed before the next store or removal, which
    /// goes ahead only when that commits. Under the database's lock.
    private func settleLostFailures(in database: Database) -> Bool {
        !database.lostTrackOfFailures || removeAll(in: database)
    }

    /// What `PRAGMA integrity_check` says of the index: `["ok"]` when it is sound. For tests.
    func indexIntegrity() -> [String] {
        database.withLock { $0.integrityCheck() }
    }

    /// How many SQL statements this cache has run on its index, and how many lookups and removals it
    /// answered without one, because their key was known to be absent. For tests.
    func indexActivity() -> (statements: Int, skippedReads: Int) {
        database.withLock { ($0.statementsRun, $0.skippedReads) }
    }

    // MARK: - files

    /// Writes `data` to `bodies/.tmp-<file>`, flushes it and renames it to `bodies/<file>`.
    private func writeBody(_ data: Data, as file: String) -> Bool {
        let temporary = bodies.appendingPathComponent(".tmp-" + file).path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { return false }
        if let simulated = simulatedWriteError.withLock({ $0 }) {
            close(descriptor)
            unlink(temporary)
            errno = simulated
            return false
        }
        var written = 0
        let complete = data.withUnsafeBytes { buffer -> Bool in
            while written < buffer.count {
                let result = write(descriptor, buffer.baseAddress.map { $0 + written }, buffer.count - written)
                if result < 0, errno == EINTR { continue }
                guard result > 0 else { return false }
                written += result
            }
            return true
        }
        let flushed = complete && fsync(descriptor) == 0
        close(descriptor)
        guard flushed, rename(temporary, bodies.appendingPathComponent(file).path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// Removes body files the index doesn't name (a store cut short before its row was committed, or a
    /// replaced body not yet unlinked) and rows whose body file is gone. Only while no other cache has the
    /// folder open: another's store in flight has a body the index doesn't name yet.
    private func removeOrphans() {
        database.withLock { database in
            // Both reads or neither: a failed read is no empty folder or index, and taken for one it would remove
            // every body file (the index unread) or every row (the folder unread).
            guard let named = database.files().map(Set.init),
                let listing = try? FileManager.default.contentsOfDirectory(atPath: bodies.path)
            else { return }
            let present = Set(listing)
            for name in present.subtracting(named) { unlink(bodies.appendingPathComponent(name).path) }
            _ = database.transaction { () -> [String]? in
                guard let rows = database.keysAndFiles() else { return nil }
                for (key, file) in rows where !present.contains(file) {
                    guard database.delete(key: key, file: file) else { return nil }
                }
                return []
            }
        }
    }

    /// What reading a body file gave.
    private enum BodyRead {
        /// Its bytes.
        case read(Data)
        /// There is no such file, or it is not of the size the index records (damaged, or written behind the
        /// cache's back): never read, so that a size a damaged file system reports is never allocated.
        case missing
        /// It could not be read now: no descriptor left, no memory, an I/O error.
        case unreadable
    }

    /// The bytes of the body file at `path`, which the index records as `size` bytes long.
    private static func readBody(at path: String, size expected: Int) -> BodyRead {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return errno == ENOENT ? .missing : .unreadable }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return .unreadable }
        guard status.st_size == expected else { return .missing }
        let size = expected
        var data = Data(count: size)
        let complete = data.withUnsafeMutableBytes { buffer -> Bool in
            guard let base = buffer.baseAddress else { return size == 0 }
            var offset = 0
            while offset < size {
                let count = read(descriptor, base + offset, size - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        return complete ? .read(data) : .unreadable
    }

    /// Evicts to the capacity (it may have been lowered since the folder was last used).
    private func trim() {
        database.withLock { database in
            let evicted = database.transaction { evict(in: database) }
            for name in evicted ?? [] { removeBody(name) }
        }
    }

    /// Deletes the least recently used rows until the entries fit the capacity, inside the caller's
    /// transaction; returns their body files, for the caller to remove once it has committed, or `nil` when a
    /// statement failed.
    private func evict(in database: Database) -> [String]? {
        var files: [String] = []
        // The total once, less each victim's size: summing the table again for each victim would cost a scan of
        // every row per entry evicted, seconds for a large body stored into a cache full of small ones. A size
        // that can't be read fails the eviction (and so the store): taken for 0 it would let the entries grow
        // past the capacity.
        guard var total = database.totalSize() else { return nil }
        while total > capacity {
            guard let victim = database.leastRecentlyUsed() else { break }
            // By row: a key or file the index holds in another type (edited by hand, a blob) would not match
            // a delete by value, and the same row would be the victim forever. A delete that removes nothing
            // fails the eviction rather than loop.
            guard database.delete(row: victim.row), database.changes > 0 else { return nil }
            files.append(victim.file)
            total -= victim.size
        }
        return files
    }

    /// The path of body file `name`, or `nil` when `name` is not one this cache makes (a lowercase UUID):
    /// a name read from the index is never trusted to stay inside the bodies folder.
    private func bodyPath(_ name: String) -> String? {
        Self.isBodyFileName(name) ? bodies.appendingPathComponent(name).path : nil
    }

    /// Removes body file `name`, a name read from the index, if it is one this cache makes.
    private func removeBody(_ name: String) {
        if let path = bodyPath(name) { unlink(path) }
    }

    /// Whether `name` is a body file's name as ``storeCachedResponse(_:for:)`` makes them: a UUID in its
    /// canonical lowercase form.
    static func isBodyFileName(_ name: String) -> Bool {
        UUID(uuidString: name)?.uuidString.lowercased() == name
    }

    // MARK: - the folder

    /// Makes `url` a private folder when it is missing, with any missing folders above it (`~/.cache/my-app`
    /// for `~/.cache/my-app/http` on a fresh install), each with mode `0700`; checks that `url` is private.
    private static func makePrivateFolder(_ url: URL) throws(HeraldError) {
        if mkdir(url.path, 0o700) != 0, errno != EEXIST {
            let parent = url.deletingLastPathComponent()
            guard errno == ENOENT, parent.path != url.path,
                (try? FileManager.default.createDirectory(
                    at: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])) != nil,
                mkdir(url.path, 0o700) == 0 || errno == EEXIST
            else {
                throw HeraldError.fileFailure("Cannot create the response cache folder", url: url)
            }
        }
        if let error = checkPrivate(url) { throw error }
    }

    /// `nil` when `url` is a directory (not a symlink) of the effective user that no one else can enter.
    private static func checkPrivate(_ url: URL) -> HeraldError? {
        var status = stat()
        guard lstat(url.path, &status) == 0 else {
            return HeraldError.fileFailure("Cannot inspect the response cache folder", url: url)
        }
        guard status.st_mode & S_IFMT == S_IFDIR, status.st_uid == geteuid(), status.st_mode & 0o077 == 0 else {
            return HeraldError(
                .fileIO,
                "The response cache folder \(url.path) is not a private folder of this process's user (a "
                    + "directory, not a symlink, that it owns and no one else can enter); nothing is kept there.")
        }
        return nil
    }
}

/// What the index keeps of a response besides its body: the `head` column, as JSON. Internal rather than
/// private so that the fuzz target and its regression test can decode what a damaged index might hold.
struct StoredHead: Codable {
    var url: URL
    var statusCode: Int
    var httpVersion: String
    var headers: [[String]]
    var varyingRequestHeaders: [[String]]
    var storageDate: Date

    init(_ entry: CachedResponse) {
        url = entry.response.url
        statusCode = entry.response.statusCode
        httpVersion = entry.response.httpVersion
        headers = entry.response.headers.map { [$0.name, $0.value] }
        varyingRequestHeaders = entry.varyingRequestHeaders.map { [$0.name, $0.value] }
        storageDate = entry.storageDate
    }

    func entry(body: Data) -> CachedResponse {
        let fields = { (pairs: [[String]]) in
            HTTPHeaders(pairs.compactMap { $0.count == 2 ? HTTPHeaders.Field(name: $0[0], value: $0[1]) : nil })
        }
        let response = HTTPResponse(
            url: url, statusCode: statusCode, headers: fields(headers), httpVersion: httpVersion)
        return CachedResponse(
            response: response, data: body, storageDate: storageDate,
            varyingRequestHeaders: fields(varyingRequestHeaders))
    }
}

/// The SQLite index: one connection, used under the cache's lock only.
private final class Database: @unchecked Sendable {
    /// Why an index can't be opened: SQLite finds it damaged (`SQLITE_CORRUPT`) or not a database at all
    /// (`SQLITE_NOTADB`).
    struct Damaged: Error {}

    // Safety: the connection, its prepared statements, the decoded heads, the absent and unservable keys and
    // the counts (`statements`, `decodedHeads`, `absent`, `unservable`, `lostTrackOfFailures`, `statementsRun`
    // and `skippedReads`, mutable) are only used
    // inside `Locked.withLock`, by one thread at a time, and SQLite is built thread-safe (serialized or
    // multi-thread mode), so a connection may move between threads.
    private let connection: OpaquePointer
    /// Each statement prepared once, the first time it runs, and reset after each use: parsing the SQL again
    /// on every lookup cost more than the lookup itself.
    private var statements: [String: OpaquePointer] = [:]
    /// The heads of recent hits, decoded, by body file: a row's head never changes while it names its body
    /// file (a new response is a new file), so a repeated hit skips the JSON decoding, a fifth of its time.
    private(set) var decodedHeads: [String: StoredHead] = [:]

    /// Keys a read found absent, each with its bucket and the bucket's store count (see `StoreCounters`) at a
    /// moment before that read when no store of the bucket was in flight. Cleared when it grows past 4,096 keys.
    private var absent: [String: Absence] = [:]
    /// How many statements `run` has run.
    private(set) var statementsRun = 0
    /// How many lookups and removals were answered from `absent`, without a statement.
    var skippedReads = 0

    /// A key found absent: its bucket, kept so a later check needn't hash the key again, and the bucket's
    /// store count before the read.
    struct Absence {
        var bucket: Int
        var generation: UInt64
    }

    func absence(of key: String) -> Absence? { absent[key] }

    /// Keys whose last store or removal failed in the index, which may still hold an older entry: not served
    /// until one commits. At most ``DiskResponseCache/unservableLimit``: past that the cache no longer knows
    /// which keys failed (``lostTrackOfFailures``).
    private var unservable: Set<String> = []
    /// Whether more stores and removals failed than ``unservable`` holds (the index failing for a long time,
    /// a disk full, with many URLs requested meanwhile): then no entry is served until every entry has been
    /// removed.
    private(set) var lostTrackOfFailures = false
    /// When set, every statement fails (see `DiskResponseCache.simulateIndexFailure(_:)`).
    var failsStatements = false

    /// Records whether the last store or removal of `key` committed.
    func setServable(_ key: String, _ committed: Bool) {
        if committed {
            unservable.remove(key)
        } else if !lostTrackOfFailures,
            unservable.count < DiskResponseCache.unservableLimit || unservable.contains(key)
        {
            unservable.insert(key)
        } else {
            unservable.removeAll()
            lostTrackOfFailures = true
        }
    }

    /// Whether the entry for `key`, if the index holds one, may be served: no store or removal of it failed.
    func mayServe(_ key: String) -> Bool {
        !lostTrackOfFailures && !unservable.contains(key)
    }

    /// Every entry was removed, and the removal committed: none is left that a failed store or removal may
    /// have meant to replace or remove.
    func allRemoved() {
        unservable.removeAll()
        lostTrackOfFailures = false
    }

    func rememberAbsent(_ key: String, _ absence: Absence) {
        if absent.count >= 4096, absent[key] == nil { absent.removeAll(keepingCapacity: true) }
        absent[key] = absence
    }

    func forgetAbsent(_ key: String) {
        absent[key] = nil
    }

    func remember(_ head: StoredHead, of file: String) {
        if decodedHeads.count >= 256, decodedHeads[file] == nil { decodedHeads.removeAll(keepingCapacity: true) }
        decodedHeads[file] = head
    }

    struct Row {
        var head: Data
        var file: String
        var bodySize: Int
        /// Whether no entry was used more recently.
        var isMostRecent: Bool
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close(connection)
    }

    /// Opens (or makes) the index at `path`; `checked`, it is also read through (`PRAGMA quick_check`), for
    /// damage past the pages opening it reads.
    /// - Throws: ``HeraldError/Code/fileIO``, with ``Damaged`` as its underlying error when SQLite finds the
    ///   index damaged or not a database.
    init(path: String, checked: Bool = false) throws(HeraldError) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw HeraldError(.fileIO, "Cannot open the response cache index \(path): \(message).")
        }
        connection = handle
        sqlite3_busy_timeout(handle, 5_000)
        let schema = """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS entries (
                key TEXT PRIMARY KEY NOT NULL,
                head BLOB NOT NULL,
                file TEXT NOT NULL,
                size INTEGER NOT NULL,
                body_size INTEGER NOT NULL,
                last_use INTEGER NOT NULL
            );
            CREATE INDEX IF NOT EXISTS entries_by_use ON entries (last_use);
            CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 0), size INTEGER NOT NULL);
            CREATE TRIGGER IF NOT EXISTS entries_replacing BEFORE INSERT ON entries
                BEGIN UPDATE totals SET size = size - IFNULL((SELECT size FROM entries WHERE key = NEW.key), 0)
                    WHERE id = 0; END;
            CREATE TRIGGER IF NOT EXISTS entries_added AFTER INSERT ON entries
                BEGIN UPDATE totals SET size = size + NEW.size WHERE id = 0; END;
            CREATE TRIGGER IF NOT EXISTS entries_removed AFTER DELETE ON entries
                BEGIN UPDATE totals SET size = size - OLD.size WHERE id = 0; END;
            CREATE TRIGGER IF NOT EXISTS entries_resized AFTER UPDATE OF size ON entries
                BEGIN UPDATE totals SET size = size - OLD.size + NEW.size WHERE id = 0; END;
            INSERT OR IGNORE INTO totals (id, size) SELECT 0, IFNULL(SUM(size), 0) FROM entries;
            """
        let result = sqlite3_exec(handle, schema, nil, nil, nil)
        guard result == SQLITE_OK else {
            // The connection is closed by deinit.
            let message = String(cString: sqlite3_errmsg(handle))
            let damaged = result & 0xff == SQLITE_CORRUPT || result & 0xff == SQLITE_NOTADB
            throw HeraldError(
                .fileIO, "The response cache index \(path) cannot be used: \(message).",
                underlying: damaged ? Damaged() : nil)
        }
        guard checked else { return }
        var verdict: [String] = []
        let read = run("PRAGMA quick_check", row: { verdict.append(Self.text($0, 0)) })
        if read, verdict == ["ok"] { return }
        // Damage is what the check found, or SQLite's own verdict on the read; a check that could not run for
        // another reason (busy past the timeout, out of memory) says nothing of the index, which stays.
        let failure = sqlite3_errcode(handle) & 0xff
        guard read || failure == SQLITE_CORRUPT || failure == SQLITE_NOTADB else { return }
        throw HeraldError(
            .fileIO,
            "The response cache index \(path) is damaged: \(verdict.first ?? String(cString: sqlite3_errmsg(handle))).",
            underlying: Damaged())
    }

    /// Runs `sql` with `bindings` (text, blob or integer), calling `row` for each result row.
    @discardableResult
    private func run(_ sql: String, _ bindings: [Binding] = [], row: ((OpaquePointer) -> Void)? = nil) -> Bool {
        guard let statement = prepared(sql) else { return false }
        statementsRun += 1
        if failsStatements { return false }
        // Reset at once: a statement left mid-step would hold its read transaction open.
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, binding) in bindings.enumerated() {
            let position = Int32(index + 1)
            switch binding {
            case .text(let text): sqlite3_bind_text(statement, position, text, -1, csqlite_transient())
            case .integer(let value): sqlite3_bind_int64(statement, position, Int64(value))
            case .blob(let data):
                _ = data.withUnsafeBytes { buffer in
                    sqlite3_bind_blob(
                        statement, position, buffer.baseAddress, Int32(buffer.count), csqlite_transient())
                }
            }
        }
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: row?(statement)
            case SQLITE_DONE: return true
            default: return false
            }
        }
    }

    private func prepared(_ sql: String) -> OpaquePointer? {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(connection, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            return nil
        }
        statements[sql] = statement
        return statement
    }

    private enum Binding {
        case text(String)
        case integer(Int)
        case blob(Data)
    }

    private static func text(_ statement: OpaquePointer, _ column: Int32) -> String {
        sqlite3_column_text(statement, column).map { String(cString: $0) } ?? ""
    }

    /// What a read of the index found for a key.
    enum Lookup {
        case found(Row)
        case absent
        /// The read failed (locked past the busy timeout, I/O, a damaged index): a row may be there.
        case failed
    }

    func entry(for key: String) -> Lookup {
        var found: Row?
        let sql =
            "SELECT head, file, body_size, last_use >= (SELECT MAX(last_use) FROM entries) FROM entries WHERE key = ?"
        let ran = run(sql, [.text(key)]) { statement in
            let count = Int(sqlite3_column_bytes(statement, 0))
            let head = sqlite3_column_blob(statement, 0).map { Data(bytes: $0, count: count) } ?? Data()
            found = Row(
                head: head, file: Self.text(statement, 1), bodySize: Int(sqlite3_column_int64(statement, 2)),
                isMostRecent: sqlite3_column_int64(statement, 3) != 0)
        }
        guard ran else { return .failed }
        return found.map { .found($0) } ?? .absent
    }

    /// Runs `body` in an immediate transaction (the write lock taken at the start, so that it never has to
    /// be upgraded while another process writes): commits when it returns a value, rolls back when it
    /// returns `nil` or the commit fails. `nil` when the transaction could not start or did not commit.
    func transaction<T>(_ body: () -> T?) -> T? {
        guard run("BEGIN IMMEDIATE") else { return nil }
        guard let result = body(), run("COMMIT") else {
            run("ROLLBACK")
            return nil
        }
        return result
    }

    /// The next last-use stamp, one more than the largest stored, computed in the statement that uses it so
    /// that it holds across processes.
    private static let nextUse = "(SELECT IFNULL(MAX(last_use), 0) + 1 FROM entries)"

    func touch(key: String) {
        run("UPDATE entries SET last_use = \(Self.nextUse) WHERE key = ?", [.text(key)])
    }

    func insert(key: String, head: Data, file: String, bodySize: Int) -> Bool {
        run(
            "INSERT OR REPLACE INTO entries (key, head, file, size, body_size, last_use) "
                + "VALUES (?, ?, ?, ?, ?, \(Self.nextUse))",
            [.text(key), .blob(head), .text(file), .integer(bodySize + head.count), .integer(bodySize)])
    }

    /// Deletes the row for `key` if it still names `file`; `false` when the statement failed.
    func delete(key: String, file: String) -> Bool {
        run("DELETE FROM entries WHERE key = ? AND file = ?", [.text(key), .text(file)])
    }

    /// How many rows the last statement that changed the index changed.
    var changes: Int { Int(sqlite3_changes(connection)) }

    func deleteAll() -> Bool {
        run("DELETE FROM entries")
    }

    func integrityCheck() -> [String] {
        var lines: [String] = []
        if !run("PRAGMA integrity_check", row: { lines.append(Self.text($0, 0)) }) { lines.append("failed") }
        return lines
    }

    /// The bytes the entries take, or `nil` when the index can't be read.
    ///
    /// Kept in `totals` by triggers on `entries`, which SQLite runs for every process writing the index, this
    /// version of Herald or not: summing the table instead read every page of it, heads and all, on every store
    /// (14 ms a store in a cache of 20,000 entries). The row is made, with the sum, after the triggers, so an
    /// entry written meanwhile by another process is counted once. A store replaces its key's row with `INSERT OR
    /// REPLACE`, whose deletion runs no delete trigger (SQLite runs none for it without `recursive_triggers`):
    /// the insert's own trigger takes the replaced row's size off first.
    func totalSize() -> Int? {
        var total: Int?
        guard run("SELECT size FROM totals WHERE id = 0", row: { total = Int(sqlite3_column_int64($0, 0)) })
        else { return nil }
        if let total { return total }
        var sum = 0
        guard run("SELECT IFNULL(SUM(size), 0) FROM entries", row: { sum = Int(sqlite3_column_int64($0, 0)) })
        else { return nil }
        return sum
    }

    func count() -> Int {
        var total = 0
        run("SELECT COUNT(*) FROM entries") { total = Int(sqlite3_column_int64($0, 0)) }
        return total
    }

    /// The least recently used entry's row, body file and size (as `totalSize()` counts it).
    func leastRecentlyUsed() -> (row: Int, file: String, size: Int)? {
        var victim: (row: Int, file: String, size: Int)?
        run("SELECT rowid, file, IFNULL(size, 0) FROM entries ORDER BY last_use LIMIT 1") { statement in
            victim = (
                Int(sqlite3_column_int64(statement, 0)), Self.text(statement, 1),
                Int(sqlite3_column_int64(statement, 2))
            )
        }
        return victim
    }

    func delete(row: Int) -> Bool {
        run("DELETE FROM entries WHERE rowid = ?", [.integer(row)])
    }

    /// Every body file the index names; `nil` when the index could not be read.
    func files() -> [String]? {
        keysAndFiles()?.map(\.file)
    }

    /// Every entry's key and body file; `nil` when the index could not be read.
    func keysAndFiles() -> [(key: String, file: String)]? {
        var rows: [(key: String, file: String)] = []
        guard run("SELECT key, file FROM entries", row: { rows.append((Self.text($0, 0), Self.text($0, 1))) }) else {
            return nil
        }
        return rows
    }
}

/// Two counts per bucket of keys (a key's bucket is its FNV-1a hash modulo 256), shared by every cache on one
/// folder through a shared mapping of the folder's lock file: how many stores of the bucket have begun, and
/// how many have ended. A store counts itself as begun before its transaction and as ended after it.
///
/// A cache that reads the counts equal (ended first, then begun), then reads the index and finds no row for a
/// key, may take the key as absent for as long as the begun count stays what it read: a row for it committed
/// after that read belongs to a store that was not in flight when the counts were equal (it had ended, so
/// its commit came before the read and the read would have seen it), so that store began later and moved the
/// begun count. A store cut short by a killed process leaves its bucket unequal, so that no key of it is
/// taken as absent, until a cache opens the folder with no other cache on it and settles the counts.
///
/// The mapping is of a local file, shared the way SQLite's write-ahead log already requires the index's
/// processes to share memory (one machine, a local file system).
final class StoreCounters: @unchecked Sendable {
    // Safety: `base` points into a shared mapping of the lock file that lives as long as this object (it is
    // unmapped in deinit), and every access to it is one of CSQLite's sequentially consistent atomic loads,
    // increments and stores, so threads of this process and of others may use the counts at once.
    static let buckets = 256
    private static let byteCount = buckets * 2 * MemoryLayout<UInt64>.size
    private let base: UnsafeMutablePointer<UInt64>

    /// Maps the counts of the lock file open as `descriptor`, growing the file to hold them when it is
    /// shorter (as it is when new: zeros, every bucket settled); `nil` when that fails.
    ///
    /// The file's blocks are allocated first, not left a hole: a write into a shared mapping that needs a
    /// block the file system can't give (a full disk, a quota) is a `SIGBUS` that ends the process, where a
    /// failed allocation here is a cache without counts. (A copy-on-write file system such as btrfs needs a
    /// new block for every write back, so a full one can still fault; no other file system here does.)
    init?(descriptor: Int32) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        if status.st_size < Self.byteCount, ftruncate(descriptor, off_t(Self.byteCount)) != 0 { return nil }
        // Every open, not only when the file grows: one an earlier version grew with `ftruncate` alone has a hole.
        guard posix_fallocate(descriptor, 0, off_t(Self.byteCount)) == 0 else { return nil }
        guard let mapping = mmap(nil, Self.byteCount, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0),
            mapping != UnsafeMutableRawPointer(bitPattern: -1)
        else { return nil }
        base = mapping.bindMemory(to: UInt64.self, capacity: Self.buckets * 2)
    }

    deinit {
        munmap(base, Self.byteCount)
    }

    /// The bucket of `key`: the same in every process.
    static func bucket(of key: String) -> Int {
        // FNV-1a over the key's bytes. Every process sharing the folder must agree on it: never change it.
        var key = key
        let hash = key.withUTF8 { bytes in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return hash
        }
        return Int(hash % UInt64(buckets))
    }

    private func begun(_ bucket: Int) -> UnsafeMutablePointer<UInt64> { base + 2 * bucket }
    private func ended(_ bucket: Int) -> UnsafeMutablePointer<UInt64> { base + 2 * bucket + 1 }

    /// How many stores of `bucket` have begun.
    func generation(of bucket: Int) -> UInt64 {
        csqlite_shared_load(begun(bucket))
    }

    /// How many stores of `bucket` have begun, when as many have ended (none is in flight); else `nil`.
    func settledGeneration(of bucket: Int) -> UInt64? {
        let ended = csqlite_shared_load(ended(bucket))
        let begun = csqlite_shared_load(begun(bucket))
        return ended == begun ? begun : nil
    }

    func beginStore(in bucket: Int) {
        csqlite_shared_increment(begun(bucket))
    }

    func endStore(in bucket: Int) {
        csqlite_shared_increment(ended(bucket))
    }

    /// Counts every begun store as ended. Only while no other cache has the folder open.
    func settle() {
        for bucket in 0..<Self.buckets { csqlite_shared_store(ended(bucket), csqlite_shared_load(begun(bucket))) }
    }
}
