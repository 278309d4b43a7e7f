import Dispatch
import Foundation

/// A request body as handed to the engine: a Sendable description, opened into a ``BodySource`` when the
/// transfer is prepared (on the thread that starts it, before the engine sees it). Data and file bodies are
/// library code and are read on the loop thread; streams are user code and are read by a
/// ``StreamBodyReader`` on the task's hook queue, never on the loop thread.
package enum TransferBody: Sendable {
    /// Bytes in memory.
    case data(Data)
    /// A file, read in chunks as the connection takes them.
    case file(URL)
    /// A provider-backed stream; `renew` asks for a fresh stream when the body must be resent, and returns
    /// `nil` when there is none. Both run on `readOn`, the task's hook queue. Of unknown length (`nil`) it is
    /// sent in chunks; of a declared `length`, with `Content-Length`, and every stream must hold exactly that
    /// many bytes.
    case stream(PulledBody, renew: @Sendable () -> PulledBody?, readOn: DispatchQueue, length: Int64?)
    /// A stream of a known length, sent with `Content-Length`: `open` makes a fresh stream from the
    /// start, when the transfer is prepared (the preparing thread) and whenever the body must be resent
    /// (`readOn`, the task's hook queue, where the stream is read).
    case sized(length: Int64, open: @Sendable () throws(TransferError) -> PulledBody, readOn: DispatchQueue)

    /// Whether the body can be read again from its first byte at once, on the loop thread: data and a file
    /// can; a stream needs a fresh one, made off the loop thread.
    var rewindsAtOnce: Bool {
        switch self {
        case .data, .file: true
        case .stream, .sized: false
        }
    }

    /// Opens the body for reading, when the transfer is prepared.
    func open() throws(TransferError) -> any BodySource {
        switch self {
        case .data(let data): DataBodySource(data)
        case .file(let url): try FileBodySource(url: url)
        case .stream(let stream, let renew, let queue, nil):
            StreamedBodySource(first: stream, origin: .unsized(renew: renew), queue: queue)
        case .stream(let stream, let renew, let queue, let length?):
            StreamedBodySource(
                first: stream,
                origin: .sized(
                    length: length,
                    open: { () throws(TransferError) -> PulledBody in
                        guard let fresh = renew() else { throw .noNewBodyStream }
                        return fresh
                    }),
                queue: queue)
        case .sized(let length, let open, let queue):
            StreamedBodySource(first: try open(), origin: .sized(length: length, open: open), queue: queue)
        }
    }
}

/// What a read from a body source produced.
enum BodySourceRead {
    /// `count` bytes were copied into the buffer.
    case bytes(Int)
    /// The body is complete.
    case end
    /// The source failed; the transfer aborts with this error.
    case failed(TransferError)
    /// Nothing to send yet (a stream's reader is behind): the read callback pauses sending, and the source
    /// has the transfer woken when there is (``BodySource/startReading(wake:)``).
    case wait
}

/// Where a transfer reads its request body from, from curl's read and seek callbacks. Loop thread only; no
/// source runs user code there (a stream's is read ahead on another queue: ``StreamedBodySource``).
///
/// One protocol for every task kind, so the callbacks have one code path; each source knows how to rewind
/// itself when curl must resend the body, without waiting.
protocol BodySource: AnyObject {
    /// The body's length, or `nil` when unknown (the body is then sent chunked).
    var length: Int64? { get }
    /// Copies the next bytes into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> BodySourceRead
    /// Positions the source so the next read returns the byte at `offset` (or ``BodySourceRead/wait`` until
    /// it can); returns why it can't.
    func rewind(to offset: Int64) -> TransferError?
    /// Starts reading ahead, for a source that reads off the loop thread; `wake` (called on any thread) has the
    /// transfer unpause sending once a read that answered ``BodySourceRead/wait`` can go on.
    func startReading(wake: @escaping @Sendable () -> Void)
    /// The transfer is over: stop reading ahead.
    func stopReading()
}

extension BodySource {
    func startReading(wake: @escaping @Sendable () -> Void) {}
    func stopReading() {}
}

/// A body in memory.
final class DataBodySource: BodySource {
    private let data: Data
    private var offset = 0

    init(_ data: Data) { self.data = data }

    var length: Int64? { Int64(data.count) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> BodySourceRead {
        let count = min(buffer.count, data.count - offset)
        guard count > 0 else { return .end }
        let start = data.startIndex + offset
        data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: start..<(start + count))
        offset += count
        return .bytes(count)
    }

    func rewind(to offset: Int64) -> TransferError? {
        guard offset >= 0, offset <= data.count else {
            return TransferError(.bodyStream, "Cannot seek the request body to byte \(offset) of \(data.count).")
        }
        self.offset = Int(offset)
        return nil
    }
}

/// A body read from a file with `pread`, one curl buffer at a time: constant memory for any size.
final class FileBodySource: BodySource {
    private let descriptor: Int32
    private let url: URL
    private var offset: Int64 = 0
    let length: Int64?

    init(url: URL) throws(TransferError) {
        self.url = url
        // Without blocking: the file was a regular one when the task was made, but a FIFO put in its place since
        // would block this open (on the thread that resumes, or a hook queue on a resend) until a writer came.
        descriptor = open(url.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else {
            throw FileIOError.make("Cannot open the upload file", url: url)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let error = FileIOError.make("Cannot read the size of the upload file", url: url)
            close(descriptor)
            throw error
        }
        // The size is the `Content-Length`: a FIFO or a device reports 0, and would go out as an empty body.
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw TransferError(.fileIO, "The upload file \(url.path) is no longer a regular file.")
        }
        length = Int64(status.st_size)
    }

    deinit { close(descriptor) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> BodySourceRead {
        // Never past the size declared as the Content-Length: a file still being written to (a log) would
        // otherwise put its new bytes on the wire after the body, as the start of a bogus next request.
        let wanted = length.map { Int(clamping: max(0, min(Int64(buffer.count), $0 - offset))) } ?? buffer.count
        if wanted == 0, let length, offset >= length { return .end }
        while true {
            let count = pread(descriptor, buffer.baseAddress, wanted, off_t(offset))
            if count > 0 {
                offset += Int64(count)
                return .bytes(count)
            }
            if count == 0 {
                guard let length, offset < length else { return .end }
                // The file shrank while it was being sent: the declared Content-Length can't be met.
                return .failed(
                    TransferError(
                        .fileIO,
                        "The upload file \(url.path) ended at byte \(offset) of \(length); it changed while sending."))
            }
            if errno == EINTR { continue }
            return .failed(FileIOError.make("Reading the upload file failed", url: url))
        }
    }

    func rewind(to offset: Int64) -> TransferError? {
        guard offset >= 0 else { return TransferError(.bodyStream, "Cannot seek the upload file to byte \(offset).") }
        self.offset = offset
        return nil
    }
}

/// Builds ``TransferError/Code/fileIO`` errors from `errno`.
package enum FileIOError {
    /// `"<what> <path>: <strerror(errno)>"`, with the POSIX error as the underlying error. Read `errno`
    /// before anything else can change it.
    package static func make(_ what: String, url: URL, code: Int32 = errno) -> TransferError {
        let posix = POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        return TransferError(.fileIO, "\(what) \(url.path): \(String(cString: strerror(code))).", underlying: posix)
    }
}

/// A streamed request body, read on demand: `read` copies up to `buffer.count` bytes into `buffer` and returns how
/// many it copied; 0 ends the body, and a thrown error fails the transfer with `bodyStream`. `Herald` makes one
/// from the public `BodyStream`.
package struct PulledBody: Sendable {
    /// Fills the buffer; see the type's description.
    package let read: @Sendable (_ buffer: UnsafeMutableRawBufferPointer) throws -> Int

    /// Creates a source from a read function.
    package init(read: @escaping @Sendable (_ buffer: UnsafeMutableRawBufferPointer) throws -> Int) {
        self.read = read
    }
}
