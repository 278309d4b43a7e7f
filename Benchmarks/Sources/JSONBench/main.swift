// JSONBench: Herald's JSON parser (JSONResponseSerializer → JSONValue) side by side with Foundation's
// JSONSerialization plus a conversion of its result to JSONValue — what Herald would do without its own
// parser — and JSONDecoder decoding JSONValue.
//
//     cd Benchmarks && swift run -c release JSONBench [--seconds S]
//
// Each figure is the best of five timed rounds of at least S seconds (default 0.2) after a warm-up. All
// three must produce the same JSONValue, checked once per document. Benchmarks report; they never fail.
import Foundation
import Herald

var roundSeconds = 0.2
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--seconds": roundSeconds = arguments.popFirst().flatMap(Double.init) ?? roundSeconds
    default:
        FileHandle.standardError.write(Data("usage: JSONBench [--seconds S]\n".utf8))
        exit(2)
    }
}

let response = HTTPResponse(
    url: URL(string: "http://127.0.0.1/bench.json")!, statusCode: 200,
    headers: ["Content-Type": "application/json"])
let serializer = JSONResponseSerializer()

/// Herald: validation (status, content type) and the single-pass parser.
func herald(_ data: Data) -> JSONValue? {
    try? serializer.serialize(response: response, data: data)
}

/// JSONSerialization, then its `Any` tree converted to JSONValue.
func foundation(_ data: Data) -> JSONValue? {
    guard let object = try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed) else { return nil }
    return convert(object)
}

private let booleanClass = ObjectIdentifier(type(of: NSNumber(value: true)))

func convert(_ object: Any) -> JSONValue {
    switch object {
    case let string as String: return .string(string)
    case let number as NSNumber:
        // JSONSerialization answers true/false as the boolean NSNumber subclass; `as? Bool` would also
        // accept the numbers 0 and 1.
        if ObjectIdentifier(type(of: number)) == booleanClass { return .bool(number.boolValue) }
        return .number(number.doubleValue)
    case let array as [Any]: return .array(array.map(convert))
    case let dictionary as [String: Any]: return .object(dictionary.mapValues(convert))
    default: return .null  // NSNull
    }
}

/// JSONDecoder decoding JSONValue through its Codable conformance.
func decoder(_ data: Data) -> JSONValue? {
    try? JSONDecoder().decode(JSONValue.self, from: data)
}

/// Best seconds per call over five rounds of at least `roundSeconds` each.
func measure(_ data: Data, roundSeconds: Double, _ body: (Data) -> JSONValue?) -> Double {
    var sink = 0
    for _ in 0..<3 { sink &+= body(data) == nil ? 0 : 1 }
    var best = Double.infinity
    for _ in 0..<5 {
        var calls = 0
        let clock = ContinuousClock()
        let start = clock.now
        var elapsed = 0.0
        repeat {
            sink &+= body(data) == nil ? 0 : 1
            calls += 1
            let duration = clock.now - start
            elapsed = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        } while elapsed < roundSeconds
        best = min(best, elapsed / Double(calls))
    }
    if sink == 0 { print("(nothing parsed)") }
    return best
}

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return right ? padding + text : text + padding
}

print(
    pad("document", 40) + pad("Herald µs", 12, right: true) + pad("JSONSer.+conv µs", 18, right: true)
        + pad("ratio", 8, right: true) + pad("JSONDecoder µs", 16, right: true) + pad("Herald MB/s", 13, right: true))
/// Where two values first differ, as a path and both sides, or `nil` when they are equal.
func firstDifference(_ left: JSONValue?, _ right: JSONValue?, path: String = "$") -> String? {
    switch (left, right) {
    case (.array(let a)?, .array(let b)?) where a.count == b.count:
        for index in a.indices {
            if let difference = firstDifference(a[index], b[index], path: "\(path)[\(index)]") { return difference }
        }
        return nil
    case (.object(let a)?, .object(let b)?) where a.keys == b.keys:
        for key in a.keys.sorted() {
            if let difference = firstDifference(a[key], b[key], path: "\(path).\(key)") { return difference }
        }
        return nil
    default:
        return left == right ? nil : "\(path): \(left.map { "\($0)" } ?? "nil") vs \(right.map { "\($0)" } ?? "nil")"
    }
}

var differences: [String] = []
for (name, data) in Documents.all {
    let reference = herald(data)
    let others = [("JSONSerialization", foundation(data)), ("JSONDecoder", decoder(data))]
    for (other, value) in others {
        if let difference = firstDifference(reference, value) {
            differences.append("\(name): Herald and \(other) differ at \(difference)")
        }
    }
    let same = reference != nil && others.allSatisfy { $0.1 == reference }
    let heraldSeconds = measure(data, roundSeconds: roundSeconds, herald)
    let foundationSeconds = measure(data, roundSeconds: roundSeconds, foundation)
    let decoderSeconds = measure(data, roundSeconds: roundSeconds, decoder)
    print(
        pad(name, 40) + pad(format(heraldSeconds * 1e6), 12, right: true)
            + pad(format(foundationSeconds * 1e6), 18, right: true)
            + pad(format(foundationSeconds / heraldSeconds, 2) + "×", 8, right: true)
            + pad(format(decoderSeconds * 1e6), 16, right: true)
            + pad(format(Double(data.count) / heraldSeconds / 1e6), 13, right: true)
            + (same ? "" : "  (results differ!)"))
}
print("(ratio = JSONSerialization + conversion time / Herald time; higher means Herald is faster)")
for difference in differences { print(difference) }
