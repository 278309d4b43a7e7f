import Foundation

extension String.Encoding {
    /// The encoding an IANA charset label names (`"utf-8"`, `"ISO-8859-1"`, `"latin1"`, …), or `nil`.
    ///
    /// Labels are matched case-insensitively, ignoring surrounding quotes and whitespace. swift-corelibs
    /// does not expose CoreFoundation's IANA table, so this covers the labels servers actually send, read as
    /// browsers read them (the WHATWG Encoding Standard): `us-ascii`, `iso-8859-1` and `latin1` name
    /// windows-1252, of which they are subsets in practice, and `utf-16` is little-endian. Labels this
    /// Foundation can't decode correctly (`euc-jp`, `macintosh`) are left out: unknown, they fall back to the
    /// default encoding.
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
        "us-ascii": .windowsCP1252, "ascii": .windowsCP1252, "ansi_x3.4-1968": .windowsCP1252,
        "iso-8859-1": .windowsCP1252, "iso8859-1": .windowsCP1252, "iso_8859-1": .windowsCP1252,
        "latin1": .windowsCP1252, "l1": .windowsCP1252, "cp819": .windowsCP1252, "ibm819": .windowsCP1252,
        "csisolatin1": .windowsCP1252, "iso_8859-1:1987": .windowsCP1252, "iso-ir-100": .windowsCP1252,
        "iso-8859-2": .isoLatin2, "iso8859-2": .isoLatin2, "latin2": .isoLatin2,
        "windows-1250": .windowsCP1250, "cp1250": .windowsCP1250,
        "windows-1251": .windowsCP1251, "cp1251": .windowsCP1251,
        "windows-1252": .windowsCP1252, "cp1252": .windowsCP1252,
        "windows-1253": .windowsCP1253, "cp1253": .windowsCP1253,
        "windows-1254": .windowsCP1254, "cp1254": .windowsCP1254,
        // As WHATWG reads them: ISO-8859-9 (Latin-5) as windows-1254, of which it is a subset.
        "iso-8859-9": .windowsCP1254, "iso8859-9": .windowsCP1254, "iso_8859-9": .windowsCP1254,
        "latin5": .windowsCP1254, "l5": .windowsCP1254,
        "utf-16": .utf16LittleEndian, "utf16": .utf16LittleEndian,
        "utf-16be": .utf16BigEndian, "utf-16le": .utf16LittleEndian,
        "utf-32": .utf32, "utf32": .utf32,
        "utf-32be": .utf32BigEndian, "utf-32le": .utf32LittleEndian,
        "shift_jis": .shiftJIS, "shift-jis": .shiftJIS, "sjis": .shiftJIS, "windows-31j": .shiftJIS,
        "x-sjis": .shiftJIS, "ms_kanji": .shiftJIS, "ms932": .shiftJIS, "csshiftjis": .shiftJIS,
        "iso-2022-jp": .iso2022JP,
        "iso-8859-15": .isoLatin9, "iso8859-15": .isoLatin9, "iso_8859-15": .isoLatin9, "latin9": .isoLatin9,
        "koi8-r": .koi8R, "koi8": .koi8R,
        // As the WHATWG Encoding Standard reads them: GBK and GB2312 as GB18030, of which they are subsets.
        "gb18030": .gb18030, "gbk": .gb18030, "gb2312": .gb18030, "x-gbk": .gb18030, "cp936": .gb18030,
        "windows-936": .gb18030, "csgb2312": .gb18030,
        // As WHATWG reads them: Big5 with the HKSCS extensions, EUC-KR as windows-949 (its extended Hangul too).
        "big5": .big5, "big5-hkscs": .big5,
        "euc-kr": .eucKR, "ks_c_5601-1987": .eucKR, "windows-949": .eucKR, "cp949": .eucKR,
        "ks_c_5601-1989": .eucKR, "korean": .eucKR, "csksc56011987": .eucKR, "ksc5601": .eucKR,
    ]

    // Encodings Foundation decodes on Linux without naming them: CoreFoundation's numbers, as `String.Encoding`'s
    // raw values are made from them (`CFStringConvertEncodingToNSStringEncoding`).
    fileprivate static let isoLatin9 = String.Encoding(rawValue: 0x8000_020F)
    fileprivate static let koi8R = String.Encoding(rawValue: 0x8000_0A02)
    fileprivate static let gb18030 = String.Encoding(rawValue: 0x8000_0632)
    fileprivate static let big5 = String.Encoding(rawValue: 0x8000_0A06)  // Big5-HKSCS
    fileprivate static let eucKR = String.Encoding(rawValue: 0x8000_0422)  // windows-949

    private static let ianaNames: [String.Encoding: String] = [
        .utf8: "utf-8", .ascii: "us-ascii", .isoLatin1: "iso-8859-1", .isoLatin2: "iso-8859-2",
        .windowsCP1250: "windows-1250", .windowsCP1251: "windows-1251", .windowsCP1252: "windows-1252",
        .windowsCP1253: "windows-1253", .windowsCP1254: "windows-1254", .utf16: "utf-16",
        .utf16BigEndian: "utf-16be", .utf16LittleEndian: "utf-16le", .utf32: "utf-32",
        .utf32BigEndian: "utf-32be", .utf32LittleEndian: "utf-32le", .shiftJIS: "shift_jis",
        .japaneseEUC: "euc-jp", .iso2022JP: "iso-2022-jp", .macOSRoman: "macintosh", .isoLatin9: "iso-8859-15",
        .koi8R: "koi8-r", .gb18030: "gb18030", .big5: "big5", .eucKR: "euc-kr",
    ]
}
