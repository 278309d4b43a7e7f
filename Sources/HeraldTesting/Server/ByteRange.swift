/// The part of a `/bytes/{n}` representation a request asked for with its `Range` header.
enum ByteRange: Equatable {
    /// Serve everything with `200 OK`.
    case full
    /// Serve `range` with `206 Partial Content`.
    case partial(Range<Int>)
    /// Reply `416 Range Not Satisfiable`.
    case unsatisfiable

    /// Interprets a `Range` header for a representation of `count` bytes.
    ///
    /// Only a single `bytes=` range is honoured; a multi-range or unparsable header is ignored, which RFC 9110
    /// §14.2 allows, so the whole representation is served.
    init(header: String?, count: Int) {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else {
            self = .full
            return
        }
        let spec = header.dropFirst("bytes=".count).trimmingSpaces()
        guard let dash = spec.firstIndex(of: "-") else {
            self = .full
            return
        }
        let firstText = spec[..<dash]
        let lastText = spec[spec.index(after: dash)...]
        switch (Int(firstText), Int(lastText)) {
        case (let first?, nil) where lastText.isEmpty:
            self = first < count ? .partial(first..<count) : .unsatisfiable
        case (let first?, let last?) where first <= last:
            self = first < count ? .partial(first..<min(last + 1, count)) : .unsatisfiable
        case (nil, let suffix?) where firstText.isEmpty:
            self = suffix > 0 && count > 0 ? .partial(max(0, count - suffix)..<count) : .unsatisfiable
        default:
            self = .full
        }
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var result = self
        while result.first == " " { result = result.dropFirst() }
        while result.last == " " { result = result.dropLast() }
        return result
    }
}
