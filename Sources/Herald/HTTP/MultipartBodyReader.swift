import Foundation
import HeraldNotifications
import HeraldEngine

/// Where some bytes of a multipart body come from.
enum Segment: Sendable {
    /// Bytes in memory: framing, headers, data parts.
    case bytes(Data)
    /// A file of the size it had when appended.
    case file(URL, length: Int64)
    /// A stream of a declared length, made fresh for each send.
    case stream(length: Int64, make: @Sendable () -> BodyStream)

    var length: Int64 {
        switch self {
        case .bytes(let data): Int64(data.count)
        case .file(_, let length), .stream(let length, _): length
        }
    }
}

/// Reads the segments of one send of a multipart body in order, filling each buffer across segment
/// boundaries. At most one file is open at a time, and at most one buffer's worth of bytes is held.
///
/// Called from the body's ``BodyStream``, on the upload task's hook queue, one call at a time; the lock only
/// makes that explicit to the compiler.
final class MultipartBodyReader: Sendable {
    private struct Cursor {
        var index = 0
        /// Bytes of the current segment already read.
        var offset: Int64 = 0
        /// The open file of a `.file` segment.
        var descriptor: Int32 = -1
        /// The stream of a `.stream` segment.
        var stream: BodyStream?
    }

    private let segments: [Segment]
    private let cursor = Locked(Cursor())

    init(segments: [Segment]) {
        self.segments = segments
    }

    deinit {
        cursor.withLock { if $0.descriptor >= 0 { close($0.descriptor) } }
    }

    /// Copies the next bytes into `buffer`; returns 0 at the end of the body.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try cursor.withLock { cursor in
            var written = 0
            while written < buffer.count, cursor.index < segments.count {
                let target = UnsafeMutableRawBufferPointer(rebasing: buffer[written...])
                let count = try read(segments[cursor.index], into: target, cursor: &cursor)
                if count == 0 {
                    if cursor.descriptor >= 0 { close(cursor.descriptor) }
                    cursor = Cursor(index: cursor.index + 1)
                } else {
                    written += count
                    cursor.offset += Int64(count)
                }
            }
            return written
        }
    }

    /// Reads from one segment; 0 when the segment is done.
    private func read(_ segment: Segment, into buffer: UnsafeMutableRawBufferPointer, cursor: inout Cursor) throws
        -> Int
    {
        let wanted = Int(min(Int64(buffer.count), segment.length - cursor.offset))
        guard wanted > 0 else {
            try checkEnd(of: segment, cursor: &cursor)
            return 0
        }
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted])
        switch segment {
        case .bytes(let data):
            let start = data.startIndex + Int(cursor.offset)
            data.copyBytes(to: target.bindMemory(to: UInt8.self), from: start..<(start + wanted))
            return wanted
        case .file(let url, let length):
            if cursor.descriptor < 0 { cursor.descriptor = try Self.open(url, length: length) }
            return try Self.read(cursor.descriptor, into: target, at: cursor.offset, url: url, length: length)
        case .stream(let length, let make):
            if cursor.stream == nil { cursor.stream = make() }
            let count = try cursor.stream?.read(target) ?? 0
            guard count > 0, count <= wanted else {
                throw HeraldError(
                    .bodyStream,
                    count > 0
                        ? "A multipart stream part reported \(count) bytes read into a \(wanted)-byte buffer."
                        : count < 0
                            ? "A multipart stream part's read returned a negative count (\(count))."
                            : "A multipart stream part ended at byte \(cursor.offset) of the \(length) it declared.")
            }
            return count
        }
    }

    /// A segment's declared bytes are all read: a file must still have that size, and a stream must end there.
    /// A file that grew, or a stream with more to give, would otherwise be sent cut short without a word (the
    /// declared length is what the server is told); the task fails instead. A file or stream of no bytes is
    /// checked here alone, never having been read.
    private func checkEnd(of segment: Segment, cursor: inout Cursor) throws {
        switch segment {
        case .bytes:
            return
        case .file(let url, let length):
            if cursor.descriptor < 0 {
                cursor.descriptor = try Self.open(url, length: length)
                return
            }
            var status = stat()
            guard fstat(cursor.descriptor, &status) == 0 else {
                throw HeraldError.fileFailure("Cannot read the size of the multipart file", url: url)
            }
            guard Int64(status.st_size) == length else {
                throw HeraldError(
                    .fileIO,
                    "The multipart file \(url.path) has \(status.st_size) bytes, not the \(length) it had when it was "
                        + "appended; it changed while it was sent.")
            }
        case .stream(let length, let make):
            if cursor.stream == nil { cursor.stream = make() }
            var byte: UInt8 = 0
            let count = try withUnsafeMutableBytes(of: &byte) { try cursor.stream?.read($0) ?? 0 }
            guard count == 0 else {
                throw HeraldError(
                    .bodyStream,
                    count > 0
                        ? "A multipart stream part has more than the \(length) bytes it declared."
                        : "A multipart stream part's read returned a negative count (\(count)).")
            }
        }
    }

    private static func open(_ url: URL, length: Int64) throws(HeraldError) -> Int32 {
        // Without blocking, and only a regular file: a FIFO put in the file's place since the form was made would
        // block this open, or (a device too) give a body of another length.
        let descriptor = Foundation.open(url.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { throw HeraldError.fileFailure("Cannot open the multipart file", url: url) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let error = HeraldError.fileFailure("Cannot read the size of the multipart file", url: url)
            close(descriptor)
            throw error
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw HeraldError(.fileIO, "The multipart file \(url.path) is no longer a regular file.", url: url)
        }
        guard Int64(status.st_size) == length else {
            close(descriptor)
            throw HeraldError(
                .fileIO,
                "The multipart file \(url.path) has \(status.st_size) bytes, not the \(length) it had when it was "
                    + "appended; it changed before it was sent.")
        }
        return descriptor
    }

    private static func read(
        _ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, url: URL, length: Int64
    ) throws(HeraldError) -> Int {
        while true {
            let count = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if count > 0 { return count }
            if count == 0 {
                throw HeraldError(
                    .fileIO,
                    "The multipart file \(url.path) ended at byte \(offset) of \(length); it changed while sending.")
            }
            if errno == EINTR { continue }
            throw HeraldError.fileFailure("Reading the multipart file failed", url: url)
        }
    }
}
