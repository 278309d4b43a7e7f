import Foundation
import Testing

@testable import Herald

@Suite("JSON response serializer")
struct JSONResponseSerializerTests {
    let json = makeResponse(contentType: "application/json; charset=utf-8")

    @Test("a JSON object is parsed into JSONValue")
    func parsesObject() throws {
        let body = Data(#"{"name":"Ada","age":36,"admin":true,"tags":["a","b"],"boss":null,"ratio":0.5}"#.utf8)
        let value = try JSONResponseSerializer().serialize(response: json, data: body)
        let expected: JSONValue = [
            "name": "Ada", "age": 36, "admin": true, "tags": ["a", "b"], "boss": nil, "ratio": 0.5,
        ]
        #expect(value == expected)
    }

    @Test(
        "top-level scalars are accepted",
        arguments: [("42", JSONValue.number(42)), ("\"s\"", "s"), ("true", true), ("null", nil)])
    func fragments(body: String, expected: JSONValue) throws {
        #expect(try JSONResponseSerializer().serialize(response: json, data: Data(body.utf8)) == expected)
    }

    @Test("a 500 with the JSON serializer fails with unacceptableStatusCode carrying the status")
    func rejectsStatus() throws {
        let error = try #require(
            heraldError {
                try JSONResponseSerializer().serialize(
                    response: makeResponse(status: 500, contentType: "application/json"), data: Data("{}".utf8))
            })
        #expect(error.code == .unacceptableStatusCode)
        #expect(error.statusCode == 500)
        #expect(error.message.contains("500"))
    }

    @Test("an HTML body fails with unacceptableContentType")
    func rejectsContentType() throws {
        let error = try #require(
            heraldError {
                try JSONResponseSerializer().serialize(
                    response: makeResponse(contentType: "text/html"), data: Data("<html>".utf8))
            })
        #expect(error.code == .unacceptableContentType)
        #expect(error.message.contains("text/html"))
    }

    @Test("malformed JSON fails with serializationFailed and the parser's error as underlying")
    func malformed() throws {
        let error = try #require(
            heraldError { try JSONResponseSerializer().serialize(response: json, data: Data(#"{"a":"#.utf8)) })
        #expect(error.code == .serializationFailed)
        #expect(error.underlying != nil)
        #expect(error.statusCode == 200)
    }

    @Test(
        "204/205, an empty body and a whitespace-only body (after a byte-order mark too) serialize to nil",
        arguments: [(204, "{\"ignored\":1}"), (205, ""), (200, ""), (200, " "), (200, " \r\n\t "), (200, "\u{FEFF} ")])
    func emptyBodies(status: Int, body: String) throws {
        let response = makeResponse(status: status, contentType: "application/json")
        #expect(try JSONResponseSerializer().serialize(response: response, data: Data(body.utf8)) == nil)
    }

    @Test(
        "an absent body passes whatever its Content-Type, as the empty-body rules promise: whitespace, a 205's",
        arguments: [(200, " \r\n", "text/html"), (200, "\t", nil), (205, "x", "text/html"), (204, "", "text/plain")])
    func emptyBodiesWithAnyType(status: Int, body: String, contentType: String?) throws {
        let response = makeResponse(status: status, contentType: contentType)
        // Before, a body of whitespace (or a 205's) was checked as a body: unacceptableContentType.
        #expect(try JSONResponseSerializer().serialize(response: response, data: Data(body.utf8)) == nil)
        #expect(try DecodableResponseSerializer(Int?.self).serialize(response: response, data: Data(body.utf8)) == nil)
        // A body that is there is still checked.
        let full = makeResponse(status: 200, contentType: contentType)
        #expect(throws: HeraldError.self) {
            try JSONResponseSerializer().serialize(response: full, data: Data("1".utf8))
        }
    }

    @Test("a JSONValue decoded from an embedded document by a decoder with the outer one's userInfo is that document's")
    func embeddedDocument() throws {
        struct Event: Decodable, Sendable {
            let kind: String
            let payload: JSONValue
            init(from decoder: any Decoder) throws {
                enum Keys: String, CodingKey { case kind, payload }
                let container = try decoder.container(keyedBy: Keys.self)
                kind = try container.decode(String.self, forKey: .kind)
                // The payload is JSON inside a string, read with a decoder that keeps the outer one's context.
                let inner = JSONDecoder()
                for (key, value) in decoder.userInfo {
                    // What Herald put there, as a copy of the whole userInfo would carry it.
                    if let source = value as? JSONValueSource { inner.userInfo[key] = source }
                }
                payload = try inner.decode(
                    JSONValue.self, from: Data(try container.decode(String.self, forKey: .payload).utf8))
            }
        }
        let body = Data(#"{"kind":"k","payload":"{\"inner\":[1,2]}"}"#.utf8)
        let event = try DecodableResponseSerializer(Event.self).serialize(response: json, data: body)
        // Before, the inner decode at coding path [] took the outer body's root.
        #expect(event.payload == ["inner": [1, 2]])
        #expect(event.kind == "k")
        // An embedded document with the outer one's outline (the same member names): before, its outline passed
        // the check, and the payload was the outer document.
        let alike = Data(#"{"kind":"k","payload":"{\"kind\":\"x\",\"payload\":\"y\"}"}"#.utf8)
        let nested = try DecodableResponseSerializer(Event.self).serialize(response: json, data: alike)
        #expect(nested.payload == ["kind": "x", "payload": "y"])
    }

    @Test("a JSONValue output, or one inside a Decodable type, is read by Herald's parser at any depth")
    func jsonValueDepth() throws {
        let deep = String(repeating: "[", count: 100) + "1" + String(repeating: "]", count: 100)
        let value = try DecodableResponseSerializer(JSONValue.self).serialize(response: json, data: Data(deep.utf8))
        var innermost = value
        for _ in 0..<100 { innermost = try #require(innermost.arrayValue?.first) }
        #expect(innermost == 1)
        let optional = try DecodableResponseSerializer(JSONValue?.self).serialize(response: json, data: Data(deep.utf8))
        #expect(optional == value)

        struct Envelope: Decodable, Sendable {
            let id: Int
            let meta: JSONValue
            let items: [JSONValue]
            let created: Date
        }
        let body = Data(
            ("{\"id\":7,\"created\":0,\"items\":[{\"a\":[true]},null,\"x\"],\"meta\":"
                + String(repeating: "{\"a\":", count: 100) + "[]" + String(repeating: "}", count: 100) + "}").utf8)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let envelope = try DecodableResponseSerializer(Envelope.self, decoder: decoder).serialize(
            response: json, data: body)
        #expect(envelope.id == 7 && envelope.created == Date(timeIntervalSince1970: 0))
        #expect(envelope.items == [["a": [true]], nil, "x"])
        var level = envelope.meta
        for _ in 0..<100 { level = try #require(level["a"]) }
        #expect(level == [])

        // A JSONDecoder of the caller's own meets the bound instead.
        let error = try #require(throws: DecodingError.self) { try JSONDecoder().decode(Envelope.self, from: body) }
        guard case .dataCorrupted(let context) = error else { throw error }
        #expect(context.debugDescription.contains("deeper than \(JSONValue.maximumDecodingDepth)"))

        // A repeated name: the decoder keeps the first, and so does every JSONValue inside the type.
        struct Pair: Decodable, Sendable {
            let id: Int
            let meta: JSONValue
        }
        struct Twice: Decodable, Sendable { let u: Pair }
        let twice = try DecodableResponseSerializer(Twice.self).serialize(
            response: json, data: Data(#"{"u":{"id":1,"meta":"first"},"u":{"id":2,"meta":"second"}}"#.utf8))
        #expect(twice.u.id == 1 && twice.u.meta == "first")

        // Converting keys, the decoder's own way applies (shallow here) and finds the same values.
        struct Snake: Decodable, Sendable { let metaData: JSONValue }
        let snakeDecoder = JSONDecoder()
        snakeDecoder.keyDecodingStrategy = .convertFromSnakeCase
        let snake = try DecodableResponseSerializer(Snake.self, decoder: snakeDecoder).serialize(
            response: json, data: Data(#"{"meta_data":{"b":[1,"two"]}}"#.utf8))
        #expect(snake.metaData == ["b": [1, "two"]])
    }

    @Test("removesKeysWithNullValues drops null members recursively but keeps null array elements")
    func removesNulls() throws {
        let body = Data(#"{"a":null,"b":{"c":null,"d":1},"e":[null,{"f":null}]}"#.utf8)
        let value = try JSONResponseSerializer(removesKeysWithNullValues: true).serialize(response: json, data: body)
        #expect(value == ["b": ["d": 1], "e": [nil, [:]]])
        let kept = try JSONResponseSerializer().serialize(response: json, data: body)
        #expect(kept?["a"] == .null)
    }

    @Test("deeply nested input fails cleanly instead of crashing")
    func deepNesting() throws {
        let body = Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
        let error = heraldError { try JSONResponseSerializer().serialize(response: json, data: body) }
        #expect(error?.code == .serializationFailed)
    }

    @Test("the erased form keeps the optional output")
    func erased() throws {
        let output = try JSONResponseSerializer().serializeErased(response: json, data: Data("[1]".utf8))
        #expect(output as? JSONValue? == .some([1]))
    }
}

@Suite("Decodable response serializer")
struct DecodableResponseSerializerTests {
    struct User: Decodable, Sendable, Equatable {
        var name: String
        var joined: Date
    }

    let json = makeResponse(contentType: "application/json")

    @Test("a matching body decodes with the injected decoder")
    func decodes() throws {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let user = try DecodableResponseSerializer(User.self, decoder: decoder)
            .serialize(response: json, data: Data(#"{"name":"Ada","joined":0}"#.utf8))
        #expect(user == User(name: "Ada", joined: Date(timeIntervalSince1970: 0)))
    }

    @Test("a body of the wrong shape fails with serializationFailed carrying the DecodingError")
    func wrongShape() throws {
        let error = try #require(
            heraldError {
                try DecodableResponseSerializer(User.self).serialize(response: json, data: Data(#"{"name":1}"#.utf8))
            })
        #expect(error.code == .serializationFailed)
        #expect(error.underlying is DecodingError)
        #expect(error.message.contains("User"))
    }

    @Test("a 404 fails with unacceptableStatusCode before decoding, and a text/html body with unacceptableContentType")
    func validation() throws {
        let status = heraldError {
            try DecodableResponseSerializer(User.self).serialize(
                response: makeResponse(status: 404, contentType: "application/json"), data: Data("{}".utf8))
        }
        #expect(status?.code == .unacceptableStatusCode)
        let type = heraldError {
            try DecodableResponseSerializer(User.self).serialize(
                response: makeResponse(contentType: "text/html"), data: Data("{}".utf8))
        }
        #expect(type?.code == .unacceptableContentType)
    }

    @Test("an empty body decodes to nil for an Optional type and fails for a non-optional one")
    func emptyBody() throws {
        let none = try DecodableResponseSerializer(User?.self).serialize(
            response: makeResponse(status: 204), data: Data())
        #expect(none == nil)
        let error = heraldError {
            try DecodableResponseSerializer(User.self).serialize(response: makeResponse(status: 204), data: Data())
        }
        #expect(error?.code == .serializationFailed)
    }
}
