import Foundation

/// Validates the response and decodes the body as text in the response's charset.
public struct StringResponseSerializer: ResponseSerializer {
    /// The status and content-type rules applied before decoding.
    public var validation: ResponseValidation
    /// The encoding to use regardless of the response's `charset`, or `nil` to follow the response.
    public var encoding: String.Encoding?
    /// The encoding used when the response names no charset or one Herald does not know. Default: UTF-8.
    public var defaultEncoding: String.Encoding

    /// Creates a string serializer.
    ///
    /// - Parameters:
    ///   - validation: The acceptance rules. Default: status `200..<300`, any content type.
    ///   - encoding: An encoding that overrides the response's `charset`. Default: `nil` (follow the response).
    ///   - defaultEncoding: The encoding when the response names none, or names one Herald does not know.
    ///     Default: UTF-8.
    public init(
        validation: ResponseValidation = .default,
        encoding: String.Encoding? = nil,
        defaultEncoding: String.Encoding = .utf8
    ) {
        self.validation = validation
        self.encoding = encoding
        self.defaultEncoding = defaultEncoding
    }

    /// Validates the response and decodes the body.
    ///
    /// Decoded as browsers decode (the WHATWG Encoding Standard): a leading byte-order mark chooses UTF-8,
    /// UTF-16LE or UTF-16BE over the response's charset and is dropped (unless ``encoding`` is set, which then
    /// rules; a mark of that encoding is still dropped; a UTF-32 charset keeps its own mark, dropped too), and
    /// windows-1252 — also what `us-ascii` and `iso-8859-1` name — decodes every byte, the five it leaves
    /// undefined to the code points of the same number. An empty body decodes to `""`.
    ///
    /// - Parameters:
    ///   - response: The response head.
    ///   - data: The response body.
    /// - Returns: The decoded text.
    /// - Throws: ``HeraldError/Code/unacceptableStatusCode``, ``HeraldError/Code/unacceptableContentType``,
    ///   or ``HeraldError/Code/serializationFailed`` when the bytes are not valid in the encoding.
    public func serialize(response: HTTPResponse, data: Data) throws(HeraldError) -> String {
        try validation.validate(response, data: data)
        if data.isEmpty { return "" }
        let charset = response.textEncodingName
        var resolved = encoding ?? charset.flatMap(String.Encoding.init(ianaCharsetName:)) ?? defaultEncoding
        var body = data
        if let (marked, length) = Self.byteOrderMark(of: body), encoding == nil || encoding == marked,
            ![.utf32, .utf32LittleEndian, .utf32BigEndian].contains(resolved)
        {
            resolved = marked
            body = body.dropFirst(length)
        }
        if resolved == .utf32LittleEndian && body.starts(with: [0xFF, 0xFE, 0, 0])
            || resolved == .utf32BigEndian && body.starts(with: [0, 0, 0xFE, 0xFF])
        {
            body = body.dropFirst(4)
        }
        if resolved == .windowsCP1252 { return Self.decodeWindows1252(body) }
        guard let string = String(data: body, encoding: resolved) else {
            throw HeraldError(
                .serializationFailed,
                "the body is not valid \(resolved.ianaName)" + (charset.map { " (charset \"\($0)\")" } ?? ""),
                url: response.url,
                response: response,
                responseBody: data
            )
        }
        return string
    }

    /// The encoding a leading byte-order mark names, and the mark's length.
    private static func byteOrderMark(of data: Data) -> (String.Encoding, Int)? {
        if data.starts(with: [0xEF, 0xBB, 0xBF]) { return (.utf8, 3) }
        if data.starts(with: [0xFF, 0xFE]) { return (.utf16LittleEndian, 2) }
        if data.starts(with: [0xFE, 0xFF]) { return (.utf16BigEndian, 2) }
        return nil
    }

    /// windows-1252 as the WHATWG Encoding Standard decodes it: every byte is a character. Foundation's fails
    /// on the five bytes the code page leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D), which browsers decode to
    /// the C1 controls of the same number.
    static func decodeWindows1252(_ data: Data) -> String {
        var scalars = String.UnicodeScalarView()
        scalars.reserveCapacity(data.count)
        for byte in data {
            let value = (0x80...0x9F).contains(byte) ? windows1252High[Int(byte) - 0x80] : UInt32(byte)
            scalars.append(Unicode.Scalar(value) ?? Unicode.Scalar(byte))
        }
        return String(scalars)
    }

    /// windows-1252's bytes 0x80–0x9F as code points; an undefined one keeps its own number.
    private static let windows1252High: [UInt32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D,
        0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A,
        0x0153, 0x9D, 0x017E, 0x0178,
    ]
}
