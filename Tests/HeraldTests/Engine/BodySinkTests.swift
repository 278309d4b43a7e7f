import Foundation
import Synchronization
import Testing

@testable import Herald
@testable import HeraldEngine

@Suite("Body sinks")
struct BodySinkTests {
    private static func response(contentLength: Int?, status: Int = 200) -> ResponseHead {
        var headers = HeaderFields()
        if let contentLength { headers.add(name: "Content-Length", value: String(contentLength)) }
        return ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: status, headers: headers)
    }

    private static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: index &* 31) &+ seed }
            initialized = count
        }
    }

    private static func write(_ bytes: [UInt8], to sink: some BodySink, piece: Int) -> TransferError? {
        var start = 0
        while start < bytes.count {
            let end = min(start + piece, bytes.count)
            let failure = bytes[start..<end].withUnsafeBytes { sink.write($0) }
            if let failure { return failure }
            start = end
        }
        return nil
    }

    @Test("an upload file that grows while it is sent yields its declared size and no more; one that shrinks fails")
    func uploadFileChangingSize() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-upload-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data(repeating: 0x61, count: 10).write(to: url)
        let source = try FileBodySource(url: url)
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0x62, count: 10))  // the file grows to 20 bytes
        try handle.close()
        var buffer = [UInt8](repeating: 0, count: 64)
        func read() -> String {
            buffer.withUnsafeMutableBytes { bytes in
                switch source.read(into: bytes) {
                case .bytes(let count): "bytes \(count)"
                case .end: "end"
                case .failed(let error): "failed \(error.code)"
                default: "other"
                }
            }
        }
        #expect(read() == "bytes 10")
        #expect(buffer[0..<10].allSatisfy { $0 == 0x61 })
        #expect(read() == "end")

        #expect(truncate(url.path, 4) == 0)
        let shrunk = try FileBodySource(url: url)
        try Data(repeating: 0x61, count: 2).write(to: url)  // now 2 bytes of the 4 declared
        buffer.withUnsafeMutableBytes { bytes in
            if case .bytes(2) = shrunk.read(into: bytes) {} else { Issue.record("expected the 2 bytes left") }
            if case .failed(let error) = shrunk.read(into: bytes) {
                #expect(error.code == .fileIO)
            } else {
                Issue.record("a file that shrank while sending must fail")
            }
        }
    }

    @Test("the memory sink returns exactly the bytes written, for a declared length, none, and a wrong one")
    func memorySinkKeepsEveryByte() {
        // Declared and exact; none at all (doubling from the initial size); declared too small (a compressed
        // length, the decoded body being longer); declared too large (a server that sends less).
        let cases: [(declared: Int?, sent: Int)] = [
            (1024, 1024), (nil, 1024), (nil, 3 * MemoryBodySink.initialCapacity + 17), (1000, 70_000), (9000, 10),
            (nil, 0),
        ]
        for (index, (declared, sent)) in cases.enumerated() {
            let sink = MemoryBodySink()
            let body = Self.bytes(sent, seed: UInt8(index))
            let head = Self.response(contentLength: declared)
            let start = try? sink.begin(response: head, declaredLength: declared.map(Int64.init)).get()
            #expect(start == 0)
            #expect(Self.write(body, to: sink, piece: 4096) == nil)
            let result = sink.finish()
            #expect([UInt8](result) == body, "declared \(String(describing: declared)), sent \(sent)")
            #expect(sink.file == nil)
        }
    }

    @Test("a second response replaces what the first left, and a finished sink starts empty")
    func memorySinkStartsOverForEachResponse() {
        let sink = MemoryBodySink()
        _ = sink.begin(response: Self.response(contentLength: 5000, status: 401), declaredLength: 5000)
        #expect(Self.write(Self.bytes(5000, seed: 1), to: sink, piece: 1000) == nil)
        let final = Self.bytes(300, seed: 2)
        _ = sink.begin(response: Self.response(contentLength: 300), declaredLength: 300)
        #expect(Self.write(final, to: sink, piece: 7) == nil)
        #expect([UInt8](sink.finish()) == final)
        #expect(sink.finish().isEmpty)
    }

    @Test("the memory sink's body outlives the sink that collected it")
    func memoryBodyOutlivesSink() {
        var body = Data()
        let expected = Self.bytes(100_000, seed: 9)
        do {
            let sink = MemoryBodySink()
            _ = sink.begin(response: Self.response(contentLength: nil), declaredLength: nil)
            #expect(Self.write(expected, to: sink, piece: 16_384) == nil)
            body = sink.finish()
        }
        #expect([UInt8](body) == expected)
    }

    @Test(
        "large bodies keep every byte while their pages are mapped ahead: declared, growing, and after a first response"
    )
    func largeBodiesKeepEveryByte() {
        let large = MemoryBodySink.prefaultThreshold
        let cases: [(declared: Int?, sent: Int, piece: Int)] = [
            (5 * large / 2 + 5, 5 * large / 2 + 5, 16_384), (nil, 9 * large / 4 + 3, 65_536), (large, 2 * large, 4093),
            (9 * large, 3 * large / 2, 100_000),
        ]
        for (index, (declared, sent, piece)) in cases.enumerated() {
            let sink = MemoryBodySink()
            // A first, small response (a redirect's body) that the real one replaces.
            _ = sink.begin(response: Self.response(contentLength: 700, status: 302), declaredLength: 700)
            #expect(Self.write(Self.bytes(700, seed: 3), to: sink, piece: 700) == nil)
            let body = Self.bytes(sent, seed: UInt8(index))
            _ = sink.begin(response: Self.response(contentLength: declared), declaredLength: declared.map(Int64.init))
            #expect(Self.write(body, to: sink, piece: piece) == nil)
            #expect([UInt8](sink.finish()) == body, "declared \(String(describing: declared)), sent \(sent)")
        }
    }

    @Test("a large buffer's pages ahead of the bytes are mapped in one go, where the kernel can")
    func largeBufferIsMappedAhead() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        // Whether this kernel has MADV_POPULATE_WRITE (Linux 5.14); without it the sink falls back to
        // ordinary page faults and there is nothing to see.
        let probe = mmap(nil, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        let probeAddress = try #require(probe == MAP_FAILED ? nil : probe)
        let supported = madvise(probeAddress, page, MADV_POPULATE_WRITE) == 0
        munmap(probeAddress, page)

        let declared = 16 * MemoryBodySink.prefaultThreshold
        let sink = MemoryBodySink()
        _ = sink.begin(response: Self.response(contentLength: declared), declaredLength: Int64(declared))
        #expect(Self.write(Self.bytes(1000, seed: 5), to: sink, piece: 1000) == nil)
        let (start, mapped) = sink.mappedRegion
        let buffer = try #require(start)
        // Up to a chunk past the bytes, rounded down to a page boundary.
        #expect(mapped > 1000 + MemoryBodySink.prefaultChunk - page && mapped <= 1000 + MemoryBodySink.prefaultChunk)
        guard supported else { return }
        // The whole pages from the second to the last one the chunk covers are resident before any byte
        // was written to them.
        let first = (Int(bitPattern: buffer) + 1000 + page - 1) & ~(page - 1)
        let end = (Int(bitPattern: buffer) + mapped) & ~(page - 1)
        var residency = [UInt8](repeating: 0, count: (end - first) / page)
        #expect(mincore(UnsafeMutableRawPointer(bitPattern: first), end - first, &residency) == 0)
        #expect(residency.allSatisfy { $0 & 1 == 1 }, "\(residency.filter { $0 & 1 == 0 }.count) pages not resident")
        _ = sink.finish()
    }

    // MARK: - file sink

    /// The file's size and the bytes the file system holds for it (blocks reserved past its end included).
    private static func footprint(_ url: URL) -> (size: Int64, allocated: Int64) {
        var status = stat()
        guard stat(url.path, &status) == 0 else { return (-1, -1) }
        return (Int64(status.st_size), Int64(status.st_blocks) * 512)
    }

    /// Whether the sink reserves blocks on the file system under `directory` (ext4: the tests' scratch
    /// directory is on it on the project's machine, so the assertions that depend on it run there).
    private static func reservesBlocks(in directory: URL) -> Bool {
        let probe = directory.appendingPathComponent("probe")
        let descriptor = open(probe.path, O_WRONLY | O_CREAT, 0o600)
        defer {
            close(descriptor)
            unlink(probe.path)
        }
        return descriptor >= 0 && FileBodySink.reservesBlocks(forFileAt: descriptor)
    }

    @Test("a large file body's blocks are reserved ahead of the writes and the rest given back at close")
    func fileSinkReservesAheadAndGivesBack() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let url = scratch.url.appendingPathComponent("large.bin")
        let step = FileBodySink.reservationStep
        let sink = try FileBodySink(url: url, resumeOffset: 0)
        // Declared far longer than what arrives: a server that stops early, or lies.
        let declared = 5 * step
        #expect(
            try sink.begin(response: Self.response(contentLength: Int(declared)), declaredLength: declared).get() == 0)
        let first = Self.bytes(3 << 20, seed: 7)
        #expect(Self.write(first, to: sink, piece: 256 << 10) == nil)
        let during = Self.footprint(url)
        // The size is the bytes written, whatever is reserved: a resumed download starts where the bytes end.
        #expect(during.size == Int64(first.count))
        if Self.reservesBlocks(in: scratch.url) {
            #expect(during.allocated >= step, "\(during.allocated) bytes allocated after \(first.count) written")
        }
        _ = try sink.finish()
        let after = Self.footprint(url)
        #expect(after.size == Int64(first.count))
        // Given back: no more than the bytes and a few blocks of the file system's own.
        #expect(after.allocated <= Int64(first.count) + (64 << 10), "\(after.allocated) bytes allocated at close")
        #expect(sink.file?.byteCount == Int64(first.count))
        #expect(try Data(contentsOf: url) == Data(first))
    }

    @Test("a small file body reserves nothing; a resumed one reserves from where the file ends")
    func fileSinkSmallAndResumedBodies() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }

        // Half a MiB of unknown length: under the smallest reserved body, so nothing beyond the bytes.
        let small = scratch.url.appendingPathComponent("small.bin")
        let smallSink = try FileBodySink(url: small, resumeOffset: 0)
        _ = smallSink.begin(response: Self.response(contentLength: nil), declaredLength: nil)
        #expect(Self.write(Self.bytes(512 << 10, seed: 1), to: smallSink, piece: 64 << 10) == nil)
        #expect(Self.footprint(small).allocated <= (512 + 64) << 10)
        _ = try smallSink.finish()
        #expect(Self.footprint(small).size == 512 << 10)

        // Two MiB already on disk; the server continues with a range from there.
        let partial = scratch.url.appendingPathComponent("partial.bin")
        let head = Self.bytes(2 << 20, seed: 2)
        try Data(head).write(to: partial)
        let sink = try FileBodySink(url: partial, resumeOffset: Int64(head.count))
        var headers = HeaderFields()
        headers.add(
            name: "Content-Range",
            value: "bytes \(head.count)-\(head.count + (10 << 20) - 1)/\(head.count + (10 << 20))")
        let ranged = ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 206, headers: headers)
        #expect(try sink.begin(response: ranged, declaredLength: 10 << 20).get() == Int64(head.count))
        let tail = Self.bytes(1 << 20, seed: 3)
        #expect(Self.write(tail, to: sink, piece: 100_000) == nil)
        let during = Self.footprint(partial)
        #expect(during.size == Int64(head.count + tail.count))
        if Self.reservesBlocks(in: scratch.url) {
            #expect(during.allocated >= Int64(head.count) + FileBodySink.reservationStep)
        }
        _ = try sink.finish()
        let after = Self.footprint(partial)
        #expect(after.size == Int64(head.count + tail.count))
        #expect(after.allocated <= Int64(head.count + tail.count) + (64 << 10))
        #expect(try Data(contentsOf: partial) == Data(head + tail))
    }

    @Test("a file body never reserves past its declared end, and gives back what it did not fill")
    func fileSinkStopsAtTheDeclaredEnd() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let url = scratch.url.appendingPathComponent("declared.bin")
        let declared: Int64 = 2 << 20
        let sink = try FileBodySink(url: url, resumeOffset: 0)
        _ = sink.begin(response: Self.response(contentLength: Int(declared)), declaredLength: declared)
        let sent = Self.bytes(3 << 19, seed: 4)
        #expect(Self.write(sent, to: sink, piece: 128 << 10) == nil)
        let during = Self.footprint(url)
        #expect(during.size == Int64(sent.count))
        // Up to the declared 2 MiB, not a whole step of 8.
        #expect(during.allocated <= declared + (64 << 10), "\(during.allocated) bytes allocated")
        if Self.reservesBlocks(in: scratch.url) { #expect(during.allocated >= declared) }
        _ = try sink.finish()
        #expect(Self.footprint(url).allocated <= Int64(sent.count) + (64 << 10))
    }

    @Test(
        "a resumed file refuses a 206 that ends short of the whole, or names another version, and keeps its bytes",
        arguments: [
            ("bytes 100-199/1000", "\"v1\"", nil, false),
            ("bytes 100-999/1000", "\"v2\"", nil, false),
            ("bytes 100-999/1000", nil, "Tue, 03 Jan 2023 00:00:00 GMT", false),
            ("bytes 100-999/1000", "\"v1\"", nil, true),
            ("bytes 100-999/*", "\"v1\"", nil, true),
            ("bytes 100-999/1000", nil, nil, true),
            // An end past the length: refused, not an overflow computing the end of the range.
            ("bytes 100-9223372036854775807/1000", "\"v1\"", nil, false),
            ("bytes 100-x/1000", "\"v1\"", nil, false),
        ])
    func resumedFileChecksTheRange(contentRange: String, entityTag: String?, lastModified: String?, continues: Bool)
        throws
    {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let partial = scratch.url.appendingPathComponent("partial.bin")
        let head = Self.bytes(100, seed: 7)
        try Data(head).write(to: partial)
        let validator = lastModified == nil ? "\"v1\"" : "Mon, 02 Jan 2023 00:00:00 GMT"
        let sink = try FileBodySink(url: partial, resumeOffset: 100, validator: validator)
        var headers = HeaderFields()
        headers.add(name: "Content-Range", value: contentRange)
        if let entityTag { headers.add(name: "ETag", value: entityTag) }
        if let lastModified { headers.add(name: "Last-Modified", value: lastModified) }
        let ranged = ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 206, headers: headers)
        switch sink.begin(response: ranged, declaredLength: 900) {
        case .success(let offset):
            #expect(continues)
            #expect(offset == 100)
        case .failure(let error):
            #expect(!continues, "\(error.message)")
            #expect(error.code == .cannotResume)
        }
        // Refused, the response reached nothing: the file is as the resume data says, its validator kept.
        #expect(sink.file?.receivedBody == continues)
        _ = try sink.finish()
        #expect(try Data(contentsOf: partial) == Data(head))
    }

    @Test(
        "a 416 naming the resumed file's own length completes it as it is; one naming another length or version fails",
        arguments: [
            ("bytes */100", nil, true),
            ("bytes */100", "\"v1\"", true),
            ("bytes */100", "\"v2\"", false),
            ("bytes */150", nil, false),
            ("bytes */99", nil, false),
            ("bytes 0-99/100", nil, false),
            ("", nil, false),
        ])
    func resumedFileAlreadyComplete(contentRange: String, entityTag: String?, completes: Bool) throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let partial = scratch.url.appendingPathComponent("partial.bin")
        let head = Self.bytes(100, seed: 3)
        try Data(head).write(to: partial)
        let sink = try FileBodySink(url: partial, resumeOffset: 100, validator: "\"v1\"")
        var headers = HeaderFields()
        if !contentRange.isEmpty { headers.add(name: "Content-Range", value: contentRange) }
        if let entityTag { headers.add(name: "ETag", value: entityTag) }
        let refused = ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 416, headers: headers)
        switch sink.begin(response: refused, declaredLength: 19) {
        case .success(let offset):
            #expect(completes)
            #expect(offset == 100)
            // The 416's page goes nowhere.
            let page = Array("416 Range Not Satisfiable".utf8)
            #expect(page.withUnsafeBytes { sink.write($0) } == nil)
        case .failure(let error):
            #expect(!completes, "\(error.message)")
            #expect(error.code == .cannotResume)
        }
        #expect(sink.file?.wasAlreadyComplete == completes)
        #expect(sink.file?.byteCount == 100)
        _ = try sink.finish()
        #expect(try Data(contentsOf: partial) == Data(head))
    }

    @Test("a server's ETag without quotes is a tag, not a date: a 206 with that tag continues the file")
    func unquotedEntityTagContinues() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let partial = scratch.url.appendingPathComponent("partial.bin")
        try Data(Self.bytes(100, seed: 11)).write(to: partial)
        for (tag, continues) in [("abc123", true), ("abc124", false)] {
            let sink = try FileBodySink(url: partial, resumeOffset: 100, validator: "abc123")
            var headers = HeaderFields()
            headers.add(name: "Content-Range", value: "bytes 100-199/200")
            headers.add(name: "ETag", value: tag)
            headers.add(name: "Last-Modified", value: "Mon, 02 Jan 2023 00:00:00 GMT")
            let ranged = ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 206, headers: headers)
            switch sink.begin(response: ranged, declaredLength: 100) {
            case .success(let offset):
                #expect(continues, "\(tag)")
                #expect(offset == 100)
            case .failure(let error):
                #expect(!continues, "\(tag): \(error.message)")
                #expect(error.code == .cannotResume)
                // Another version: the file can never be continued, and its task deletes it.
                #expect(error.underlying is PartialFileOutdated)
            }
            _ = try sink.finish()
        }
    }

    @Test("a partial file cut short since its resume data was made is refused, never continued after a gap of zeros")
    func shrunkFileRefused() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let partial = scratch.url.appendingPathComponent("partial.bin")
        try Data(Self.bytes(100, seed: 13)).write(to: partial)
        let sink = try FileBodySink(url: partial, resumeOffset: 100, validator: "\"v1\"")
        // Cut short after the task was made, before its answer came.
        try #require(truncate(partial.path, 40) == 0)
        var headers = HeaderFields()
        headers.add(name: "Content-Range", value: "bytes 100-199/200")
        headers.add(name: "ETag", value: "\"v1\"")
        let ranged = ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 206, headers: headers)
        guard case .failure(let error) = sink.begin(response: ranged, declaredLength: 100) else {
            Issue.record("a file of 40 bytes was continued at byte 100")
            return
        }
        #expect(error.code == .cannotResume)
        #expect(error.message.contains("40 bytes"))
        #expect(error.underlying is PartialFileOutdated)
        #expect(sink.file?.receivedBody == false)
        _ = try sink.finish()
        #expect(try Data(contentsOf: partial).count == 40)
    }

    @Test("a 416 naming the resumed length completes a file that grew since at that length, not with the extra bytes")
    func grownFileCompletesAtItsLength() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let partial = scratch.url.appendingPathComponent("partial.bin")
        let head = Self.bytes(100, seed: 17)
        try Data(head + Self.bytes(30, seed: 19)).write(to: partial)
        let sink = try FileBodySink(url: partial, resumeOffset: 100, validator: "\"v1\"")
        var headers = HeaderFields()
        headers.add(name: "Content-Range", value: "bytes */100")
        let refused = ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 416, headers: headers)
        guard case .success = sink.begin(response: refused, declaredLength: 0) else {
            Issue.record("the 416 naming the file's length did not complete it")
            return
        }
        #expect(sink.file?.wasAlreadyComplete == true)
        _ = try sink.finish()
        #expect(try Data(contentsOf: partial) == Data(head))
    }

    @Test(
        "a resumed file refusing an error status says no body reached it, and keeps its bytes",
        arguments: [503, 412, 404])
    func resumedFileRefusesErrorStatus(status: Int) throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let partial = scratch.url.appendingPathComponent("partial.bin")
        let head = Self.bytes(100, seed: 5)
        try Data(head).write(to: partial)
        let sink = try FileBodySink(url: partial, resumeOffset: 100, validator: "\"v1\"")
        guard
            case .failure(let error) = sink.begin(
                response: Self.response(contentLength: 12, status: status), declaredLength: 12)
        else {
            Issue.record("status \(status) continued the file")
            return
        }
        #expect(error.code == .cannotResume)
        #expect(error.statusCode == status)
        #expect(sink.file?.receivedBody == false)
        #expect(sink.file?.byteCount == 100)
        _ = try sink.finish()
        #expect(try Data(contentsOf: partial) == Data(head))
    }

    @Test("a close that reports a failed write fails the file's finish with fileIO; the descriptor is released once")
    func failedCloseFailsTheFile() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let url = scratch.url.appendingPathComponent("body.bin")
        let closes = Mutex(0)
        let sink = try FileBodySink(url: url, resumeOffset: 0) { descriptor in
            closes.withLock { $0 += 1 }
            // The file is closed, as a real failing close leaves it, and the kernel reports a lost write.
            _ = close(descriptor)
            errno = EIO
            return -1
        }
        #expect(throws: Never.self) {
            try sink.begin(response: Self.response(contentLength: 4), declaredLength: 4).get()
        }
        #expect(Array("body".utf8).withUnsafeBytes { sink.write($0) } == nil)
        let failure = #expect(throws: TransferError.self) { try sink.finish() }
        #expect(failure?.code == .fileIO)
        #expect(failure?.message.contains("Closing the download file failed") == true)
        // Nothing continues from bytes the close says may be lost: no resume data, no retry from them.
        #expect(sink.file?.mayHaveLostWrites == true)
        // Asked again (the deinit does), nothing is closed twice.
        #expect(throws: Never.self) { try sink.finish() }
        #expect(closes.withLock { $0 } == 1)
    }

    @Test("Content-Range parses to its start, end and complete length; a malformed one to nothing")
    func contentRangeParsing() {
        #expect(
            ContentRange.parse("bytes 0-9/10").map { [$0.start, $0.end, $0.completeLength ?? -1] } == [0, 9, 10])
        #expect(
            ContentRange.parse(" bytes 5-9/* ").map { [$0.start, $0.end, $0.completeLength ?? -1] } == [
                5, 9, -1,
            ])
        for malformed in [
            "bytes 9-5/10", "bytes 0-9", "bytes x-9/10", "items 0-9/10", "bytes 0-9/ten", "bytes 0-10/10",
            "bytes 5-9223372036854775807/1", "bytes 0-9223372036854775807/*", "bytes 5-9223372036854775807/*",
        ] {
            #expect(ContentRange.parse(malformed) == nil, "\(malformed)")
        }
    }

    @Test("a FIFO where a partial download file should be is refused at once, not waited on for a reader")
    func fifoAtPartialFileIsRefused() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let path = scratch.url.appendingPathComponent("download-1.part")
        try #require(mkfifo(path.path, 0o600) == 0)
        let opened = OneShot<Bool>()
        // On a thread of its own: before, the open blocked until something read the FIFO.
        Thread {
            let refused: Bool
            do throws(TransferError) {
                close(try PrivateFile.openForWriting(path))
                refused = false
            } catch {
                refused = error.code == .fileIO
            }
            opened.send(refused)
        }.start()
        #expect(try await opened.value(timeout: .seconds(10)))
    }

    @Test("a 206 whose range ends at Int64's last byte, with an unknown total, is never counted past it")
    func rangeEndingAtInt64Max() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        func ranged(_ range: String, contentLength: Int?) -> ResponseHead {
            var head = Self.response(contentLength: contentLength, status: 206)
            head.headers.add(name: "Content-Range", value: range)
            return head
        }
        // A fresh download, with a length and without: the range can't be read, so the body is the file's whole.
        for contentLength in [5, nil] {
            let sink = try FileBodySink(
                url: scratch.url.appendingPathComponent("fresh-\(contentLength ?? -1)"), resumeOffset: 0)
            let head = ranged("bytes 0-9223372036854775807/*", contentLength: contentLength)
            #expect(try sink.begin(response: head, declaredLength: contentLength.map(Int64.init)).get() == 0)
            #expect(Self.write(Self.bytes(5, seed: 1), to: sink, piece: 5) == nil)
            _ = try sink.finish()
            #expect(Self.footprint(scratch.url.appendingPathComponent("fresh-\(contentLength ?? -1)")).size == 5)
        }
        // A resumed one: not a range it can continue.
        let partial = scratch.url.appendingPathComponent("partial")
        try Data(Self.bytes(5, seed: 2)).write(to: partial)
        let sink = try FileBodySink(url: partial, resumeOffset: 5)
        let refused = sink.begin(response: ranged("bytes 5-9223372036854775807/*", contentLength: 5), declaredLength: 5)
        #expect(throws: TransferError.self) { try refused.get() }
    }

    @Test("the memory sink trusts a declared length only up to its largest starting buffer")
    func memorySinkCapsTheDeclaredLength() {
        let sink = MemoryBodySink()
        let lie: Int64 = 1 << 40
        _ = sink.begin(response: Self.response(contentLength: nil), declaredLength: lie)
        let body = Self.bytes(1000, seed: 6)
        // A buffer of the declared terabyte could not be made; one of at most 64 MiB can.
        #expect(Self.write(body, to: sink, piece: 1000) == nil)
        #expect([UInt8](sink.finish()) == body)
    }
}
