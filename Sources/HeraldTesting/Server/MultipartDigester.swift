import Crypto
import Foundation
import NIOCore

/// Parses a `multipart/form-data` request body as it arrives, for `/multipart`: each part's headers are kept
/// and its body is hashed (SHA-256) and counted, never retained, so a body of any size costs constant memory.
///
/// The parsing is ``MultipartStreamParser``'s. Lives on the connection's event loop.
final class MultipartDigester {
    /// The largest part body echoed back as text in ``EchoedMultipart/Part/value``.
    static let maximumEchoedValueSize = 4096

    private let parser: MultipartStreamParser?
    private let contentType: String
    private var failure: String?
    private var parts: [EchoedMultipart.Part] = []
    private var headers: [(name: String, value: String)] = []
    private var hasher = SHA256()
    private var size = 0
    private var value: [UInt8] = []
    private var isInPart = false
    private var completedParts = 0

    init(contentType: String?) {
        self.contentType = contentType ?? ""
        guard let boundary = Self.parameter("boundary", of: self.contentType), !boundary.isEmpty,
            self.contentType.lowercased().hasPrefix("multipart/form-data")
        else {
            parser = nil
            failure = "expected Content-Type: multipart/form-data; boundary=…, got '\(contentType ?? "")'"
            return
        }
        let parser = MultipartStreamParser(boundary: boundary)
        self.parser = parser
        parser.onHeader = { [unowned self] name, value in
            isInPart = true
            headers.append((name, value))
        }
        parser.onBody = { [unowned self] bytes in
            isInPart = true
            hasher.update(bufferPointer: bytes)
            if value.count < Self.maximumEchoedValueSize {
                value += bytes.prefix(Self.maximumEchoedValueSize - value.count)
            }
            size += bytes.count
        }
        parser.onPartComplete = { [unowned self] in finishPart() }
    }

    /// Feeds the next body bytes to the parser.
    func consume(_ buffer: ByteBuffer) {
        guard failure == nil, let parser else { return }
        do {
            try buffer.withUnsafeReadableBytes { try parser.consume($0) }
        } catch {
            failure = "malformed multipart body: \(error)"
        }
    }

    /// The `/multipart` response once the whole body has arrived.
    func response() -> CannedResponse {
        if let failure { return .badRequest(failure) }
        guard parser?.isComplete == true, !isInPart else {
            return .badRequest("the multipart body ended before its close delimiter, in part \(parts.count + 1)")
        }
        guard completedParts > 0 else { return .badRequest("the multipart body has no part") }
        return .json(EchoedMultipart(contentType: contentType, parts: parts))
    }

    private func finishPart() {
        let disposition = headers.first { $0.name.lowercased() == "content-disposition" }?.value ?? ""
        let digest = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        let hasFileName = Self.parameter("filename", of: disposition) != nil
        let text = String(validating: value, as: UTF8.self)
        parts.append(
            EchoedMultipart.Part(
                name: Self.parameter("name", of: disposition),
                filename: Self.parameter("filename", of: disposition),
                contentType: headers.first { $0.name.lowercased() == "content-type" }?.value,
                headers: Dictionary(
                    headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { "\($0), \($1)" }),
                size: size,
                sha256: digest,
                value: hasFileName || size > Self.maximumEchoedValueSize ? nil : text
            ))
        completedParts += 1
        headers = []
        hasher = SHA256()
        size = 0
        value = []
        isInPart = false
    }

    /// The value of `name` among the `;`-separated parameters of a header value, unquoted: a quoted string
    /// ends at the first unescaped `"`, and `\x` stands for `x` (RFC 9110 `quoted-string`).
    static func parameter(_ name: String, of header: String) -> String? {
        var scalars = Substring(header).unicodeScalars[...]
        // Skip the leading value (`form-data`, `multipart/form-data`).
        while let first = scalars.first, first != ";" { scalars.removeFirst() }
        while !scalars.isEmpty {
            scalars.removeFirst()  // the ";"
            while scalars.first == " " || scalars.first == "\t" { scalars.removeFirst() }
            var key = ""
            while let first = scalars.first, first != "=", first != ";" {
                key.unicodeScalars.append(first)
                scalars.removeFirst()
            }
            var value = ""
            if scalars.first == "=" {
                scalars.removeFirst()
                if scalars.first == "\"" {
                    scalars.removeFirst()
                    while let first = scalars.popFirst(), first != "\"" {
                        value.unicodeScalars.append(first == "\\" ? (scalars.popFirst() ?? first) : first)
                    }
                }
                while let first = scalars.first, first != ";" {
                    value.unicodeScalars.append(first)
                    scalars.removeFirst()
                }
            }
            if key.trimmingCharacters(in: .whitespaces).lowercased() == name.lowercased() {
                return value.trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
}

/// The JSON body of a `/multipart` response: every part of the `multipart/form-data` request as the server
/// parsed it, in order.
///
/// ```swift
/// let echoed = try JSONDecoder().decode(EchoedMultipart.self, from: data)
/// #expect(echoed.parts.map(\.name) == ["user", "avatar"])
/// ```
public struct EchoedMultipart: Codable, Sendable, Equatable {
    /// One part.
    public struct Part: Codable, Sendable, Equatable {
        /// The `name` parameter of its `Content-Disposition`.
        public var name: String?
        /// The `filename` parameter of its `Content-Disposition`, when present.
        public var filename: String?
        /// Its `Content-Type`, when present.
        public var contentType: String?
        /// Its header fields, keyed by lowercased name; repeated fields joined with `", "`.
        public var headers: [String: String]
        /// The number of body bytes.
        public var size: Int
        /// The SHA-256 digest of the body, lowercase hexadecimal (see ``TestDigest``).
        public var sha256: String
        /// The body as text, for a part without a file name of at most 4096 bytes of valid UTF-8; `nil`
        /// otherwise.
        public var value: String?
    }

    /// The request's `Content-Type`, boundary included.
    public var contentType: String
    /// The parts, in the order they were sent.
    public var parts: [Part]
}

/// SHA-256 digests in the form `/multipart` reports them, for comparing with what a test sent.
public enum TestDigest {
    /// The SHA-256 digest of `data`, lowercase hexadecimal.
    ///
    /// - Parameter data: The bytes.
    /// - Returns: 64 hexadecimal digits.
    public static func sha256(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    /// The SHA-256 digest of the file at `url`, read in 1 MiB chunks (constant memory), lowercase hexadecimal.
    ///
    /// - Parameter url: A readable file.
    /// - Returns: 64 hexadecimal digits.
    /// - Throws: The error reading the file.
    public static func sha256(ofFileAt url: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(data: chunk)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
