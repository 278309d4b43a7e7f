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
