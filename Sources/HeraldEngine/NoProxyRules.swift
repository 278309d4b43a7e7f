import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Which hosts a proxy is not used for, decided here rather than by libcurl's `CURLOPT_NOPROXY`, whose rules
/// change with its version: CIDR ranges only from 7.86.0, IPv4 only, `*` only as the whole list, an IPv6
/// address only without brackets. A transfer then tells libcurl `*` (go direct) or nothing (use the proxy).
///
/// An entry is one of:
/// - `*`: every host;
/// - a name (`example.com`, `.example.com`): that host and its subdomains, ignoring case and a final dot;
/// - an IP address (`10.1.2.3`, `::1`, `[::1]`): that address, however it is spelled in the URL;
/// - a CIDR range (`10.0.0.0/8`, `fd00::/8`): every address in it.
///
/// Only a URL whose host is an IP address matches an address or a range: a name is not looked up for it.
package struct NoProxyRules: Sendable, Hashable {
    private enum Entry: Hashable {
        case everyHost
        case name(String)
        case address(family: Int32, bytes: [UInt8], prefixLength: Int)
    }

    private let entries: [Entry]

    /// Reads `entries`; one that is none of the forms above (a port, say) is a name that never matches a
    /// host with a port-free name, so ``Self/problem(in:)`` should have refused it first.
    package init(_ entries: [String]) {
        self.entries = entries.compactMap(Self.entry)
    }

    /// Why `entry` can't be used, or `nil` when it can: a name with a port, or a range whose prefix doesn't
    /// fit its address.
    package static func problem(in entry: String) -> String? {
        let text = entry.trimmingCharacters(in: .whitespaces)
        if text == "*" { return nil }
        let (address, prefix) = split(text)
        if let parsed = parseAddress(address) {
            guard let prefix else { return nil }
            guard let length = Int(prefix), length >= 0, length <= parsed.bytes.count * 8 else {
                return "the range \(text) has a prefix length that doesn't fit its address"
            }
            return nil
        }
        if prefix != nil { return "the range \(text) doesn't start with an IP address" }
        if text.contains(":") || text.contains("[") || text.contains("]") {
            return "\(text) is neither a host name nor an IP address (a port can't be named)"
        }
        if text.dropFirst(text.hasPrefix("*.") ? 2 : 0).contains("*") {
            return "\(text) has a * that is not the whole entry or a leading *."
        }
        return nil
    }

    /// Whether a request to `host` (a URL's host: a name or an IP address, IPv6 with or without brackets)
    /// goes direct.
    package func bypasses(host: String) -> Bool {
        guard !entries.isEmpty else { return false }
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.hasSuffix(".") { name.removeLast() }
        let address = (Self.parseAddress(name) ?? Self.shorthandIPv4(name)).map(Self.unmapped)
        for entry in entries {
            switch entry {
            case .everyHost:
                return true
            case .name(let suffix):
                if address == nil, name == suffix || name.hasSuffix("." + suffix) { return true }
            case .address(let family, let bytes, let prefixLength):
                if let address, address.family == family,
                    Self.sharePrefix(address.bytes, bytes, length: prefixLength)
                {
                    return true
                }
            }
        }
        return false
    }

    private static func entry(_ raw: String) -> Entry? {
        let text = raw.trimmingCharacters(in: .whitespaces).lowercased()
        if text.isEmpty { return nil }
        if text == "*" { return .everyHost }
        let (addressText, prefix) = split(text)
        if let parsed = parseAddress(addressText) ?? shorthandIPv4(addressText) {
            let length = min(prefix.flatMap(Int.init) ?? parsed.bytes.count * 8, parsed.bytes.count * 8)
            let unmapped = unmapped(parsed)
            if unmapped.family != parsed.family, length >= 96 {
                // An IPv4-mapped entry (`::ffff:10.0.0.1`, `::ffff:0:0/96`) is the IPv4 one, as a mapped host is.
                return .address(family: unmapped.family, bytes: unmapped.bytes, prefixLength: length - 96)
            }
            return .address(family: parsed.family, bytes: parsed.bytes, prefixLength: length)
        }
        var name = text
        // `*.example.com`, as other tools' lists write it, means what `.example.com` does.
        if name.hasPrefix("*.") { name.removeFirst() }
        while name.hasPrefix(".") { name.removeFirst() }
        if name.hasSuffix(".") { name.removeLast() }
        return name.isEmpty ? nil : .name(name)
    }

    /// The address and the prefix length of `10.0.0.0/8` or `[fd00::]/8`; the prefix `nil` without a slash.
    private static func split(_ text: String) -> (String, String?) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        var address = String(parts[0])
        if address.hasPrefix("["), address.hasSuffix("]") { address = String(address.dropFirst().dropLast()) }
        return (address, parts.count == 2 ? String(parts[1]) : nil)
    }

    /// `text` as an IPv4 or IPv6 address (an IPv6 zone, `%eth0`, left out), in network order.
    package static func parseAddress(_ text: String) -> (family: Int32, bytes: [UInt8])? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return (AF_INET, withUnsafeBytes(of: &v4) { Array($0) })
        }
        let bare = text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare ?? text, &v6) == 1 {
            return (AF_INET6, withUnsafeBytes(of: &v6) { Array($0) })
        }
        return nil
    }

    /// An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) as the IPv4 address it stands for; any other as it is.
    /// The IPv4 address a host written in one of the shorthand forms libcurl's URL parser reads as one names
    /// (`127.1`, `2130706433`, `0x7f.0.0.1`: `inet_aton`'s forms), which `inet_pton` refuses; `nil` for a name.
    private static func shorthandIPv4(_ host: String) -> (family: Int32, bytes: [UInt8])? {
        let isNumeral = { (byte: UInt8) in
            byte == UInt8(ascii: ".") || byte == UInt8(ascii: "x") || isxdigit(Int32(byte)) != 0
        }
        guard let first = host.utf8.first, isdigit(Int32(first)) != 0, host.utf8.allSatisfy(isNumeral) else {
            return nil
        }
        var address = in_addr()
        guard inet_aton(host, &address) != 0 else { return nil }
        return (AF_INET, withUnsafeBytes(of: &address) { Array($0) })
    }

    private static func unmapped(_ address: (family: Int32, bytes: [UInt8])) -> (family: Int32, bytes: [UInt8]) {
        guard address.family == AF_INET6, address.bytes.count == 16,
            address.bytes[0..<10].allSatisfy({ $0 == 0 }), address.bytes[10] == 0xFF, address.bytes[11] == 0xFF
        else { return address }
        return (AF_INET, Array(address.bytes[12..<16]))
    }

    /// Whether the first `length` bits of `a` and `b` are equal.
    private static func sharePrefix(_ a: [UInt8], _ b: [UInt8], length: Int) -> Bool {
        guard a.count == b.count else { return false }
        var remaining = length
        for index in a.indices where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if a[index] & mask != b[index] & mask { return false }
            remaining -= bits
        }
        return true
    }
}
