import Foundation
import Herald

/// A URL a cookie test writes out as a literal (always valid, so never `nil`).
func testURL(_ text: String) -> URL { URL(string: text)! }

extension CookieStore {
    /// A store holding what `responses` set, each the `Set-Cookie` fields of one response to `url`, in order.
    static func after(_ responses: [String]..., from url: URL = testURL("http://h.example/")) -> CookieStore {
        let store = CookieStore()
        for fields in responses { store.store(setCookieFields: fields, from: url) }
        return store
    }

    /// The cookies kept, by name.
    var byName: [String: Cookie] {
        Dictionary(allCookies.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }
}

/// A folder of a test's own for cookie files and the lock files a store keeps beside them; `remove()` removes it.
struct CookieFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-cookies-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    }

    func file(_ name: String = "cookies.jsonl") -> URL { url.appendingPathComponent(name) }

    func remove() { try? FileManager.default.removeItem(at: url) }

    /// The names of the cookies `file` holds, decoded line by line as a store loads them.
    func cookieNames(in file: URL) throws -> Set<String> {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return Set(
            try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map {
                try decoder.decode(Cookie.self, from: Data($0.utf8)).name
            })
    }
}
