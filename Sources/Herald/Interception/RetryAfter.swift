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

    /// Parses an HTTP date in any of its three formats (IMF-fixdate, the obsolete RFC 850 form, C's asctime
    /// form), as the response cache reads `Date` and `Expires`: spaces around it are ignored, and `GMT` may be
    /// written in any case; no other zone is a date.
    /// - Parameter text: The date.
    /// - Returns: The date, or `nil` when it is not one.
    public static func httpDate(_ text: String) -> Date? {
        ResponseCachePolicy.parseDate(text)
    }
}
