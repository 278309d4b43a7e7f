import Foundation

extension HTTPResponse {
    /// A file name for saving this response's body, safe to append to a directory: it can never name a
    /// path outside it.
    ///
    /// Taken from `Content-Disposition` (RFC 6266: `filename*=UTF-8''…` preferred over `filename=`), else from
    /// the last component of ``url``, else `"download"`. Whatever the server sent, the result is one path
    /// component: directories (`/` and `\`) are stripped down to the last part, NULs and other control
    /// characters and bidirectional overrides are removed, leading dots go (no `..`, no hidden files), and it
    /// is at most 255 UTF-8 bytes (a longer name loses the end of its stem, not its extension).
    ///
    /// ```
    /// Content-Disposition: attachment; filename="../../etc/passwd"   →  "passwd"
    /// Content-Disposition: attachment; filename*=UTF-8''%E2%82%AC.txt →  "€.txt"
    /// ```
    public var suggestedFilename: String {
        // `filename*` first, then `filename`: the first that leaves a safe name (an extended value that decodes to
        // nothing usable doesn't hide a good plain one).
        if let disposition = headers["Content-Disposition"],
            let name = Self.dispositionFilenames(disposition).lazy.compactMap(Self.safeFilename).first
        {
            return name
        }
        return Self.safeFilename(url.lastPathComponent) ?? "download"
    }

    /// `raw` reduced to one safe path component, or `nil` when nothing usable is left.
    ///
    /// - Parameter raw: A file name from an untrusted source.
    /// - Returns: The last `/`- or `\`-separated part of `raw` without control characters, bidirectional
    ///   formatting characters, surrounding whitespace or leading dots, cut to 255 UTF-8 bytes (keeping a short
    ///   extension); `nil` if empty.
    public static func safeFilename(_ raw: String) -> String? {
        // Unicode scalars, not Characters, throughout: a `/` followed by a combining mark is one Character that
        // isn't "/", and a grapheme of hundreds of bytes would go whole when the name is cut.
        var scalars: [Unicode.Scalar] = []
        // The last non-empty part: a separator starts a new part only once something follows it, so
        // "report.pdf/" is "report.pdf".
        var startsNewPart = false
        for scalar in raw.unicodeScalars {
            if scalar == "/" || scalar == "\\" {
                startsNewPart = true
            } else if !isUnsafe(scalar) {
                if startsNewPart {
                    scalars.removeAll(keepingCapacity: true)
                    startsNewPart = false
                }
                scalars.append(scalar)
            }
        }
        trim(&scalars)
        if scalars.reduce(0, { $0 + UTF8.width($1) }) > 255 {
            scalars = shortened(scalars)
            // Cut, the stem may have gone whole: what is left must not start with a dot either.
            trim(&scalars)
        }
        guard !scalars.isEmpty else { return nil }
        var name = String.UnicodeScalarView()
        name.append(contentsOf: scalars)
        return String(name)
    }

    /// Removes leading dots and whitespace in any mix (" . .." must not leave a dot first once the spaces are
    /// gone) and trailing whitespace.
    private static func trim(_ scalars: inout [Unicode.Scalar]) {
        let leading = scalars.prefix { $0 == "." || $0.properties.isWhitespace }.count
        scalars.removeFirst(leading)
        while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
    }

    /// `name` cut to 255 UTF-8 bytes, the longest name most file systems take: a short extension (the last `.`
    /// and up to 16 bytes after it) is kept and the part before it shortened, so `report.pdf` stays a PDF.
    private static func shortened(_ name: [Unicode.Scalar]) -> [Unicode.Scalar] {
        let limit = 255
        func width(_ part: ArraySlice<Unicode.Scalar>) -> Int { part.reduce(0) { $0 + UTF8.width($1) } }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex, width(name[dot...]) <= 17 {
            var stem = name[..<dot]
            let suffix = name[dot...]
            let suffixWidth = width(suffix)
            var stemWidth = width(stem)
            while stemWidth + suffixWidth > limit, let last = stem.last {
                stemWidth -= UTF8.width(last)
                stem.removeLast()
            }
            return Array(stem) + Array(suffix)
        }
        var name = name
        var total = width(name[...])
        while total > limit, let last = name.last {
            total -= UTF8.width(last)
            name.removeLast()
        }
        return name
    }

    private static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        // Bidi_Control by its Unicode property, not a list: marks, embeddings, overrides and isolates, U+061C
        // ARABIC LETTER MARK included, all of which can disguise an extension.
        if scalar.properties.isBidiControl { return true }
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true  // C0 and C1 controls, NUL and DEL included.
        case 0xFEFF: return true
        default: return false
        }
    }

    /// The file names a `Content-Disposition` value carries, unsanitized, in the order to try them: `filename*`
    /// when it decodes, then `filename`.
    static func dispositionFilenames(_ value: String) -> [String] {
        var plain: String?
        var extended: String?
        for (name, parameter) in fieldParameters(value) {
            switch name {
            case "filename*": extended = extended ?? decodeExtendedValue(parameter)
            case "filename": plain = plain ?? parameter
            default: break
            }
        }
        return [extended, plain].compactMap { $0 }
    }

    /// `type; name=value; name="quoted \" value"` → lowercased names with their unquoted values, in order: the
    /// parameters of a `Content-Disposition` or a `Content-Type` (a `;` or `=` inside quotes is the value's).
    static func fieldParameters(_ value: String) -> [(String, String)] {
        var parameters: [(String, String)] = []
        var characters = Substring(value)
        // Skip the disposition type.
        guard let firstSemicolon = characters.firstIndex(of: ";") else { return [] }
        characters = characters[characters.index(after: firstSemicolon)...]
        while !characters.isEmpty {
            characters = characters.drop { $0 == " " || $0 == "\t" || $0 == ";" }
            // A parameter without `=` (`attachment; foo; filename=a.txt`) is skipped, not taken for the next's name.
            let segmentEnd = characters.firstIndex(of: ";") ?? characters.endIndex
            guard let equals = characters[..<segmentEnd].firstIndex(of: "=") else {
                if segmentEnd == characters.endIndex { break }
                characters = characters[segmentEnd...]
                continue
            }
            let name = characters[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            characters = characters[characters.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
            var parameter = ""
            if characters.first == "\"" {
                characters = characters.dropFirst()
                var escaped = false
                while let character = characters.first {
                    characters = characters.dropFirst()
                    if escaped {
                        // A quoted-pair only for `"` and `\`: senders that write Windows paths unescaped
                        // (`"..\..\x"`) keep their separators, which are then stripped like `/`.
                        if character != "\"" && character != "\\" { parameter.append("\\") }
                        parameter.append(character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        parameter.append(character)
                    }
                }
                characters = characters.drop { $0 != ";" }
            } else {
                let end = characters.firstIndex(of: ";") ?? characters.endIndex
                parameter = characters[..<end].trimmingCharacters(in: .whitespaces)
                characters = characters[end...]
            }
            parameters.append((name, parameter))
        }
        return parameters
    }

    /// RFC 8187 `charset'language'percent-encoded`; UTF-8 and ISO-8859-1 only; `nil` when malformed.
    private static func decodeExtendedValue(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = parts[0].lowercased()
        var bytes: [UInt8] = []
        var utf8 = parts[2].utf8[...]
        while let byte = utf8.first {
            utf8 = utf8.dropFirst()
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard utf8.count >= 2, let high = hexValue(utf8[utf8.startIndex]),
                let low = hexValue(utf8[utf8.index(after: utf8.startIndex)])
            else { return nil }
            bytes.append(high << 4 | low)
            utf8 = utf8.dropFirst(2)
        }
        switch charset {
        case "utf-8": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1": return String(bytes.map { Character(Unicode.Scalar($0)) })
        default: return nil
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
