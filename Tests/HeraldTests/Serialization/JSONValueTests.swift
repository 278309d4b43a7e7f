import Foundation
import Testing

@testable import Herald

@Suite("JSONValue")
struct JSONValueTests {
    let value: JSONValue = ["name": "Ada", "age": 36, "ratio": 0.5, "admin": false, "tags": ["a", "b"], "boss": nil]

    @Test("literals build the matching cases")
    func literals() {
        #expect(value["name"] == .string("Ada"))
        #expect(value["age"] == .number(36))
        #expect(value["ratio"] == .number(0.5))
        #expect(value["admin"] == .bool(false))
        #expect(value["tags"] == .array([.string("a"), .string("b")]))
        #expect(value["boss"] == .null)
    }

    @Test("subscripts return nil for a missing key, an index out of bounds, or the wrong kind, never trap")
    func subscripts() {
        #expect(value["tags"]?[1] == "b")
        #expect(value["tags"]?[2] == nil)
        #expect(value["tags"]?[-1] == nil)
        #expect(value["missing"] == nil)
        #expect(value[0] == nil)
        #expect(value["name"]?["x"] == nil)
    }

    @Test("accessors return the payload only for their own case")
    func accessors() {
        #expect(value["name"]?.stringValue == "Ada")
        #expect(value["age"]?.doubleValue == 36)
        #expect(value["age"]?.intValue == 36)
        #expect(value["ratio"]?.intValue == nil)
        #expect(value["admin"]?.boolValue == false)
        #expect(value["age"]?.stringValue == nil)
        #expect(value["age"]?.boolValue == nil)
        #expect(value["tags"]?.arrayValue?.count == 2)
        #expect(value.objectValue?.count == 6)
        #expect(value["boss"]?.isNull == true)
        #expect(JSONValue.number(1e300).intValue == nil)
    }

    @Test("encoding and decoding round-trips, and booleans stay booleans")
    func codable() throws {
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data("[true,1,0]".utf8)) == [true, 1, 0])
    }
}
