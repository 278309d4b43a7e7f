import Foundation

/// A request body as handed to the engine: a Sendable description, opened into a ``BodySource`` when the
/// transfer is prepared (on the thread that starts it, before the engine sees it) and read on the loop thread.
enum TransferBody: Sendable {
    /// Bytes in memory.
    case data(Data)
    /// A file, read in chunks as the connection takes them.
    case file(URL)
    /// A provider-backed stream of unknown length; `renew` asks for a fresh stream when the body must be
    /// resent, and returns `nil` when there is none.
    case stream(BodyStream, renew: @Sendable () -> BodyStream?)
    /// A stream of a known length, sent with `Content-Length`: `open` makes a fresh stream from the
    /// start, when the transfer is prepared (the preparing thread) and whenever the body must be resent (the
    /// loop thread).
    case sized(length: Int64, open: @Sendable () throws(HeraldError) -> BodyStream)

    /// Opens the body for reading, when the transfer is prepared.
    func open() throws(HeraldError) -> any BodySource {
        switch self {
        case .data(let data): DataBodySource(data)
        case .file(let url): try FileBodySource(url: url)
        case .stream(let stream, let renew): StreamBodySource(stream, renew: renew)
        case .sized(let length, let open): try SizedStreamBodySource(length: length, open: open)
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
    case failed(HeraldError)
}

/// Where a transfer reads its request body from, from curl's read and seek callbacks. Loop thread only.
///
/// One protocol for every task kind, so the callbacks have one code path; each source knows how to rewind
/// itself when curl must resend the body.
protocol BodySource: AnyObject {
    /// The body's length, or `nil` when unknown (the body is then sent chunked).
    var length: Int64? { get }
    /// Copies the next bytes into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> BodySourceRead
    /// Positions the source so the next read returns the byte at `offset`; returns why it can't.
    func rewind(to offset: Int64) -> HeraldError?
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

    func rewind(to offset: Int64) -> HeraldError? {
        guard offset >= 0, offset <= data.count else {
            return HeraldError(.bodyStream, "Cannot seek the request body to byte \(offset) of \(data.count).")
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

    init(url: URL) throws(HeraldError) {
        self.url = url
        descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw FileIOError.make("Cannot open the upload file", url: url)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let error = FileIOError.make("Cannot read the size of the upload file", url: url)
            close(descriptor)
            throw error
        }
        length = Int64(status.st_size)
    }

    deinit { close(descriptor) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> BodySourceRead {
        while true {
            let count = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if count > 0 {
                offset += Int64(count)
                return .bytes(count)
            }
            if count == 0 {
                guard let length, offset < length else { return .end }
                // The file shrank while it was being sent: the declared Content-Length can't be met.
                return .failed(
                    HeraldError(
                        .fileIO,
                        "The upload file \(url.path) ended at byte \(offset) of \(length); it changed while sending."))
            }
            if errno == EINTR { continue }
            return .failed(FileIOError.make("Reading the upload file failed", url: url))
        }
    }

    func rewind(to offset: Int64) -> HeraldError? {
        guard offset >= 0 else { return HeraldError(.bodyStream, "Cannot seek the upload file to byte \(offset).") }
        self.offset = offset
        return nil
    }
}

/// A body pulled from a ``BodyStream``; rewinding asks for a fresh stream.
final class StreamBodySource: BodySource {
    private var stream: BodyStream
    private let renew: @Sendable () -> BodyStream?
    private var position: Int64 = 0

    init(_ stream: BodyStream, renew: @escaping @Sendable () -> BodyStream?) {
        self.stream = stream
        self.renew = renew
    }

    var length: Int64? { nil }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> BodySourceRead {
        do {
            let count = try stream.read(buffer)
            guard count > 0 else { return .end }
            guard count <= buffer.count else {
                return .failed(
                    HeraldError(
                        .bodyStream, "The body stream reported \(count) bytes read into a \(buffer.count)-byte buffer.")
                )
            }
            position += Int64(count)
            return .bytes(count)
        } catch {
            return .failed(HeraldError(.bodyStream, "The body stream failed: \(error)", underlying: error))
        }
    }

    func rewind(to offset: Int64) -> HeraldError? {
        if offset == position { return nil }
        guard let fresh = renew() else {
            return HeraldError(
                .bodyStream,
                "The request body must be sent again (after a redirect, an authentication challenge or a dropped "
                    + "connection), but a streamed body cannot be rewound and "
                    + "SessionManager.taskNeedNewBodyStream provided no new stream.")
        }
        stream = fresh
        position = 0
        return skip(offset)
    }

    /// Reads and drops `count` bytes of a fresh stream (curl only ever rewinds to 0 in practice).
    private func skip(_ count: Int64) -> HeraldError? {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)
        defer { scratch.deallocate() }
        while position < count {
            let slice = UnsafeMutableRawBufferPointer(
                rebasing: scratch[..<Int(min(Int64(scratch.count), count - position))])
            switch read(into: slice) {
            case .bytes: continue
            case .end: return HeraldError(.bodyStream, "The new body stream ended before byte \(count).")
            case .failed(let error): return error
            }
        }
        return nil
    }
}

/// A body of a known length pulled from streams that `open` makes: exactly `length` bytes are sent, and a
/// stream that ends early fails the transfer (the declared `Content-Length` can't be met).
final class SizedStreamBodySource: BodySource {
    private let open: @Sendable () throws(HeraldError) -> BodyStream
    private var stream: BodyStream
    private var position: Int64 = 0
    let length: Int64?

    init(length: Int64, open: @escaping @Sendable () throws(HeraldError) -> BodyStream) throws(HeraldError) {
        self.length = length
        self.open = open
        stream = try open()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> BodySourceRead {
        let total = length ?? 0
        let wanted = Int(min(Int64(buffer.count), total - position))
        guard wanted > 0 else { return .end }
        do {
            let count = try stream.read(UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]))
            guard count > 0, count <= wanted else {
                return .failed(
                    HeraldError(
                        .bodyStream,
                        count > 0
                            ? "The body stream reported \(count) bytes read into a \(wanted)-byte buffer."
                            : "The body ended at byte \(position) of the \(total) it declared."))
            }
            position += Int64(count)
            return .bytes(count)
        } catch let error as HeraldError {
            return .failed(error)
        } catch {
            return .failed(HeraldError(.bodyStream, "The body stream failed: \(error)", underlying: error))
        }
    }

    func rewind(to offset: Int64) -> HeraldError? {
        if offset == position { return nil }
        guard offset >= 0, offset <= length ?? 0 else {
            return HeraldError(.bodyStream, "Cannot seek the request body to byte \(offset).")
        }
        do {
            stream = try open()
        } catch {
            return error
        }
        position = 0
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)
        defer { scratch.deallocate() }
        while position < offset {
            let slice = UnsafeMutableRawBufferPointer(
                rebasing: scratch[..<Int(min(Int64(scratch.count), offset - position))])
            switch read(into: slice) {
            case .bytes: continue
            case .end: return HeraldError(.bodyStream, "The reopened body ended before byte \(offset).")
            case .failed(let error): return error
            }
        }
        return nil
    }
}

/// Builds ``HeraldError/Code/fileIO`` errors from `errno`.
enum FileIOError {
    /// `"<what> <path>: <strerror(errno)>"`, with the POSIX error as the underlying error. Read `errno`
    /// before anything else can change it.
    static func make(_ what: String, url: URL, code: Int32 = errno) -> HeraldError {
        let posix = POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        return HeraldError(.fileIO, "\(what) \(url.path): \(String(cString: strerror(code))).", underlying: posix)
    }
}
