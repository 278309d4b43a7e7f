import Foundation
import HeraldEngine

/// A `multipart/form-data` body built from in-memory data, files and streams: AF's `AFMultipartFormData`.
///
/// Appending records what each part is; nothing is read until the body is sent. Then the parts are
/// streamed one after the other — file parts read from disk in chunks, stream parts pulled as the
/// connection takes them — so a body of any size is sent in constant memory, with its exact length as
/// `Content-Length`. When the body must be sent again (a 307/308 redirect, an authentication round-trip),
/// files are reread and stream parts remade from their factories: no ``SessionManager/taskNeedNewBodyStream``
/// is needed.
///
/// Names and file names are written as browsers write them (the HTML standard's form encoding): `"`, CR and LF
/// as `%22`, `%0D` and `%0A`, so `report "final".pdf` arrives as `report %22final%22.pdf`. Every `append`
/// checks its input at once and throws ``HeraldError/Code/invalidRequest`` for what would corrupt the body's
/// framing: a name or file name containing NUL or `\` (which parsers read in two ways), a content type or part
/// header containing CR, LF or NUL, a header name that is not an HTTP token. A file that can't be read
/// throws ``HeraldError/Code/fileIO``. So a bad part is refused before any byte is sent.
///
/// ```swift
/// var form = MultipartFormData()
/// try form.append(Data("Ada".utf8), name: "user")
/// try form.append(fileURL: reportURL, name: "report")  // file name and type from the URL
/// ```
public struct MultipartFormData: Sendable {
    /// One part: its header fields and where its body comes from.
    struct Part: Sendable {
        var headers: HTTPHeaders
        var body: Segment
    }

    /// The boundary between parts (without the leading `--`).
    public let boundary: String
    private(set) var parts: [Part] = []
    /// The bytes of every part so far, framing included, without the closing delimiter.
    private var partsLength: Int64 = 0

    /// Creates an empty form with a random boundary, `Herald-Boundary-` and 32 hexadecimal digits.
    public init() {
        let random = (0..<2).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }
        boundary = "Herald-Boundary-" + random.map { String(repeating: "0", count: 16 - $0.count) + $0 }.joined()
    }

    /// Creates an empty form with the given boundary.
    ///
    /// - Parameter boundary: 1 to 70 characters from RFC 2046's `bchars` (letters, digits and
    ///   `'()+_,-./:=?`), not ending with a space. It must not occur in any part's body.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest`` for any other boundary.
    public init(boundary: String) throws(HeraldError) {
        let allowed = "'()+_,-./:=? "
        let valid =
            (1...70).contains(boundary.utf8.count) && boundary.last != " "
            && boundary.unicodeScalars.allSatisfy {
                $0.isASCII
                    && (CharacterSet.alphanumerics.contains($0) || allowed.unicodeScalars.contains($0))
            }
        guard valid else {
            throw HeraldError(.invalidRequest, "'\(boundary)' is not a valid multipart boundary (RFC 2046).")
        }
        self.boundary = boundary
    }

    /// The request's `Content-Type`: `multipart/form-data; boundary=…`, the boundary quoted when it has a
    /// character an unquoted parameter value can't carry (RFC 9110 §5.6.6: a space, `'`-less separators such as
    /// `=`, `:`, `(`, `)`, `,`, `/`, `?`).
    public var contentType: String {
        boundary.utf8.allSatisfy(Self.isTokenByte)
            ? "multipart/form-data; boundary=\(boundary)" : "multipart/form-data; boundary=\"\(boundary)\""
    }

    /// Whether `byte` may appear in an unquoted parameter value (an RFC 9110 token character).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// The number of bytes the body has when sent, framing included: its `Content-Length`.
    public var contentLength: Int64 { partsLength + Int64(close(afterParts: !parts.isEmpty).utf8.count) }

    /// The number of parts appended so far.
    public var count: Int { parts.count }

    // MARK: - appending

    /// Appends a form field: AF's `appendPartWithFormData:name:`. The part has no file name and no
    /// `Content-Type` (a server reads it as text).
    ///
    /// - Parameters:
    ///   - data: The field's value.
    ///   - name: The field name.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest`` for a name with NUL or `\`.
    public mutating func append(_ data: Data, name: String) throws(HeraldError) {
        try appendPart(name: name, fileName: nil, mimeType: nil, body: .bytes(data))
    }

    /// Appends in-memory data as a file: AF's `appendPartWithFileData:name:fileName:mimeType:`.
    ///
    /// - Parameters:
    ///   - data: The file's content.
    ///   - name: The field name.
    ///   - fileName: The file name the server sees.
    ///   - mimeType: The part's `Content-Type`; default from `fileName`'s extension (see ``MIMEType``).
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest`` for a name or file name with NUL or
    ///   `\`, or a type with CR, LF or NUL.
    public mutating func append(_ data: Data, name: String, fileName: String, mimeType: String? = nil)
        throws(HeraldError)
    {
        let type = mimeType ?? MIMEType.forPathExtension((fileName as NSString).pathExtension)
        try appendPart(name: name, fileName: fileName, mimeType: type, body: .bytes(data))
    }

    /// Appends a file read from disk when the body is sent: AF's `appendPartWithFileURL:name:fileName:mimeType:error:`.
    ///
    /// The file's size is read now and sent as part of `Content-Length`; if the file has another size when
    /// it is read, or when all of it has been read (it grew or shrank while it was sent), the task fails with
    /// ``HeraldError/Code/fileIO`` instead of sending a body of the wrong length or the file cut short.
    ///
    /// - Parameters:
    ///   - fileURL: A readable regular file.
    ///   - name: The field name.
    ///   - fileName: The file name the server sees; default the URL's last path component.
    ///   - mimeType: The part's `Content-Type`; default from the file's extension (see ``MIMEType``).
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/fileIO`` when the file can't be read now, or
    ///   ``HeraldError/Code/invalidRequest`` for a bad name, file name or type.
    public mutating func append(fileURL: URL, name: String, fileName: String? = nil, mimeType: String? = nil)
        throws(HeraldError)
    {
        var status = stat()
        guard fileURL.isFileURL, stat(fileURL.path, &status) == 0 else {
            throw HeraldError.fileFailure("Cannot read the multipart file", url: fileURL)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG, access(fileURL.path, R_OK) == 0 else {
            throw HeraldError(.fileIO, "The multipart file \(fileURL.path) is not a readable regular file.")
        }
        let type = mimeType ?? MIMEType.forPathExtension(fileURL.pathExtension)
        try appendPart(
            name: name, fileName: fileName ?? fileURL.lastPathComponent, mimeType: type,
            body: .file(fileURL, length: Int64(status.st_size)))
    }

    /// Appends a part whose bytes come from a stream: AF's `appendPartWithInputStream:name:fileName:length:mimeType:`.
    ///
    /// `makeStream` is called each time the body is sent — once, or again for a redirect or an
    /// authentication round-trip — on the upload task's hook queue (never the engine's loop thread),
    /// when the part is reached; the stream it returns is read there too (see ``BodyStream``). It must yield
    /// exactly `length` bytes: a stream that ends early, or has more to give once `length` bytes are read,
    /// fails the task with ``HeraldError/Code/bodyStream`` (one more read is made to see the end), rather than
    /// send the part cut short.
    ///
    /// - Parameters:
    ///   - length: The number of bytes the stream yields.
    ///   - name: The field name.
    ///   - fileName: The file name the server sees.
    ///   - mimeType: The part's `Content-Type`; default from `fileName`'s extension.
    ///   - makeStream: Makes a stream positioned at the part's first byte.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest`` for a negative length or a bad name,
    ///   file name or type.
    public mutating func append(
        length: Int64, name: String, fileName: String, mimeType: String? = nil,
        stream makeStream: @escaping @Sendable () -> BodyStream
    ) throws(HeraldError) {
        guard length >= 0 else {
            throw HeraldError(.invalidRequest, "The stream part '\(name)' declares a negative length (\(length)).")
        }
        let type = mimeType ?? MIMEType.forPathExtension((fileName as NSString).pathExtension)
        try appendPart(name: name, fileName: fileName, mimeType: type, body: .stream(length: length, make: makeStream))
    }

    /// Appends a part with header fields of your own: AF's `appendPartWithHeaders:body:`.
    ///
    /// - Parameters:
    ///   - headers: The part's header fields, sent in order (typically a `Content-Disposition`).
    ///   - body: The part's body.
    /// - Throws: ``HeraldError`` with ``HeraldError/Code/invalidRequest`` for a header name that is not an
    ///   HTTP token or a value containing CR, LF or NUL.
    public mutating func append(headers: HTTPHeaders, body: Data) throws(HeraldError) {
        for field in headers {
            guard Request.isToken(field.name) else {
                throw HeraldError(.invalidRequest, "The part header name '\(field.name)' is not an HTTP token.")
            }
            try Self.check(field.value, what: "The value of part header '\(field.name)'")
        }
        try appendChecked(Part(headers: headers, body: .bytes(body)))
    }

    private mutating func appendPart(name: String, fileName: String?, mimeType: String?, body: Segment)
        throws(HeraldError)
    {
        try Self.checkQuoted(name, what: "The field name '\(name)'")
        var disposition = "form-data; name=\"\(Self.escapedForQuoting(name))\""
        if let fileName {
            try Self.checkQuoted(fileName, what: "The file name '\(fileName)'")
            disposition += "; filename=\"\(Self.escapedForQuoting(fileName))\""
        }
        var headers: HTTPHeaders = ["Content-Disposition": disposition]
        if let mimeType {
            try Self.check(mimeType, what: "The content type '\(mimeType)'")
            headers.add(name: "Content-Type", value: mimeType)
        }
        try appendChecked(Part(headers: headers, body: body))
    }

    /// Appends `part` unless the body's length would no longer fit a `Content-Length` (an `Int64`). Counts the
    /// new part alone, so a form of many parts costs no more per part than one of a few.
    private mutating func appendChecked(_ part: Part) throws(HeraldError) {
        // What the part adds: its delimiter line (with the CRLF before it after the first part), its header
        // lines, the blank line, its body. The close is counted once, in `contentLength`.
        let head = self.head(of: part, isFirst: parts.isEmpty)
        let (withHead, overflow1) = partsLength.addingReportingOverflow(Int64(head.utf8.count))
        let (withBody, overflow2) = withHead.addingReportingOverflow(part.body.length)
        let (_, overflow3) = withBody.addingReportingOverflow(Int64(close(afterParts: true).utf8.count))
        guard !overflow1, !overflow2, !overflow3 else {
            throw HeraldError(
                .invalidRequest,
                "The multipart body would be longer than \(Int64.max) bytes with this part; it was not appended.")
        }
        parts.append(part)
        partsLength = withBody
    }

    /// A part's delimiter line (after the first part, with the CRLF that ends the previous body), its header
    /// lines and the blank line before its body.
    private func head(of part: Part, isFirst: Bool) -> String {
        var head = isFirst ? "--\(boundary)\r\n" : "\r\n--\(boundary)\r\n"
        for field in part.headers { head += "\(field.name): \(field.value)\r\n" }
        return head + "\r\n"
    }

    /// The closing delimiter: after parts, it starts with the CRLF that ends the last body.
    private func close(afterParts: Bool) -> String {
        afterParts ? "\r\n--\(boundary)--\r\n" : "--\(boundary)--\r\n"
    }

    /// Refuses what would break out of a header line.
    private static func check(_ text: String, what: String) throws(HeraldError) {
        for byte in text.utf8 where byte == 0x0D || byte == 0x0A || byte == 0x00 {
            throw HeraldError(
                .invalidRequest, "\(what) contains CR, LF or NUL, which would corrupt the multipart body.")
        }
    }

    /// Refuses what no escape makes safe in a quoted name: NUL, and a backslash, which escapes the next character
    /// for parsers that follow RFC 9110 (`x\"` would end the string) and is taken as it is by others (browsers
    /// send it so), so no spelling of it reads the same everywhere.
    private static func checkQuoted(_ text: String, what: String) throws(HeraldError) {
        for byte in text.utf8 where byte == 0x00 || byte == 0x5C {
            let character = byte == 0x5C ? "a backslash" : "NUL"
            throw HeraldError(
                .invalidRequest, "\(what) contains \(character), which would corrupt the multipart body.")
        }
    }

    /// A name or file name as the HTML standard's multipart form encoding writes it in its quoted string: `"`,
    /// CR and LF percent-encoded, everything else as it is.
    static func escapedForQuoting(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x22 || $0 == 0x0D || $0 == 0x0A }) else { return text }
        var escaped = ""
        for character in text.unicodeScalars {
            switch character {
            case "\"": escaped += "%22"
            case "\r": escaped += "%0D"
            case "\n": escaped += "%0A"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    // MARK: - the body

    /// The body as a sequence of segments: each part's delimiter and headers, its body, and the close.
    var segments: [Segment] {
        var segments: [Segment] = []
        for (index, part) in parts.enumerated() {
            segments.append(.bytes(Data(head(of: part, isFirst: index == 0).utf8)))
            segments.append(part.body)
        }
        segments.append(.bytes(Data(close(afterParts: !parts.isEmpty).utf8)))
        return segments
    }

    /// A fresh stream of the whole body from its first byte.
    func makeStream() -> BodyStream {
        let reader = MultipartBodyReader(segments: segments)
        return BodyStream { buffer in try reader.read(into: buffer) }
    }
}
