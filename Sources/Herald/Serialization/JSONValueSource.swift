import Foundation
import HeraldNotifications

/// A response body as `JSONParser` reads it, for the `JSONValue`s a `JSONDecoder` meets in it: such a value
/// takes its subtree from here, found by its coding path, instead of asking the decoder for each kind of value
/// in turn (each miss costs `JSONDecoder` the square of the depth). Parsed on first use, once.
final class JSONValueSource: Sendable {
    /// Where a decoder's `userInfo` holds the source.
    static let key = CodingUserInfoKey(rawValue: "herald.json-value-source")

    private let body: Data
    /// The parsed body: not yet parsed, parsed, or not parsed (`nil`: the decoder's own way then applies).
    private let parsed = Locked<JSONValue??>(nil)
    /// The decoder reading the body (`JSONDecoder` passes one object to every `init(from:)` of a document), once
    /// ``Root`` has seen it: a decoder made in an `init(from:)` to read another document, with the outer one's
    /// `userInfo`, is another object, and the source is not its document.
    private let reader = Locked<ObjectIdentifier?>(nil)

    /// What a decoder with a source decodes: `T`, at the root of the body, after telling the source which
    /// decoder reads it.
    struct Root<T: Decodable>: Decodable {
        let value: T

        init(from decoder: any Decoder) throws {
            if let source = JSONValueSource.key.flatMap({ decoder.userInfo[$0] }) as? JSONValueSource {
                source.reader.withLock { $0 = $0 ?? ObjectIdentifier(decoder as AnyObject) }
            }
            value = try decoder.singleValueContainer().decode(T.self)
        }
    }

    /// Whether `decoder` reads this source's body (not another document, with a copy of its `userInfo`).
    func isRead(by decoder: any Decoder) -> Bool {
        reader.withLock { $0 == ObjectIdentifier(decoder as AnyObject) }
    }

    private init(body: Data) {
        self.body = body
    }

    /// A decoder with `decoder`'s settings whose `JSONValue`s read `body` through a source; `decoder` itself
    /// when it converts keys (a coding path then names other keys than the body's), reads JSON5, or is a
    /// subclass. A decoder with a source decodes ``Root`` of the type asked for.
    static func decoder(like decoder: JSONDecoder, reading body: Data) -> JSONDecoder {
        // A subclass may decode its own way: it is used as it is.
        guard case .useDefaultKeys = decoder.keyDecodingStrategy, !decoder.allowsJSON5,
            type(of: decoder) == JSONDecoder.self, let key
        else { return decoder }
        let copy = JSONDecoder()
        copy.dateDecodingStrategy = decoder.dateDecodingStrategy
        copy.dataDecodingStrategy = decoder.dataDecodingStrategy
        copy.nonConformingFloatDecodingStrategy = decoder.nonConformingFloatDecodingStrategy
        copy.assumesTopLevelDictionary = decoder.assumesTopLevelDictionary
        copy.userInfo = decoder.userInfo
        copy.userInfo[key] = JSONValueSource(body: body)
        return copy
    }

    /// The value at `path` in the body, or `nil` when the body is not JSON `JSONParser` reads or nothing is
    /// there.
    func value(at path: [any CodingKey]) -> JSONValue? {
        let root = parsed.withLock { parsed -> JSONValue? in
            if let parsed { return parsed }
            // A repeated member name keeps its first value, as the decoder reading the rest of the body does.
            let value = try? JSONParser.parse(body, keepsFirstDuplicate: true)
            parsed = .some(value)
            return value
        }
        guard var node = root else { return nil }
        for key in path {
            switch node {
            case .object(let members):
                guard let member = members[key.stringValue] else { return nil }
                node = member
            case .array(let elements):
                guard let index = key.intValue, elements.indices.contains(index) else { return nil }
                node = elements[index]
            default:
                return nil
            }
        }
        return node
    }
}
