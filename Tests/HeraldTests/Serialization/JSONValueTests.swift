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

    @Test("integral numbers are written as integers, never with an exponent; intValue refuses what may be rounded")
    func largeIntegers() throws {
        let value: JSONValue = ["id": .number(1e16), "big": .number(9_007_199_254_740_992), "half": 0.5]
        let encoded = try #require(String(data: try JSONEncoder().encode(value), encoding: .utf8))
        #expect(encoded.contains("10000000000000000") && !encoded.contains("e+"))
        #expect(value.description.contains("\"id\":10000000000000000"))
        let request = try JSONRequestSerializer().serialize(
            Request(url: URL(fileURLWithPath: "/"), method: "POST"), parameters: ["id": .number(1e16)])
        #expect(request.body.map { String(decoding: $0, as: UTF8.self) } == #"{"id":10000000000000000}"#)

        #expect(try JSONParser.parse(Data("9007199254740993".utf8)).intValue == nil)
        #expect(try JSONParser.parse(Data("9007199254740991".utf8)).intValue == 9_007_199_254_740_991)
        #expect(try JSONParser.parse(Data("-9007199254740991".utf8)).intValue == -9_007_199_254_740_991)
    }

    @Test("a value the encoder refuses fails with a bounded message, however large the value")
    func boundedEncodingError() throws {
        struct Refused: Encodable {
            func encode(to encoder: any Encoder) throws {
                throw EncodingError.invalidValue(
                    String(repeating: "secret", count: 10_000),
                    EncodingError.Context(codingPath: [], debugDescription: "refused"))
            }
        }
        let error = try #require(
            throws: HeraldError.self,
            performing: {
                try JSONRequestSerializer().serialize(Request(url: URL(fileURLWithPath: "/")), encodable: Refused())
            })
        #expect(error.code == .invalidRequest)
        #expect(error.message.count < 300)
    }
}
