// NotificationBench: Herald's NotificationHub side by side with Foundation's NotificationCenter.
//
//     cd Benchmarks && swift run -c release NotificationBench [--json FILE] [--row KEY ...]
//
// --row runs only the rows named (repeatable; keys: one, sender, filtered, thousand, payload, nobody, queue), for
// profiling one row alone, e.g. under `perf record` or `valgrind --tool=callgrind`.
// Every row is the best of several runs after a warm-up. Benchmarks report; they never fail.
import Foundation

let allRows: KeyValuePairs<String, () -> Row> = [
    "one": { postToOneObserver() },
    "sender": { postToOneObserver(naming: BenchSender()) },
    "filtered": postToOneOfTenThousand,
    "thousand": postToThousandObservers,
    "payload": postFiveFieldPayload,
    "nobody": postToNobody,
    "queue": queueThroughput,
]

@MainActor func usage() -> Never {
    let keys = allRows.map(\.key).joined(separator: "|")
    FileHandle.standardError.write(Data("usage: NotificationBench [--json FILE] [--row \(keys)]...\n".utf8))
    exit(2)
}

var jsonPath: String?
var selected: Set<String> = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--json":
        guard let path = arguments.popFirst() else { usage() }
        jsonPath = path
    case "--row":
        guard let key = arguments.popFirst(), allRows.contains(where: { $0.key == key }) else { usage() }
        selected.insert(key)
    default:
        usage()
    }
}

let rows = allRows.filter { selected.isEmpty || selected.contains($0.key) }.map { $0.value() }

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return right ? padding + text : text + padding
}

print(
    pad("benchmark", 50) + pad("Herald ns", 12, right: true) + pad("Foundation ns", 15, right: true)
        + pad("ratio", 10, right: true))
for row in rows {
    print(
        pad(row.name, 50) + pad(format(row.ns), 12, right: true) + pad(format(row.foundationNs), 15, right: true)
            + pad(format(row.ratio) + "×", 10, right: true))
}
if selected.isEmpty || selected.contains("queue"), let queue = rows.last {
    print(
        "queue throughput: Herald \(format(1e9 / queue.ns / 1e6, 2)) M notifications/s, "
            + "Foundation \(format(1e9 / queue.foundationNs / 1e6, 3)) M notifications/s")
}
print("(ratio = Foundation ns / Herald ns; sink \(sink % 10))")

if let jsonPath {
    let objects = rows.map { row -> [String: Any] in
        ["name": row.name, "ns": row.ns, "foundation_ns": row.foundationNs, "ratio": row.ratio]
    }
    let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])
    try data.write(to: URL(fileURLWithPath: jsonPath))
    print("wrote \(jsonPath)")
}
