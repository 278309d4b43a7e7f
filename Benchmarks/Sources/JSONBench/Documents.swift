import Foundation

/// The bodies the benchmark parses: generated, deterministic, shaped like real API responses.
enum Documents {
    static let all: [(name: String, data: Data)] = [
        ("object, 1 KiB", object(seed: 1)),
        ("list of objects, 64 KiB", list(targetBytes: 64 * 1024)),
        ("escaped and non-ASCII strings, 64 KiB", strings(targetBytes: 64 * 1024)),
        ("numbers, 64 KiB", numbers(targetBytes: 64 * 1024)),
        ("list of objects, 1 MiB", list(targetBytes: 1024 * 1024)),
    ]

    /// One REST-style record, about 1 KiB.
    static func object(seed: Int) -> Data {
        Data(objectText(seed: seed).utf8)
    }

    private static func objectText(seed: Int) -> String {
        """
        {"id":\(seed),"login":"user\(seed)","name":"User Number \(seed)","email":"user\(seed)@example.com",\
        "verified":\(seed % 2 == 0),"score":\(Double(seed) * 1.25),"balance":-\(seed * 37).5,"avatar":null,\
        "created_at":"2026-11-\(10 + seed % 18)T12:34:56Z","tags":["swift","linux","http","json"],\
        "address":{"street":"\(seed) Main Street","city":"Springfield","zip":"\(10000 + seed)",\
        "geo":{"lat":\(40.0 + Double(seed % 100) / 1000),"lng":-\(73.0 + Double(seed % 50) / 1000)}},\
        "settings":{"theme":"dark","notifications":{"email":true,"push":false,"digest":"weekly"},\
        "languages":["en","fr","de"],"limits":{"requests":5000,"storage":1073741824}},\
        "bio":"Writes Swift on Linux and reads RFC 8259 for fun. Likes short functions and long walks.",\
        "followers":\(seed * 13),"following":\(seed * 7),"repos":[\(seed),\(seed + 1),\(seed + 2)]}
        """
    }

    /// An array of records, about `targetBytes` long.
    static func list(targetBytes: Int) -> Data {
        var text = "["
        var seed = 0
        while text.utf8.count < targetBytes {
            if seed > 0 { text += "," }
            text += objectText(seed: seed)
            seed += 1
        }
        return Data((text + "]").utf8)
    }

    /// An array of strings with escapes, `\u` escapes (surrogate pairs too) and raw non-ASCII UTF-8.
    static func strings(targetBytes: Int) -> Data {
        let samples = [
            #""line one\nline two\ttabbed \"quoted\" back\\slash""#,
            #""caf\u00e9 na\u00efve \u4e2d\u6587 \ud83d\ude00""#,
            "\"Grüße aus Köln — ½ € 😀 日本語のテキスト\"",
            #""plain ASCII text that needs no escaping at all, the common case""#,
        ]
        var text = "["
        var index = 0
        while text.utf8.count < targetBytes {
            if index > 0 { text += "," }
            text += samples[index % samples.count]
            index += 1
        }
        return Data((text + "]").utf8)
    }

    /// An array of integers and decimals, some with exponents.
    static func numbers(targetBytes: Int) -> Data {
        var text = "["
        var index = 0
        while text.utf8.count < targetBytes {
            if index > 0 { text += "," }
            switch index % 4 {
            case 0: text += "\(index * 7919)"
            case 1: text += "-\(index).\(index % 1000)"
            case 2: text += "\(Double(index) * 0.000123)"
            default: text += "\(index)e\(index % 20)"
            }
            index += 1
        }
        return Data((text + "]").utf8)
    }
}
