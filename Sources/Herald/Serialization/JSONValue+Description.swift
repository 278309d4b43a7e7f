extension JSONValue: CustomStringConvertible {
    /// The value as compact JSON text, such as `{"id":1,"name":"Ada","tags":["a","b"]}`.
    ///
    /// No whitespace is added and object members are sorted by key, so equal values print alike. A number
    /// with no fractional part that fits an `Int64` prints as an integer (`1`, not `1.0`; `10000000000000000`,
    /// not `1e+16`); other numbers print as Swift prints a `Double` (`0.5`, `1e+100`). Strings are escaped as JSON requires (`\"`, `\\`,
    /// `\n`, `\u001F`, …), other characters written as they are. A NaN or infinite number, which JSON can't
    /// represent, prints as `nan`, `inf` or `-inf`: the text is then not JSON.
    public var description: String {
        var text = ""
        write(to: &text)
        return text
    }

    /// Appends this value's compact JSON text to `text`.
    private func write(to text: inout String) {
        switch self {
        case .null:
            text += "null"
        case .bool(let value):
            text += value ? "true" : "false"
        case .number(let value):
            text += Self.numberText(value)
        case .string(let value):
            Self.writeString(value, to: &text)
        case .array(let elements):
            text += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { text += "," }
                element.write(to: &text)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { text += "," }
                Self.writeString(key, to: &text)
                text += ":"
                members[key]!.write(to: &text)
            }
            text += "}"
        }
    }

    /// A number as JSON text: integral values that fit an `Int64` as integers, without `.0` or an exponent.
    private static func numberText(_ value: Double) -> String {
        Int64(exactly: value).map { String($0) } ?? value.description
    }

    /// Appends `string` as a quoted, escaped JSON string.
    private static func writeString(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}

extension JSONValue: CustomDebugStringConvertible {
    /// The value as compact JSON text, as ``description`` writes it.
    ///
    /// `print(optionalValue)` and string interpolation of an `Optional<JSONValue>` use this, so they show
    /// `Optional({"id":1})` rather than the enum's cases.
    public var debugDescription: String { description }
}
