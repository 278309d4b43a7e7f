import Foundation
import Testing

@testable import Herald

@Suite("Data response serializer")
struct DataResponseSerializerTests {
    @Test("a 200 returns the body unchanged, any content type")
    func passesThrough() throws {
        let body = Data([0, 1, 2, 255])
        let output = try DataResponseSerializer().serialize(
            response: makeResponse(contentType: "image/png"), data: body)
        #expect(output == body)
    }

    @Test("a 500 fails with unacceptableStatusCode carrying the status")
    func rejectsStatus() throws {
        let error = try #require(
            heraldError { try DataResponseSerializer().serialize(response: makeResponse(status: 500), data: Data()) })
        #expect(error.code == .unacceptableStatusCode)
        #expect(error.statusCode == 500)
    }

    @Test("custom acceptable status codes let a 404 through")
    func customStatus() throws {
        let serializer = DataResponseSerializer(validation: ResponseValidation(acceptableStatusCodes: [200, 404]))
        #expect(
            try serializer.serialize(response: makeResponse(status: 404), data: Data("nope".utf8)) == Data("nope".utf8))
    }

    @Test("the erased form returns the same value as any Sendable")
    func erased() throws {
        let serializer: any ResponseSerializer = DataResponseSerializer()
        let output = try serializer.serializeErased(response: makeResponse(), data: Data("abc".utf8))
        #expect(output as? Data == Data("abc".utf8))
    }
}

@Suite("String response serializer")
struct StringResponseSerializerTests {
    @Test("without a charset the body is decoded as UTF-8, dropping a BOM")
    func utf8Default() throws {
        let serializer = StringResponseSerializer()
        #expect(
            try serializer.serialize(response: makeResponse(contentType: "text/plain"), data: Data("héllo ✓".utf8))
                == "héllo ✓")
        let bom = Data([0xEF, 0xBB, 0xBF]) + Data("x".utf8)
        #expect(try serializer.serialize(response: makeResponse(), data: bom) == "x")
    }

    @Test(
        "the response charset chooses the encoding",
        arguments: [
            ("text/plain; charset=ISO-8859-1", Data([0x63, 0x61, 0x66, 0xE9]), "café"),
            ("text/plain; charset=\"latin1\"", Data([0xE9]), "é"),
            ("text/plain; charset=us-ascii", Data("plain".utf8), "plain"),
            ("text/plain; charset=utf-16", Data([0xFF, 0xFE, 0x68, 0x00, 0x69, 0x00]), "hi"),
            ("text/plain; charset=utf-16le", Data([0x68, 0x00, 0x69, 0x00]), "hi"),
            ("text/plain; charset=utf-16be", Data([0x00, 0x68, 0x00, 0x69]), "hi"),
            ("text/plain; charset=windows-1252", Data([0x80]), "€"),
            ("text/plain; charset=utf-8", Data("ü".utf8), "ü"),
            // As browsers read them: us-ascii and iso-8859-1 are windows-1252, whose every byte decodes.
            ("text/plain; charset=iso-8859-1", Data([0x93, 0x68, 0x69, 0x94, 0x80]), "\u{201C}hi\u{201D}€"),
            ("text/plain; charset=us-ascii", Data([0x41, 0xE9]), "Aé"),
            ("text/plain; charset=windows-1252", Data([0x61, 0x81, 0x9D]), "a\u{81}\u{9D}"),
            // utf-16 without a mark is little-endian; a mark wins over the label, and is dropped.
            ("text/plain; charset=utf-16", Data([0x41, 0x00, 0x42, 0x00]), "AB"),
            ("text/plain; charset=utf-16le", Data([0xFF, 0xFE, 0x41, 0x00]), "A"),
            ("text/plain; charset=iso-8859-1", Data([0xEF, 0xBB, 0xBF, 0x41]), "A"),
            ("text/plain", Data([0xFF, 0xFE, 0x41, 0x00]), "A"),
            ("text/plain; charset=utf-8", Data([0xFE, 0xFF, 0x00, 0x41]), "A"),
            // A label this Foundation can't decode falls back to UTF-8 instead of failing every body.
            ("text/plain; charset=euc-jp", Data("abc".utf8), "abc"),
            ("text/plain; charset=utf-32le", Data([0xFF, 0xFE, 0, 0, 0x41, 0, 0, 0]), "A"),
            // Charsets Foundation decodes without a name: Chinese, Korean, Cyrillic, and Latin-9's euro.
            ("text/html; charset=gbk", Data([0xD6, 0xD0]), "中"),
            ("text/html; charset=GB2312", Data([0xD6, 0xD0]), "中"),
            ("text/html; charset=gb18030", Data([0xD6, 0xD0]), "中"),
            ("text/html; charset=big5", Data([0xA4, 0xA4]), "中"),
            ("text/html; charset=euc-kr", Data([0xC7, 0xD1]), "한"),
            // windows-949's extended Hangul, which strict EUC-KR would drop a byte of.
            ("text/html; charset=euc-kr", Data([0x8C, 0x63]), "똠"),
            ("text/plain; charset=koi8-r", Data([0xF0, 0xD2, 0xC9, 0xD7, 0xC5, 0xD4]), "Привет"),
            ("text/plain; charset=iso-8859-15", Data([0xA4]), "€"),
            // Labels WHATWG gives the same encodings: before, each fell back to UTF-8 and failed the body.
            ("text/plain; charset=iso-8859-9", Data([0xFD, 0xF0]), "ığ"),
            ("text/plain; charset=latin5", Data([0xDE]), "Ş"),
            ("text/plain; charset=windows-31j", Data([0x82, 0xA0]), "あ"),
            ("text/plain; charset=cp936", Data([0xD6, 0xD0]), "中"),
            ("text/plain; charset=ks_c_5601-1989", Data([0xC7, 0xD1]), "한"),
            ("text/plain; charset=cp819", Data([0xE9]), "é"),
            // Other charsets decoded by name: Shift_JIS, Latin-2, Cyrillic and Greek Windows code pages.
            ("text/plain; charset=shift_jis", Data([0x93, 0xFA]), "日"),
            ("text/plain; charset=iso-8859-2", Data([0xB1]), "ą"),
            ("text/plain; charset=windows-1251", Data([0xC6]), "Ж"),
            ("text/plain; charset=windows-1253", Data([0xE1]), "α"),
            // A `charset=` inside another parameter's quoted value is that value's: before, it was taken.
            (#"text/plain; title="x;charset=koi8-r"; charset=utf-8"#, Data("Привет".utf8), "Привет"),
        ])
    func charsets(contentType: String, body: Data, expected: String) throws {
        #expect(
            try StringResponseSerializer().serialize(response: makeResponse(contentType: contentType), data: body)
                == expected)
    }

    @Test("bytes that are not valid in the charset fail with serializationFailed naming the charset")
    func undecodable() throws {
        let error = try #require(
            heraldError {
                try StringResponseSerializer().serialize(
                    response: makeResponse(contentType: "text/plain; charset=utf-8"), data: Data([0xC3, 0x28, 0xFF]))
            })
        #expect(error.code == .serializationFailed)
        #expect(error.message.contains("utf-8"))
    }

    @Test("an unknown charset falls back to the default encoding; an explicit encoding overrides the response")
    func fallbackAndOverride() throws {
        let unknown = makeResponse(contentType: "text/plain; charset=x-klingon")
        #expect(try StringResponseSerializer().serialize(response: unknown, data: Data("ok".utf8)) == "ok")
        let override = StringResponseSerializer(encoding: .isoLatin1)
        #expect(
            try override.serialize(response: makeResponse(contentType: "text/plain; charset=utf-8"), data: Data([0xE9]))
                == "é")
    }

    @Test("an empty body is the empty string; a 500 fails before decoding")
    func emptyAndStatus() throws {
        #expect(try StringResponseSerializer().serialize(response: makeResponse(status: 204), data: Data()) == "")
        let error = try #require(
            heraldError {
                try StringResponseSerializer().serialize(response: makeResponse(status: 500), data: Data([0xFF]))
            })
        #expect(error.code == .unacceptableStatusCode)
    }
}
