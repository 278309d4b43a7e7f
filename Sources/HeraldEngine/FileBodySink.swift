import CCurl
import Foundation

/// Writes the body to a file with `pwrite` as it arrives: small sequential writes on the loop thread,
/// constant memory for any size.
///
/// On ext4, a large body's blocks are reserved ahead of the writes, a few MiB at a time and never past the
/// declared length, with `fallocate(FALLOC_FL_KEEP_SIZE)`: the file's size still grows only with the bytes
/// written (a resumed download still starts where the bytes end), and the kernel's page-cache writes into
/// reserved blocks are cheaper than allocating as they go (about a third less system time for 256 MiB in
/// 256 KiB writes). Whatever is reserved beyond the last byte (a body of unknown length, one that ended
/// early) is given back when the file closes, by truncating the file to its own size, which on ext4 only
/// frees those blocks. Other file systems are written as they come: ext4 is where the gain was measured,
/// and elsewhere the give-back could cost more (on XFS, truncating to the same size waits for the file's
/// dirty pages to reach the disk). Reserving is only a speed-up: where it fails, or the disk is too full for a
/// step, the sink stops reserving and the writes themselves report any real shortage.
final class FileBodySink: BodySink {
    /// How far ahead of the bytes each reservation reaches, at least.
    static let reservationStep: Int64 = 8 << 20
    /// A body reserves nothing until it is declared or seen to be at least this long: for a small file the
    /// extra system calls would cost more than they save.
    static let smallestReservedBody: Int64 = 1 << 20

    /// Whether the sink reserves blocks for the file open at `descriptor`: whether its file system is ext4.
    static func reservesBlocks(forFileAt descriptor: Int32) -> Bool { herald_file_is_on_ext4(descriptor) }

    private let url: URL
    private var descriptor: Int32
    private let resumeOffset: Int64
    private var position: Int64
    private var didBegin = false
    /// Where this response's body starts in the file.
    private var bodyStart: Int64 = 0
    /// Where the body is declared to end, if the response says.
    private var declaredEnd: Int64?
    /// Where a `206`'s body must end, from its `Content-Range`: libcurl counts only the `Content-Length`, and a
    /// range answer that ends short of its own range would otherwise pass for the whole part.
    private var rangeEnd: Int64?
    /// The end of the blocks reserved so far; `bodyStart` while nothing is.
    private var reservedEnd: Int64 = 0
    /// Whether to reserve: unknown until the first reservation, false once one fails.
    private var reserves: Bool?
    /// Whether blocks past the last byte may be reserved, to be given back at close.
    private var mayHoldBlocksPastEnd = false

    /// The `If-Range` validator a continuing request carries: a `206` naming another version is refused.
    private let validator: String?
    /// Whether a `416` said the file is already the whole representation: the body that follows is dropped.
    private var isAlreadyComplete = false
    /// Whether the file holds a range of the representation that starts elsewhere than at its first byte (a `206`
    /// to a request that asked for the whole, or for a range of the caller's): its byte count is no prefix.
    private var holdsPartFromElsewhere = false

    /// Closes a descriptor, as `close(2)` does; replaced only by tests, to see a failed close.
    private let closeFile: (Int32) -> Int32
    /// Whether the close reported a failed write (see `DownloadedFile.mayHaveLostWrites`).
    private var closeFailed = false

    init(
        url: URL, resumeOffset: Int64, validator: String? = nil, closeFile: @escaping (Int32) -> Int32 = { close($0) }
    ) throws(TransferError) {
        self.url = url
        self.resumeOffset = resumeOffset
        self.validator = validator
        self.position = resumeOffset
        self.closeFile = closeFile
        descriptor = try PrivateFile.openForWriting(url)
    }

    deinit { _ = closeDescriptor() }

    func begin(response: ResponseHead, declaredLength: Int64?) -> Result<Int64, TransferError> {
        didBegin = true
        rangeEnd = nil
        holdsPartFromElsewhere = false
        if response.statusCode == 206, let refusal = Self.lengthDisagreesWithRange(response) {
            // Nothing of it reaches the file, which stays as it was.
            didBegin = false
            return .failure(refusal)
        }
        if resumeOffset > 0, response.statusCode == 206 {
            // A range answer continues the partial file only if it is a valid range (its end within its length)
            // starting exactly where the file ends. Refused, nothing of it reaches the file.
            guard let range = ContentRange.parse(response.headers["Content-Range"]), range.start == resumeOffset else {
                didBegin = false
                return .failure(
                    TransferError(
                        .cannotResume,
                        "The server answered the resumed download without a valid range starting at byte "
                            + "\(resumeOffset) (Content-Range: \(response.headers["Content-Range"] ?? "none")).",
                        url: response.url))
            }
            if let length = range.completeLength, range.end + 1 != length {
                // An open-ended range asked for the rest: a shorter part completed would pass for the whole file.
                // Nothing of it reaches the file, which stays what the resume data says it is.
                didBegin = false
                return .failure(
                    TransferError(
                        .cannotResume,
                        "The server answered the resumed download with bytes \(range.start)-\(range.end) of "
                            + "\(length), not the rest of the file.", url: response.url))
            }
            if let refusal = Self.otherVersion(response, validator: validator) {
                // The file keeps its version, and the resume data its validator, not this response's: but the
                // resource has changed, so neither can ever be continued.
                didBegin = false
                return .failure(
                    TransferError(.cannotResume, refusal, underlying: PartialFileOutdated(), url: response.url))
            }
            if let refusal = shrunk() {
                didBegin = false
                return .failure(refusal)
            }
            guard cut(to: resumeOffset) else {
                // The file is as it was: no body of this answer's reached it.
                didBegin = false
                return .failure(FileIOError.make("Cannot truncate the partial download file", url: url))
            }
            position = resumeOffset
            startBody(declaredLength: declaredLength)
            rangeEnd = range.end + 1
            return .success(resumeOffset)
        }
        if resumeOffset > 0, response.statusCode == 416,
            ContentRange.unsatisfiedLength(response.headers["Content-Range"]) == resumeOffset,
            Self.otherVersion(response, validator: validator) == nil
        {
            // The file already holds the whole representation: the rest asked for starts at its end (a transfer
            // that lost only its last chunk's terminator, say). libcurl and wget take such an answer as the
            // download's end; its body, an error page, never reaches the file.
            if let refusal = shrunk() {
                didBegin = false
                return .failure(refusal)
            }
            // Bytes past the length (written to the file since the resume data was made) are not the file's.
            guard cut(to: resumeOffset) else {
                // The file is as it was: no body of this answer's reached it.
                didBegin = false
                return .failure(FileIOError.make("Cannot truncate the partial download file", url: url))
            }
            isAlreadyComplete = true
            position = resumeOffset
            return .success(resumeOffset)
        }
        if resumeOffset > 0, !(200..<300).contains(response.statusCode) {
            // Not a representation at all (416, 412, 5xx…): never overwrite the partial file with an error page.
            didBegin = false
            return .failure(
                TransferError(
                    .cannotResume, "The server refused to resume the download (status \(response.statusCode)).",
                    url: response.url, statusCode: response.statusCode))
        }
        // A whole representation (the server ignored the range, or the resource changed and If-Range
        // made it send all of it): restart the file from zero, never splice two versions.
        guard cut(to: 0) else {
            // The file is as it was, its old bytes included: resume data must not take them for this answer's.
            didBegin = false
            return .failure(FileIOError.make("Cannot truncate the download file", url: url))
        }
        position = 0
        startBody(declaredLength: declaredLength)
        if response.statusCode == 206, let range = ContentRange.parse(response.headers["Content-Range"]) {
            // The part the caller's own `Range` asked for, at the file's start.
            rangeEnd = range.end - range.start + 1
            holdsPartFromElsewhere = range.start != 0
        }
        return .success(0)
    }

    /// Why a `206`'s `Content-Length` can't be the body of its `Content-Range` (RFC 9110 §14.4: the length of
    /// a single part is its range's), or `nil`. Without either, or with a range the sink doesn't read, there is
    /// nothing to compare.
    private static func lengthDisagreesWithRange(_ response: ResponseHead) -> TransferError? {
        guard let range = ContentRange.parse(response.headers["Content-Range"]),
            let length = response.headers["Content-Length"].flatMap(ResponseHead.contentLength(from:)),
            length != range.end - range.start + 1
        else { return nil }
        return TransferError(
            .badServerResponse,
            "The server's range answer declares \(length) body bytes for bytes \(range.start)-\(range.end) "
                + "(\(range.end - range.start + 1) bytes).", url: response.url)
    }

    private func startBody(declaredLength: Int64?) {
        bodyStart = position
        reservedEnd = position
        // A declared end beyond Int64's range is no end at all (the transfer fails on it before any byte).
        declaredEnd = declaredLength.flatMap { length in
            let (end, overflow) = position.addingReportingOverflow(length)
            return overflow ? nil : end
        }
    }

    /// Reserves the blocks from the bytes (or the reservation's end, if further) to a step beyond, and to
    /// `end` at least; no further than the declared end while the body is within it.
    private func reserve(through end: Int64) {
        if reservedEnd == bodyStart, end - bodyStart < Self.smallestReservedBody,
            (declaredEnd ?? 0) - bodyStart < Self.smallestReservedBody
        {
            return
        }
        if reserves == nil { reserves = Self.reservesBlocks(forFileAt: descriptor) }
        guard reserves == true else { return }
        let start = max(reservedEnd, position)
        var next = start + Self.reservationStep
        if let declaredEnd, declaredEnd >= end { next = min(next, declaredEnd) }
        next = max(next, end)
        reservedEnd = next
        if herald_reserve_file_blocks(descriptor, off_t(start), off_t(next - start)) == 0 {
            mayHoldBlocksPastEnd = true
        } else {
            reserves = false
            // A step the disk could not hold whole may have been reserved in part.
            if errno == ENOSPC { mayHoldBlocksPastEnd = true }
        }
    }

    /// Why the file can't be continued at `resumeOffset`: it holds fewer bytes than the resume data counts (it
    /// was cut short, or removed and made again, since), so the rest would follow a gap `ftruncate` fills with
    /// zeros; `nil` when it holds them all.
    private func shrunk() -> TransferError? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            return FileIOError.make("Cannot inspect the partial download file", url: url)
        }
        guard Int64(status.st_size) < resumeOffset else { return nil }
        return TransferError(
            .cannotResume,
            "The partial download file holds \(status.st_size) bytes, fewer than the \(resumeOffset) its resume data "
                + "counts: it was cut short since, and can't be continued.", underlying: PartialFileOutdated(),
            url: url)
    }

    /// Makes the file `length` bytes long; whether that worked. A file already that long is left alone:
    /// on ext4, truncating a file to zero marks it so that closing it starts writing all its pages out
    /// (the `auto_da_alloc` safeguard for programs that rewrite a file in place), which would make every
    /// fresh download wait for the disk at its end.
    private func cut(to length: Int64) -> Bool {
        var status = stat()
        if fstat(descriptor, &status) == 0, Int64(status.st_size) == length { return true }
        return ftruncate(descriptor, off_t(length)) == 0
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> TransferError? {
        if isAlreadyComplete { return nil }
        if let rangeEnd, position + Int64(bytes.count) > rangeEnd {
            // Bytes past the range would land on what comes after it in the file: none of them is written.
            return TransferError(
                .badServerResponse,
                "The server sent more than the bytes its range answer names (its range ends at byte \(rangeEnd - 1)).",
                url: url)
        }
        if reserves != false, position + Int64(bytes.count) > reservedEnd {
            reserve(through: position + Int64(bytes.count))
        }
        var written = 0
        while written < bytes.count {
            let count = pwrite(
                descriptor, bytes.baseAddress.map { $0 + written }, bytes.count - written, off_t(position))
            if count < 0 {
                if errno == EINTR { continue }
                return FileIOError.make("Writing the download file failed", url: url)
            }
            // No byte written and no error (a FUSE or network file system can answer so): trying again would
            // spin on the loop thread for ever.
            if count == 0 { return FileIOError.make("Writing the download file wrote nothing", url: url, code: EIO) }
            written += count
            position += Int64(count)
        }
        return nil
    }

    var shortfall: TransferError? {
        guard let rangeEnd, !isAlreadyComplete, position < rangeEnd else { return nil }
        return TransferError(
            .networkConnectionLost,
            "The range answer ended \(rangeEnd - position) bytes short of its range (at byte \(position), not "
                + "\(rangeEnd)).", url: url)
    }

    func finish() throws(TransferError) -> Data {
        // A write the kernel took into its cache and could not complete afterwards (a network or removable file
        // system's `EIO`, a quota's `EDQUOT`) is reported by the close: the file would be taken as whole when it
        // isn't.
        if let failure = closeDescriptor() { throw failure }
        return Data()
    }

    var file: DownloadedFile? {
        DownloadedFile(
            url: url, byteCount: position, receivedBody: didBegin, wasAlreadyComplete: isAlreadyComplete,
            holdsPartFromElsewhere: holdsPartFromElsewhere, mayHaveLostWrites: closeFailed)
    }

    /// Closes the file, once; why the close failed, if it did. The descriptor is released either way (Linux
    /// never leaves it open after a failed `close`, and trying again could close another thread's new one).
    private func closeDescriptor() -> TransferError? {
        guard descriptor >= 0 else { return nil }
        // Gives back the blocks reserved beyond the last byte: on ext4, truncating a file to its own size
        // frees them and nothing else (at zero it arms the flush-on-close safeguard described at `cut`,
        // which then finds nothing written to flush).
        if mayHoldBlocksPastEnd, reservedEnd > position { _ = ftruncate(descriptor, off_t(position)) }
        let status = closeFile(descriptor)
        descriptor = -1
        // `EINTR` leaves the file closed on Linux, with nothing lost.
        guard status != 0, errno != EINTR else { return nil }
        let failure = FileIOError.make("Closing the download file failed", url: url)
        closeFailed = true
        return failure
    }

    /// Why a `206` continuing a file is of another version than the file's, or `nil`: its `ETag` is not the
    /// strong tag `validator` names, or, for a date validator, its `Last-Modified` is another date. A server
    /// that ignores `If-Range` answers a range of the changed resource, which the file must not take.
    ///
    /// A response whose `ETag` or `Last-Modified` is the validator as written is of the file's version: a
    /// server's tag without quotes (`ETag: abc123`, common though not RFC 9110's syntax) is a tag too, not a
    /// date, and a resume it answers is taken.
    static func otherVersion(_ response: ResponseHead, validator: String?) -> String? {
        guard let validator else { return nil }
        let tag = response.headers["ETag"]
        if tag == validator || response.headers["Last-Modified"] == validator { return nil }
        // The field the validator stands for: the `ETag` for a quoted or weak tag, or when the response's own tag
        // is unquoted as the validator may be; else `Last-Modified`.
        let isTag = validator.hasPrefix("\"") || validator.hasPrefix("W/")
        let unquotedTags = tag.map { !$0.hasPrefix("\"") && !$0.hasPrefix("W/") } ?? false
        if isTag || unquotedTags {
            guard let tag = response.headers["ETag"], tag != validator else { return nil }
            return "The server answered the resumed download with another version of the file (ETag \(tag), "
                + "not \(validator))."
        }
        guard let modified = response.headers["Last-Modified"], modified != validator else { return nil }
        return "The server answered the resumed download with another version of the file (Last-Modified "
            + "\(modified), not \(validator))."
    }
}

/// The `Content-Range` field of a `206` (RFC 9110 §14.4), as a resumed download checks it: package-level so that
/// the fuzz target reaches it.
package enum ContentRange {
    /// What follows `bytes ` in a `Content-Range` value, trimmed; `nil` for another unit or none.
    private static func byteRangeSpec(_ value: String?) -> Substring? {
        guard let value else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        return Substring(trimmed.dropFirst("bytes ".count).trimmingCharacters(in: .whitespaces))
    }

    /// The first byte of `Content-Range: bytes a-b/n`.
    package static func start(_ value: String?) -> Int64? {
        guard let spec = byteRangeSpec(value), let dash = spec.firstIndex(of: "-") else { return nil }
        return Int64(spec[..<dash])
    }

    /// `Content-Range: bytes a-b/n` as numbers, `n` `nil` when it is `*` (unknown); `nil` when malformed, and
    /// when the range is invalid (RFC 9110 §14.4): `b` before `a`, or `n` not after `b`. So `0 <= a <= b < n`,
    /// and `b` is below `Int64.max` whatever `n` is, so that `b + 1` and the part's length `b - a + 1` are
    /// numbers (a server's `bytes 0-9223372036854775807/*` would make them overflow).
    package static func parse(_ value: String?) -> (start: Int64, end: Int64, completeLength: Int64?)? {
        guard let spec = byteRangeSpec(value), let dash = spec.firstIndex(of: "-"), let start = Int64(spec[..<dash]),
            let slash = spec.firstIndex(of: "/"), dash < slash,
            let end = Int64(spec[spec.index(after: dash)..<slash].trimmingCharacters(in: .whitespaces)), end >= start,
            end < .max
        else { return nil }
        let total = spec[spec.index(after: slash)...].trimmingCharacters(in: .whitespaces)
        if total == "*" { return (start, end, nil) }
        guard let length = Int64(total), end < length else { return nil }
        return (start, end, length)
    }

    /// The complete length of `Content-Range: bytes */n`, a `416`'s (RFC 9110 §14.4); `nil` for any other form.
    package static func unsatisfiedLength(_ value: String?) -> Int64? {
        guard let spec = byteRangeSpec(value), spec.hasPrefix("*/"), let length = Int64(spec.dropFirst(2)),
            length >= 0
        else { return nil }
        return length
    }
}

/// Why a resumed download's partial file can never be continued: the server's range answer is of another version
/// of the resource, or the file was cut short since its resume data was made. The underlying error of such a
/// `cannotResume`, so that the task deletes the file rather than keep resume data that would be refused again.
package struct PartialFileOutdated: Error, Sendable {
    package init() {}
}
