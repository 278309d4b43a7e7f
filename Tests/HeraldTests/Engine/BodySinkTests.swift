import Foundation
import Testing

@testable import Herald

@Suite("Body sinks")
struct BodySinkTests {
    private static func response(contentLength: Int?, status: Int = 200) -> HTTPResponse {
        var headers = HTTPHeaders()
        if let contentLength { headers.add(name: "Content-Length", value: String(contentLength)) }
        return HTTPResponse(url: URL(string: "http://127.0.0.1/")!, statusCode: status, headers: headers)
    }

    private static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) &+ seed }
    }

    private static func write(_ bytes: [UInt8], to sink: MemoryBodySink, piece: Int) -> HeraldError? {
        var start = 0
        while start < bytes.count {
            let end = min(start + piece, bytes.count)
            let failure = bytes[start..<end].withUnsafeBytes { sink.write($0) }
            if let failure { return failure }
            start = end
        }
        return nil
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
}
