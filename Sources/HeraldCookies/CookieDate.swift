import Foundation

/// RFC 6265 §5.1.1's algorithm for a cookie's `Expires` date: the tolerant reading browsers share.
///
/// The text is split into tokens at delimiters (everything but letters, digits, `:` and bytes outside
/// ASCII); each token, in order, is taken as the first of the time, the day of the month, the month and
/// the year that it matches and that was not found yet. A two-digit year from 70 to 99 is 19xx, one from
/// 0 to 69 is 20xx. The date is refused (`nil`, and the attribute is ignored) when a part is missing, the
/// day is not 1 to 31, the year is before 1601, the hour after 23, the minute or second after 59, or the
/// day does not exist in its month. Any zone or other text is ignored: the date is UTC.
///
/// The grammar's trailing `( non-digit *OCTET )` is read as optional (`[ non-digit *OCTET ]`), as
/// RFC 6265bis writes it and every browser does, so that a token such as `31` or `2037` matches.
package enum CookieDate {
    /// The date `text` names, or `nil` when the algorithm refuses it.
    package static func parse(_ text: some StringProtocol) -> Date? {
        var time: (hour: Int, minute: Int, second: Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        var bytes = Array(text.utf8)
        bytes.append(0x20)  // a delimiter ends the last token
        var start: Int?
        for (index, byte) in bytes.enumerated() {
            if !isDelimiter(byte) {
                if start == nil { start = index }
                continue
            }
            guard let first = start else { continue }
            start = nil
            let token = bytes[first..<index]
            if time == nil, let found = self.time(in: token) {
                time = found
            } else if day == nil, let found = leadingNumber(in: token, digits: 1...2) {
                day = found
            } else if month == nil, let found = self.month(in: token) {
                month = found
            } else if year == nil, let found = leadingNumber(in: token, digits: 2...4) {
                year = found
            }
        }
        guard var year, let day, let month, let time else { return nil }
        if (70...99).contains(year) {
            year += 1900
        } else if (0...69).contains(year) {
            year += 2000
        }
        guard (1...31).contains(day), year >= 1601, time.hour <= 23, time.minute <= 59, time.second <= 59,
            day <= daysInMonth(month, of: year)
        else { return nil }
        let seconds =
            daysSince1970(year: year, month: month, day: day) * 86_400
            + time.hour * 3600 + time.minute * 60 + time.second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// `%x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E`.
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x09, 0x20...0x2F, 0x3B...0x40, 0x5B...0x60, 0x7B...0x7E: true
        default: false
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    /// The number written by the token's leading digits when there are `digits` of them (what follows, if
    /// anything, starts with a non-digit); `nil` otherwise.
    private static func leadingNumber(in token: ArraySlice<UInt8>, digits: ClosedRange<Int>) -> Int? {
        let count = token.prefix(while: isDigit).count
        guard digits.contains(count) else { return nil }
        return token.prefix(count).reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// `hms-time ( non-digit *OCTET )`, where `hms-time` is three `1*2DIGIT` fields joined by `:`.
    private static func time(in token: ArraySlice<UInt8>) -> (hour: Int, minute: Int, second: Int)? {
        var rest = token
        var fields: [Int] = []
        for index in 0..<3 {
            if index > 0 {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                rest = rest.dropFirst()
            }
            guard let field = leadingNumber(in: rest, digits: 1...2) else { return nil }
            fields.append(field)
            rest = rest.drop(while: isDigit)
        }
        return (fields[0], fields[1], fields[2])
    }

    private static let months: [[UInt8]] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ].map { Array($0.utf8) }

    /// The month (1 to 12) whose three-letter name, in any case, starts the token.
    private static func month(in token: ArraySlice<UInt8>) -> Int? {
        guard token.count >= 3 else { return nil }
        let prefix = token.prefix(3).map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
        return months.firstIndex(of: prefix).map { $0 + 1 }
    }

    private static func isLeapYear(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysInMonth(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the date in the proleptic Gregorian calendar (Howard Hinnant's
    /// `days_from_civil`): exact for every year the algorithm accepts, with no calendar or time zone object.
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
