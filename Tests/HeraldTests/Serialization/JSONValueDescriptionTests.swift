import Foundation
import Herald
import Testing

@Suite("JSONValue: description and string interpolation")
struct JSONValueDescriptionTests {
    @Test("description is compact JSON, keys sorted, integral numbers without .0")
    func compactText() {
        let value: JSONValue = ["name": "x", "id": 1, "ratio": 0.5, "ok": true, "none": nil, "tags": ["a", 2]]
        #expect(value.description == #"{"id":1,"name":"x","none":null,"ok":true,"ratio":0.5,"tags":["a",2]}"#)
        #expect(JSONValue.number(-3).description == "-3")
        #expect(JSONValue.number(-0.0).description == "0")
        #expect(JSONValue.number(1e100).description == "1e+100")
        #expect(JSONValue.number(9_007_199_254_740_991).description == "9007199254740991")
        #expect(JSONValue.array([]).description == "[]")
        #expect(JSONValue.object([:]).description == "{}")
        #expect(JSONValue.number(.nan).description == "nan")
    }

    @Test("strings are escaped as JSON requires and round-trip through JSONDecoder")
    func escaping() throws {
        let value: JSONValue = ["k\"ey": "line\nnext\t\"q\" back\\slash \u{01} é 🚀"]
        #expect(value.description == #"{"k\"ey":"line\nnext\t\"q\" back\\slash \u0001 é 🚀"}"#)
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(value.description.utf8))
        #expect(decoded == value)
    }

    @Test("print, interpolation and Optional show the JSON text, not the enum cases")
    func printing() {
        let value: JSONValue = ["id": 1]
        #expect("\(value)" == #"{"id":1}"#)
        #expect(String(describing: value as any Sendable) == #"{"id":1}"#)
        let optional: JSONValue? = value
        #expect(String(describing: optional) == #"Optional({"id":1})"#)
        #expect(value.debugDescription == #"{"id":1}"#)
    }

    @Test("string interpolation builds a string value")
    func interpolation() {
        let user = "Ada"
        let count = 3
        let value: JSONValue = ["name": "\(user)", "label": "\(user) has \(count) items"]
        #expect(value["name"] == .string("Ada"))
        #expect(value["label"]?.stringValue == "Ada has 3 items")
        let plain: JSONValue = "no interpolation"
        #expect(plain == .string("no interpolation"))
    }
}
