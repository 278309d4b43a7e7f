// Lists every public symbol without a doc comment in the given symbol graphs and exits 1 if there is
// any. `make docs-coverage` runs it over the graphs the DocC plugin extracted:
//
//     swift .ci/doc-coverage.swift .build-docs/*/extracted-symbols/*/Herald/*.symbols.json
//
// Counted: public and open symbols declared in this package (their own `///` comment, not one inherited
// from a protocol of another module). Skipped: members the compiler synthesizes or inherits from other
// modules' protocol extensions (`!=`, `Sequence.map`, …), whose identifiers carry `::SYNTHESIZED::`,
// members the compiler declares itself (no source location: `init(rawValue:)`, `init(from:)`), and
// extension blocks themselves (their members are counted).
import Foundation

struct Symbol {
    let module: String
    let path: String
    let kind: String
    let documented: Bool
}

var symbols: [Symbol] = []
for file in CommandLine.arguments.dropFirst() {
    guard let data = FileManager.default.contents(atPath: file),
        let graph = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
        let list = graph["symbols"] as? [[String: Any]]
    else {
        FileHandle.standardError.write(Data("doc-coverage: cannot read \(file)\n".utf8))
        exit(2)
    }
    let module = ((graph["module"] as? [String: Any])?["name"] as? String) ?? "?"
    for symbol in list {
        let identifier = (symbol["identifier"] as? [String: Any])?["precise"] as? String ?? ""
        let access = symbol["accessLevel"] as? String ?? ""
        guard access == "public" || access == "open", !identifier.contains("::SYNTHESIZED::") else { continue }
        // No source location: the compiler declared it (`init(rawValue:)`, `Decodable.init(from:)`).
        guard symbol["location"] != nil else { continue }
        let kind = ((symbol["kind"] as? [String: Any])?["displayName"] as? String) ?? "?"
        // `extension NotificationHub { … }` itself: its members are counted, the extension has no comment.
        guard (symbol["kind"] as? [String: Any])?["identifier"] as? String != "swift.extension" else { continue }
        let path = (symbol["pathComponents"] as? [String])?.joined(separator: ".") ?? identifier
        let lines = ((symbol["docComment"] as? [String: Any])?["lines"] as? [[String: Any]]) ?? []
        let text = lines.compactMap { $0["text"] as? String }.joined().trimmingCharacters(in: .whitespaces)
        // A comment from another module (e.g. the stdlib's, on a conformance) is not ours.
        let commentModule = (symbol["docComment"] as? [String: Any])?["module"] as? String
        let ours = commentModule == nil || commentModule == module
        symbols.append(Symbol(module: module, path: path, kind: kind, documented: !text.isEmpty && ours))
    }
}

// Extension graphs (`Herald@HeraldNotifications`) repeat the extended type itself; count each path once.
var seen = Set<String>()
let unique = symbols.filter { seen.insert("\($0.module) \($0.path) \($0.kind)").inserted }
let missing = unique.filter { !$0.documented }
let modules = Dictionary(grouping: unique, by: \.module)
for (module, list) in modules.sorted(by: { $0.key < $1.key }) {
    let documented = list.filter(\.documented).count
    print("\(module): \(documented)/\(list.count) public symbols documented")
}
for symbol in missing.sorted(by: { ($0.module, $0.path) < ($1.module, $1.path) }) {
    print("  undocumented: \(symbol.module) \(symbol.kind) \(symbol.path)")
}
exit(missing.isEmpty ? 0 : 1)
