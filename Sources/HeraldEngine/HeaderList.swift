import CCurl

/// The request header lines of a transfer as libcurl takes them (`CURLOPT_HTTPHEADER`), made from the fields
/// and freed when the last transfer that sends them is gone.
///
/// Building a list takes an allocation per line and a copy of every byte. Consecutive requests of a session
/// mostly send the same fields (the defaults and the session's additional headers), so the session keeps its
/// last list (``EasyHandlePool/headerList(for:)``) and a transfer with the same ``Key`` shares it. libcurl only
/// reads a list, while a transfer runs, and each transfer holds the list it sends.
final class HeaderList: @unchecked Sendable {
    // Safety: `head` is written once, in `init`, and libcurl only reads the list.

    /// What a list is made from. Two keys are equal when their lines would be the same bytes: `String`'s own `==`
    /// takes canonically equivalent text for equal (`e\u{301}` and `\u{e9}`), and a list made for one would send
    /// the other's bytes.
    struct Key: Equatable, Sendable {
        /// The request's fields, in order.
        var headers: HeaderFields
        /// The session's cookies for the URL, sent unless `headers` has a `Cookie` of its own.
        var cookie: String?
        /// Whether the body is decoded, so `Accept-Encoding` is sent (unless `headers` has one).
        var decodesContent: Bool
        /// Whether a body is sent, so `Expect:` turns off waiting for `100 Continue` (unless `headers` has one).
        var sendsBody: Bool

        static func == (lhs: Key, rhs: Key) -> Bool {
            guard lhs.decodesContent == rhs.decodesContent, lhs.sendsBody == rhs.sendsBody,
                lhs.headers.count == rhs.headers.count
            else { return false }
            switch (lhs.cookie, rhs.cookie) {
            case (nil, nil): break
            case (let left?, let right?) where left.hasSameBytes(as: right): break
            default: return false
            }
            return zip(lhs.headers, rhs.headers).allSatisfy { left, right in
                left.name.hasSameBytes(as: right.name) && left.value.hasSameBytes(as: right.value)
            }
        }

        /// Whether the lines include cookies or a credential (`Authorization`, `Proxy-Authorization`).
        var carriesSecrets: Bool {
            cookie != nil
                || headers.contains {
                    $0.name.caseInsensitiveEquals("Authorization") || $0.name.caseInsensitiveEquals("Cookie")
                        || $0.name.caseInsensitiveEquals("Proxy-Authorization")
                }
        }
    }

    let key: Key
    /// The first line, or `nil` for none.
    let head: UnsafeMutablePointer<curl_slist>?

    init(key: Key) {
        self.key = key
        var list: UnsafeMutablePointer<curl_slist>?
        // Each line is assembled as bytes in one buffer reused for every field (curl copies it): building a
        // String per line cost about four appends and an allocation each.
        var line = ContiguousArray<UInt8>()
        line.reserveCapacity(256)
        func appendBytes(of text: String) {
            // A native string's bytes are contiguous: one copy, not an element-by-element append.
            if text.utf8.withContiguousStorageIfAvailable({ line.append(contentsOf: $0) }) == nil {
                line.append(contentsOf: text.utf8)
            }
        }
        func append(name: String, value: String) {
            line.removeAll(keepingCapacity: true)
            appendBytes(of: name)
            if value.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                // "Name:" with nothing but blanks after it would tell curl to remove the header (and its own
                // default of that name); "Name;" sends it with an empty value, which blanks around it are not.
                line.append(UInt8(ascii: ";"))
            } else {
                line.append(UInt8(ascii: ":"))
                line.append(UInt8(ascii: " "))
                appendBytes(of: value)
            }
            line.append(0)
            list = line.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { curl_slist_append(list, $0.baseAddress) }
            }
        }
        for field in key.headers {
            append(name: field.name, value: field.value)
        }
        if let cookie = key.cookie, !key.headers.contains("Cookie") {
            append(name: "Cookie", value: cookie)
        }
        if key.decodesContent, let header = CurlFeatures.acceptEncodingHeader,
            !key.headers.contains("Accept-Encoding")
        {
            // What curl would send for CURLOPT_ACCEPT_ENCODING "", at a fraction of its cost (see CurlFeatures).
            list = header.withUnsafeBufferPointer { curl_slist_append(list, $0.baseAddress) }
        }
        if key.sendsBody, !key.headers.contains("Expect") {
            // curl waits up to a second for "100 Continue" on larger bodies; never stall an upload on it.
            list = curl_slist_append(list, "Expect:")
        }
        head = list
    }

    deinit {
        if let head { curl_slist_free_all(head) }
    }
}
