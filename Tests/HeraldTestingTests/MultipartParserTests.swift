import Foundation
import MultipartKit
import Testing

@testable import HeraldTesting

/// `/multipart`'s streaming parser against multipart-kit's, on bodies built to trip a delimiter search:
/// CRs, CRLFs, `--` and cut-off boundaries inside part bodies, and chunks split at every kind of place.
@Suite("Multipart stream parser")
struct MultipartParserTests {
    struct Part: Equatable {
        var headers: [String] = []
        var body: [UInt8] = []
    }

    static let boundary = "Herald-Boundary-0123abcd"

    /// A random body: random bytes salted with pieces of the delimiter.
    static func randomBody(using generator: inout SeededGenerator) -> [UInt8] {
        let pieces: [[UInt8]] = [
            [0x0D], [0x0D, 0x0A], Array("\r\n-".utf8), Array("\r\n--".utf8),
            Array("\r\n--\(boundary.dropLast())".utf8), Array("--\(boundary)".utf8), Array("\r\r\n--Herald".utf8),
        ]
        var body: [UInt8] = []
        for _ in 0..<Int.random(in: 0...40, using: &generator) {
            if Bool.random(using: &generator) {
                body += pieces.randomElement(using: &generator)!
            } else {
                body += (0..<Int.random(in: 0...200, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            }
        }
        return body
    }

    static func randomForm(using generator: inout SeededGenerator) -> (bytes: [UInt8], parts: [Part]) {
        var parts: [Part] = []
        var bytes = Array("this preamble is ignored\r\n".utf8)
        for index in 0..<Int.random(in: 1...5, using: &generator) {
            var part = Part(headers: ["Content-Disposition: form-data; name=\"p\(index)\""])
            if Bool.random(using: &generator) { part.headers.append("Content-Type: application/octet-stream") }
            // A sender picks a boundary that no body contains; the pieces can join into one, so skip those.
            let delimiter = Array("\r\n--\(boundary)".utf8)
            repeat {
                part.body = randomBody(using: &generator)
            } while contains(Array("\r\n".utf8) + part.body, delimiter)
            bytes += Array("\(index == 0 ? "" : "\r\n")--\(boundary)\r\n".utf8)
            for header in part.headers { bytes += Array("\(header)\r\n".utf8) }
            bytes += Array("\r\n".utf8) + part.body
            parts.append(part)
        }
        bytes += Array("\r\n--\(boundary)--\r\nan epilogue, ignored too".utf8)
        return (bytes, parts)
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }

    /// Splits `bytes` into chunks of random sizes.
    static func chunks(of bytes: [UInt8], using generator: inout SeededGenerator) -> [[UInt8]] {
        var chunks: [[UInt8]] = []
        var index = 0
        while index < bytes.count {
            let size = Int.random(in: 1...max(1, Int.random(in: 1...300, using: &generator)), using: &generator)
            chunks.append(Array(bytes[index..<min(bytes.count, index + size)]))
            index += size
        }
        return chunks
    }

    static func parseWithHerald(_ chunks: [[UInt8]]) throws -> (parts: [Part], complete: Bool) {
        let parser = MultipartStreamParser(boundary: boundary)
        var parts: [Part] = [Part()]
        parser.onHeader = { name, value in parts[parts.count - 1].headers.append("\(name): \(value)") }
        parser.onBody = { bytes in parts[parts.count - 1].body += bytes }
        parser.onPartComplete = { parts.append(Part()) }
        for chunk in chunks { try chunk.withUnsafeBytes { try parser.consume($0) } }
        return (Array(parts.dropLast()), parser.isComplete)
    }

    static func parseWithMultipartKit(_ chunks: [[UInt8]]) throws -> [Part] {
        let parser = MultipartParser(boundary: boundary)
        var parts: [Part] = [Part()]
        parser.onHeader = { name, value in parts[parts.count - 1].headers.append("\(name): \(value)") }
        parser.onBody = { buffer in parts[parts.count - 1].body += buffer.readableBytesView }
        parser.onPartComplete = { parts.append(Part()) }
        for chunk in chunks { try parser.execute(chunk) }
        return Array(parts.dropLast())
    }

    @Test("500 random forms in random chunks parse to the parts sent, as multipart-kit parses them")
    func agreesWithMultipartKit() throws {
        var generator = SeededGenerator(seed: 0x6D75_6C74)
        for _ in 0..<500 {
            let form = Self.randomForm(using: &generator)
            let chunks = Self.chunks(of: form.bytes, using: &generator)
            let herald = try Self.parseWithHerald(chunks)
            #expect(herald.complete)
            #expect(herald.parts == form.parts)
            #expect(try Self.parseWithMultipartKit(chunks) == form.parts)
        }
    }

    @Test("every split point of one body gives the same parts")
    func everySplitPoint() throws {
        var generator = SeededGenerator(seed: 42)
        let form = Self.randomForm(using: &generator)
        for split in 0...form.bytes.count {
            let chunks = [Array(form.bytes[..<split]), Array(form.bytes[split...])]
            #expect(try Self.parseWithHerald(chunks).parts == form.parts, "split at \(split)")
        }
    }

    @Test("a body cut before its close delimiter is incomplete; garbage after a delimiter is an error")
    func malformed() throws {
        let body = Array("--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue".utf8)
        let cut = try Self.parseWithHerald([body])
        #expect(!cut.complete)
        #expect(cut.parts.isEmpty)
        #expect(throws: MultipartStreamParser.SyntaxError.self) {
            try Self.parseWithHerald([Array("--\(Self.boundary)xx\r\n".utf8)])
        }
        #expect(throws: MultipartStreamParser.SyntaxError.self) {
            try Self.parseWithHerald([Array("--\(Self.boundary)\r\nno colon here\r\n\r\n".utf8)])
        }
    }
}
