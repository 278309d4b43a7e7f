extension JSONValue: Codable {
    /// How deep in a decoded document (its coding path) a `JSONValue` may be decoded through a `Decoder`.
    ///
    /// A decoder such as `JSONDecoder` can't say which kind of value comes next: a `JSONValue` asks for each
    /// kind in turn, and `JSONDecoder` pays for each miss in proportion to the square of the depth, so a deep
    /// document of a few hundred kilobytes takes seconds to minutes. ``DecodableResponseSerializer`` doesn't
    /// go that way: a `JSONValue` anywhere in its output type takes its value from the body as
    /// ``JSONResponseSerializer`` reads it, in linear time, at any depth up to 512 (unless the decoder converts
    /// keys, reads JSON5 or is a subclass). This limit is for decoding with a `JSONDecoder` of your own.
    public static let maximumDecodingDepth = 32

    /// Decodes any JSON value.
    ///
    /// - Parameter decoder: The decoder to read from.
    /// - Throws: `DecodingError.dataCorrupted` when the value is none of the JSON types, or lies deeper than
    ///   ``maximumDecodingDepth`` in the document.
    public init(from decoder: any Decoder) throws {
        let path = decoder.codingPath
        if let source = JSONValueSource.key.flatMap({ decoder.userInfo[$0] }) as? JSONValueSource,
            source.isRead(by: decoder), let value = source.value(at: path), Self.decoder(decoder, reads: value)
        {
            self = value
            return
        }
        guard path.count <= Self.maximumDecodingDepth else {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: Self.tooDeep))
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try Self.unlessTooDeep({ try container.decode([JSONValue].self) }) {
            self = .array(value)
        } else if let value = try Self.unlessTooDeep({ try container.decode([String: JSONValue].self) }) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    /// Whether `decoder` is at `value` in the document it reads, a check on the value's outline (its kind and
    /// scalar, its element count, or its member names) beside the source's own (``JSONValueSource/isRead(by:)``:
    /// a decoder made in an `init(from:)` with the outer decoder's `userInfo`, to read an embedded document, is
    /// not the body's); a value that fails it is decoded the decoder's way.
    private static func decoder(_ decoder: any Decoder, reads value: JSONValue) -> Bool {
        switch value {
        case .null:
            return (try? decoder.singleValueContainer().decodeNil()) == true
        case .bool(let bool):
            return (try? decoder.singleValueContainer().decode(Bool.self)) == bool
        case .number(let number):
            return (try? decoder.singleValueContainer().decode(Double.self)) == number
        case .string(let string):
            return (try? decoder.singleValueContainer().decode(String.self)) == string
        case .array(let elements):
            return (try? decoder.unkeyedContainer().count) == elements.count
        case .object(let members):
            guard let keys = try? decoder.container(keyedBy: AnyCodingKey.self).allKeys else { return false }
            return keys.count == members.count && keys.allSatisfy { members[$0.stringValue] != nil }
        }
    }

    private static let tooDeep =
        "a JSONValue nested deeper than \(maximumDecodingDepth) levels; parse such a body with JSONResponseSerializer"

    /// What `decode` returns, or `nil` when it fails for being another kind of value; a value too deep below
    /// fails the whole decoding.
    private static func unlessTooDeep<T>(_ decode: () throws -> T) throws -> T? {
        do {
            return try decode()
        } catch DecodingError.dataCorrupted(let context) where context.debugDescription == tooDeep {
            throw DecodingError.dataCorrupted(context)
        } catch {
            return nil
        }
    }

    /// Encodes the value as the JSON it represents.
    ///
    /// - Parameter encoder: The encoder to write to.
    /// - Throws: Whatever the encoder throws, such as for a non-finite number.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            // An integral value as an integer (`10000000000000000`, not `1e+16`), which strict parsers require.
            if let integer = Int64(exactly: value) {
                try container.encode(integer)
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

/// Any member name, for reading an object's names.
private struct AnyCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }
}
