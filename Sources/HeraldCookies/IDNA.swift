import CIDN2

/// Internationalized domain names in their ASCII form, through libidn2 (IDNA 2008 with the UTS #46
/// mapping, non-transitional: what browsers and libcurl send), so that a name written in Unicode and the
/// same name in punycode (`公司` and `xn--55qx5d`) compare equal.
package enum IDNA {
    /// `label` (one label, without dots) in ASCII, lowercased: as it is when it is ASCII already, else its
    /// `xn--` form; `nil` when it has no valid ASCII form, or when it is more than one label (UTS #46 maps
    /// dots of other scripts, such as `。`, to `.`).
    package static func asciiLabel(_ label: some StringProtocol) -> String? {
        if label.utf8.allSatisfy({ $0 < 0x80 }) { return asciiLowercased(label) }
        let ascii = convert(String(label), flags: nonTransitional) ?? convert(String(label), flags: transitional)
        return ascii?.contains(".") == true ? nil : ascii
    }

    /// `name` with each of its labels in ASCII (``asciiLabel(_:)``); empty labels stay empty. `nil` when a
    /// label has no ASCII form.
    package static func asciiName(_ name: some StringProtocol) -> String? {
        if name.utf8.allSatisfy({ $0 < 0x80 }) { return asciiLowercased(name) }
        var labels: [String] = []
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            guard let ascii = label.isEmpty ? "" : asciiLabel(label) else { return nil }
            labels.append(ascii)
        }
        return labels.joined(separator: ".")
    }

    /// `text` with its ASCII capitals lowercased, and nothing else changed.
    package static func asciiLowercased(_ text: some StringProtocol) -> String {
        String(decoding: text.utf8.lazy.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    private static let nonTransitional = Int32(IDN2_NFC_INPUT.rawValue | IDN2_NONTRANSITIONAL.rawValue)
    // A few labels valid under IDNA 2003 only (the list still has some) convert only this way.
    private static let transitional = Int32(IDN2_NFC_INPUT.rawValue | IDN2_TRANSITIONAL.rawValue)

    private static func convert(_ label: String, flags: Int32) -> String? {
        var output: UnsafeMutablePointer<CChar>?
        // Safety: libidn2 allocates `output` on success only; it is read and freed here, on this thread.
        let status = label.withCString { idn2_to_ascii_8z($0, &output, flags) }
        guard let output else { return nil }
        defer { idn2_free(output) }
        guard status == IDN2_OK.rawValue else { return nil }
        return asciiLowercased(String(cString: output))
    }
}
