import Foundation

/// Where a transfer's response body goes, as handed to the engine: a Sendable description, opened into a
/// ``BodySink`` on the loop thread when the transfer starts.
package enum TransferSink: Sendable {
    /// Collected in memory (data and upload tasks).
    case memory
    /// Written to `url` as bytes arrive (download tasks). With `resumeOffset > 0` the file already holds
    /// that many bytes of the representation, and a `206` answering the `Range` request appends to them.
    case file(URL, resumeOffset: Int64)
    /// Handed to a consumer as bytes arrive, through `buffer`, whose watermarks pause and continue receiving
    /// (streamed data tasks).
    case stream(any StreamedBodyConsumer)

    /// Opens the sink; `validator` is the `If-Range` a continuing file's request carries. Loop thread.
    func open(validator: String? = nil) throws(TransferError) -> any BodySink {
        switch self {
        case .memory: MemoryBodySink()
        case .file(let url, let resumeOffset):
            try FileBodySink(url: url, resumeOffset: resumeOffset, validator: resumeOffset > 0 ? validator : nil)
        case .stream(let buffer): StreamBodySink(buffer: buffer)
        }
    }
}

/// A downloaded file, as the transfer left it.
package struct DownloadedFile: Sendable {
    /// Where the bytes are.
    var url: URL
    /// How many bytes of the representation the file holds, from its start.
    package var byteCount: Int64
    /// Whether this transfer's response body reached the file (if not, the file is as it was before).
    package var receivedBody: Bool
    /// Whether the server answered a resumed download `416` naming the file's own length as the whole
    /// representation's: the file is complete as it was, and the answer's body went nowhere.
    package var wasAlreadyComplete = false
    /// Whether the body reached the file decoded (a data task that became a download after libcurl began decoding
    /// its `Content-Encoding`): ``byteCount`` then counts decoded bytes, not bytes of the representation as sent.
    package var holdsDecodedBody = false
    /// Whether the file holds a range that doesn't start at the representation's first byte (a server's `206`
    /// starting elsewhere): ``byteCount`` then counts bytes of that range, which no request for the rest
    /// continues.
    package var holdsPartFromElsewhere = false
    /// Whether closing the file failed (`EIO`, `EDQUOT`): bytes the kernel took may never have reached it, so the
    /// first ``byteCount`` bytes are not known to be there, and nothing may continue from them.
    package var mayHaveLostWrites = false
}

/// Where curl's write callback puts response bytes. Loop thread only.
///
/// One protocol for every task kind, so the write callback has one code path.
protocol BodySink: AnyObject {
    /// A final response head arrived and its body follows: prepare for it, discarding whatever an earlier
    /// response left. `declaredLength` is the size the body is expected to have, from the head's
    /// `Content-Length` capped by the response size limit, if it has one; only a hint, which a server may
    /// get wrong or lie about. Returns the representation
    /// offset at which this body starts, or why the transfer must stop.
    func begin(response: ResponseHead, declaredLength: Int64?) -> Result<Int64, TransferError>
    /// Stores body bytes; returns an error that aborts the transfer.
    func write(_ bytes: UnsafeRawBufferPointer) -> TransferError?
    /// Why a body curl took as whole is not, if the sink knows better than curl: a range answer ended before
    /// the end of its `Content-Range`. Asked once curl has finished the transfer without an error.
    var shortfall: TransferError? { get }
    /// Ends the sink; the bytes collected in memory (empty for a file), or why what was written can't be trusted
    /// (the file's close reported a write the kernel could not complete).
    func finish() throws(TransferError) -> Data
    /// The file written, for file sinks.
    var file: DownloadedFile? { get }
    /// Whether the write callback must pause before handing over more bytes, because the consumer is behind;
    /// when it returns `true`, the sink has noted `transfer` and has it sent `resumeReceiving` once the
    /// consumer catches up. Only a streamed body's sink ever returns `true`.
    func isFull(pausing transfer: Transfer) -> Bool
    /// The head of a final response ended (its body, if any, follows); `makeResponse` builds it. A streamed
    /// body's sink hands it to its consumer before the first body byte; other sinks ignore it.
    func headDidEnd(_ makeResponse: () -> ResponseHead)
}

extension BodySink {
    var shortfall: TransferError? { nil }
    func isFull(pausing transfer: Transfer) -> Bool { false }
    func headDidEnd(_ makeResponse: () -> ResponseHead) {}
}

/// Collects the body in memory, once: the buffer is handed on as it is, never copied.
///
/// The buffer is sized from the response's declared `Content-Length` when there is one (capped by the
/// response size limit and 64 MiB), so a body of known length takes one allocation;
/// otherwise it doubles with `realloc`, which moves a large block by remapping its pages rather than
/// copying them. Finishing hands the buffer to a `Data` without copying it. Running out of memory is an
/// error that ends the transfer, not a crash.
///
/// A large buffer's pages are mapped a few MiB ahead of the bytes with `madvise(MADV_POPULATE_WRITE)`:
/// one system call per chunk instead of a page fault per 4 KiB page, which takes about a third off the
/// time of a 256 MiB body. Where the kernel lacks it (before Linux 5.14) the call fails and the pages
/// fault in one by one as before.
final class MemoryBodySink: BodySink {
    // The stored properties are `@exclusivity(unchecked)`: used on the loop thread only (see `Transfer`).

    /// The smallest buffer made for a body of unknown length.
    static let initialCapacity = 16 * 1024
    /// The largest buffer made from a declared length before the bytes arrive: a lie costs at most that much
    /// address space, not memory (the pages stay untouched until written).
    static let largestDeclaredCapacity = 64 << 20
    /// The buffer size from which pages are mapped ahead of the bytes.
    static let prefaultThreshold = 1 << 20
    /// How far ahead of the bytes pages are mapped, in one call.
    static let prefaultChunk = 4 << 20

    @exclusivity(unchecked) private var buffer: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var count = 0
    @exclusivity(unchecked) private var capacity = 0
    /// How many bytes from the buffer's start have their pages mapped (as far as this sink knows).
    @exclusivity(unchecked) private var mapped = 0
    /// The current response's declared body length, if it has one.
    @exclusivity(unchecked) private var declaredLength: Int?

    /// Where a finished body's memory goes back when its last `Data` lets go of it.
    private let frees: LoopThreadFrees

    init(frees: LoopThreadFrees = .shared) {
        self.frees = frees
    }

    deinit { free(buffer) }

    func begin(response: ResponseHead, declaredLength: Int64?) -> Result<Int64, TransferError> {
        // A new response replaces whatever an earlier one left.
        count = 0
        self.declaredLength = declaredLength.flatMap {
            $0 > 0 ? Int(exactly: min($0, Int64(Self.largestDeclaredCapacity))) : nil
        }
        return .success(0)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> TransferError? {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return nil }
        let needed = count + bytes.count
        if needed > capacity {
            var target = max(needed, capacity * 2, Self.initialCapacity)
            // The declared length, when it covers what has arrived, is what the body will need.
            if let declaredLength, declaredLength >= needed { target = declaredLength }
            if buffer == nil, let (block, size) = frees.take(atLeast: target) {
                // A finished body's memory, waiting to be freed: reused instead.
                buffer = block
                capacity = size
            } else {
                guard let grown = realloc(buffer, target) else {
                    return TransferError(.outOfMemory, "Cannot grow the response body's buffer to \(target) bytes.")
                }
                buffer = grown
                capacity = target
            }
            // What was copied or remapped is mapped; nothing beyond it is known to be.
            mapped = count
        }
        guard let buffer else { return nil }
        if needed > mapped, capacity >= Self.prefaultThreshold { prefault(buffer, through: needed) }
        (buffer + count).copyMemory(from: source, byteCount: bytes.count)
        count = needed
        return nil
    }

    /// Maps the pages from the end of the mapped part up to a chunk past `needed` (whole pages inside the
    /// buffer only: the partial pages at its ends fault in as usual).
    private func prefault(_ buffer: UnsafeMutableRawPointer, through needed: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let base = Int(bitPattern: buffer)
        let start = (base + mapped + page - 1) & ~(page - 1)
        let end = min(base + needed + Self.prefaultChunk, base + capacity) & ~(page - 1)
        if end > start, let address = UnsafeMutableRawPointer(bitPattern: start) {
            // A failure (an old kernel, no memory to map now) leaves the pages to fault in one by one.
            _ = madvise(address, end - start, MADV_POPULATE_WRITE)
        }
        mapped = max(end - base, needed)
    }

    /// The buffer and how far its pages are mapped, for tests.
    var mappedRegion: (start: UnsafeMutableRawPointer?, mapped: Int) { (buffer, mapped) }

    func finish() -> Data {
        guard let buffer, count > 0 else { return Data() }
        // Hand the memory over as it is; give back what a doubling left unused (not the few bytes a reused
        // block has beyond the body: shrinking by less than a page returns nothing to anyone).
        let fitted = capacity - count > 4096 ? (realloc(buffer, count) ?? buffer) : buffer
        // Freed on a loop thread, which allocated it, whichever thread lets go of it (see LoopThreadFrees);
        // the shared one through a function that captures nothing, so the deallocator allocates nothing.
        let deallocator: Data.Deallocator
        if frees === LoopThreadFrees.shared {
            deallocator = .custom(LoopThreadFrees.releaseToShared)
        } else {
            deallocator = .custom { [frees] pointer, bytes in frees.release(pointer, bytes: bytes) }
        }
        let body = Data(bytesNoCopy: fitted, count: count, deallocator: deallocator)
        self.buffer = nil
        capacity = 0
        count = 0
        mapped = 0
        return body
    }

    var file: DownloadedFile? { nil }
}
