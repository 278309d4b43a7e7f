import Foundation

/// Parses the `Retry-After` response field (RFC 9110 §10.2.3): a number of seconds or an HTTP date.
public enum RetryAfter {
    /// The wait `value` asks for, in seconds from `now`; `nil` when it is neither form.
    ///
    /// A date in the past gives 0. The three HTTP date formats are accepted (IMF-fixdate, RFC 850 and
    /// asctime), always in GMT.
    /// - Parameters:
    ///   - value: The field's value, such as `"120"` or `"Wed, 21 Oct 2015 07:28:00 GMT"`.
    ///   - now: The time the wait is measured from.
    /// - Returns: Seconds to wait, or `nil` for a malformed value.
    public static func seconds(_ value: String, now: Date) -> TimeInterval? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Digits only; a huge number is a long wait, not an error.
            return TimeInterval(trimmed) ?? .greatestFiniteMagnitude
        }
        guard let date = httpDate(trimmed) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// Parses an HTTP date in any of its three formats.
    /// - Parameter text: The date.
    /// - Returns: The date, or `nil` when it is not one.
    public static func httpDate(_ text: String) -> Date? {
        // Not a DateFormatter's to read when it is not ASCII (see ResponseCachePolicy.mayBeHTTPDate).
        guard ResponseCachePolicy.mayBeHTTPDate(text) else { return nil }
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// IMF-fixdate, the obsolete RFC 850 form, and C's asctime form.
    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy",
    ]
}
