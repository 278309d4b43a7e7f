import Foundation

extension String.Encoding {
    /// The encoding an IANA charset label names (`"utf-8"`, `"ISO-8859-1"`, `"latin1"`, …), or `nil`.
    ///
    /// Labels are matched case-insensitively, ignoring surrounding quotes and whitespace. swift-corelibs
    /// does not expose CoreFoundation's IANA table, so this covers the labels servers actually send.
    init?(ianaCharsetName name: String) {
        let label = name.trimmingCharacters(in: CharacterSet(charactersIn: " \t\"'")).lowercased()
        guard let encoding = Self.ianaLabels[label] else { return nil }
        self = encoding
    }

    /// A short name for messages, such as `"utf-8"`.
    var ianaName: String {
        Self.ianaNames[self] ?? "encoding \(rawValue)"
    }

    private static let ianaLabels: [String: String.Encoding] = [
        "utf-8": .utf8, "utf8": .utf8, "unicode-1-1-utf-8": .utf8,
        "us-ascii": .ascii, "ascii": .ascii, "ansi_x3.4-1968": .ascii,
        "iso-8859-1": .isoLatin1, "iso8859-1": .isoLatin1, "iso_8859-1": .isoLatin1, "latin1": .isoLatin1,
        "l1": .isoLatin1,
        "iso-8859-2": .isoLatin2, "iso8859-2": .isoLatin2, "latin2": .isoLatin2,
        "windows-1250": .windowsCP1250, "cp1250": .windowsCP1250,
        "windows-1251": .windowsCP1251, "cp1251": .windowsCP1251,
        "windows-1252": .windowsCP1252, "cp1252": .windowsCP1252,
        "windows-1253": .windowsCP1253, "cp1253": .windowsCP1253,
        "windows-1254": .windowsCP1254, "cp1254": .windowsCP1254,
        "utf-16": .utf16, "utf16": .utf16,
        "utf-16be": .utf16BigEndian, "utf-16le": .utf16LittleEndian,
        "utf-32": .utf32, "utf32": .utf32,
        "utf-32be": .utf32BigEndian, "utf-32le": .utf32LittleEndian,
        "shift_jis": .shiftJIS, "shift-jis": .shiftJIS, "sjis": .shiftJIS,
        "euc-jp": .japaneseEUC, "iso-2022-jp": .iso2022JP,
        "macintosh": .macOSRoman, "mac": .macOSRoman,
    ]

    private static let ianaNames: [String.Encoding: String] = [
        .utf8: "utf-8", .ascii: "us-ascii", .isoLatin1: "iso-8859-1", .isoLatin2: "iso-8859-2",
        .windowsCP1250: "windows-1250", .windowsCP1251: "windows-1251", .windowsCP1252: "windows-1252",
        .windowsCP1253: "windows-1253", .windowsCP1254: "windows-1254", .utf16: "utf-16",
        .utf16BigEndian: "utf-16be", .utf16LittleEndian: "utf-16le", .utf32: "utf-32",
        .utf32BigEndian: "utf-32be", .utf32LittleEndian: "utf-32le", .shiftJIS: "shift_jis",
        .japaneseEUC: "euc-jp", .iso2022JP: "iso-2022-jp", .macOSRoman: "macintosh",
    ]
}
