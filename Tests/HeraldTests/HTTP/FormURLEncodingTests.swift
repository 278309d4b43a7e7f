import Foundation
import Herald
import Testing

@Suite("Form URL encoding: AFNetworking's query strings")
struct FormURLEncodingTests {
    @Test("a single pair is key=value")
    func singlePair() throws {
        #expect(try FormURLEncoding.query(from: ["key": "value"]) == "key=value")
    }

    @Test("reserved characters are escaped as AF escapes them; / and ? are kept")
    func afReservedCharacters() throws {
        // AF's testThatAFHTTPRequestSerialiationSerializesURLEncodableQueryParametersCorrectly.
        #expect(
            try FormURLEncoding.query(from: ["key": " :#[]@!$&'()*+,;=/?"])
                == "key=%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D/?")
    }

    @Test("already escaped text is escaped again: % becomes %25")
    func percentIsEscaped() throws {
        // AF's testThatAFHTTPRequestSerialiationSerializesURLEncodedQueryParametersCorrectly.
        #expect(
            try FormURLEncoding.query(from: ["key": "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F"])
                == "key=%2520%2521%2522%2523%2524%2525%2526%2527%2528%2529%252A%252B%252C%252F")
    }

    @Test("unreserved characters pass; non-ASCII text is escaped byte by byte in UTF-8")
    func unreservedAndUnicode() {
        #expect(FormURLEncoding.percentEscaped("AZaz09-._~") == "AZaz09-._~")
        #expect(FormURLEncoding.percentEscaped("café 😀") == "caf%C3%A9%20%F0%9F%98%80")
        #expect(FormURLEncoding.percentEscaped("a\"b\n") == "a%22b%0A")
    }

    @Test("keys are sorted; nested objects become a[b], arrays a[], brackets escaped")
    func nestedContainers() throws {
        let parameters: [String: JSONValue] = [
            "z": "last",
            "a": ["y": 2, "b": ["c": "deep"]],
            "list": [1, "two", ["k": "v"]],
        ]
        #expect(
            try FormURLEncoding.query(from: parameters)
                == "a%5Bb%5D%5Bc%5D=deep&a%5By%5D=2&list%5B%5D=1&list%5B%5D=two&list%5B%5D%5Bk%5D=v&z=last")
    }

    @Test("null is the key alone; booleans are 1 and 0; whole numbers have no fraction")
    func scalars() throws {
        let parameters: [String: JSONValue] = [
            "none": nil, "yes": true, "no": false, "int": 42, "negative": -7, "fraction": 1.5, "big": 1e21,
            "wide": .number(9_007_199_254_740_992), "nanos": .number(1.7e18),
        ]
        #expect(
            try FormURLEncoding.query(from: parameters)
                == "big=1e%2B21&fraction=1.5&int=42&nanos=1700000000000000000&negative=-7&no=0&none"
                + "&wide=9007199254740992&yes=1")
    }

    @Test("an empty object or array adds nothing")
    func emptyContainers() throws {
        #expect(try FormURLEncoding.query(from: ["a": [:], "b": [], "c": "x"]) == "c=x")
        #expect(try FormURLEncoding.query(from: [:]) == "")
    }

    @Test("NaN and infinity are refused with invalidRequest, naming the key")
    func nonFiniteNumbers() {
        for number in [Double.nan, .infinity, -.infinity] {
            #expect {
                try FormURLEncoding.query(from: ["outer": ["ratio": .number(number)]])
            } throws: { error in
                (error as? HeraldError)?.code == .invalidRequest
                    && (error as? HeraldError)?.message.contains("outer[ratio]") == true
            }
        }
    }
}
