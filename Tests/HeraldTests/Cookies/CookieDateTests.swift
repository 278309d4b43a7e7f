import Foundation
import HeraldCookies
import Testing

@testable import Herald

/// `Expires` dates as RFC 6265 §5.1.1's algorithm reads them: tokens in any order, delimiters of every kind,
/// two-digit years, range checks.
@Suite("Cookie dates (RFC 6265 §5.1.1)")
struct CookieDateTests {
    /// `yyyy-MM-dd HH:mm:ss` in UTC.
    private static func utc(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.date(from: text)
    }

    /// Dates the algorithm accepts, with the instant each names.
    static let valid: [(String, String)] = [
        // RFC 6265's own examples (§3.1, §4.1.1, §5.1.1's forms).
        ("Wed, 09 Jun 2021 10:18:14 GMT", "2021-06-09 10:18:14"),
        ("Sun, 06 Nov 1994 08:49:37 GMT", "1994-11-06 08:49:37"),
        // The time before the day, the year last, no comma.
        ("Thu, 31 Dec 23:55:55 2037 GMT", "2037-12-31 23:55:55"),
        ("Thu Apr 18 22:50:12 2007 GMT", "2007-04-18 22:50:12"),
        // Two-digit years: 70–99 are 19xx, 0–69 are 20xx.
        ("Wed, 15 Apr 37 21:01:22 GMT", "2037-04-15 21:01:22"),
        ("Sat, 15-Apr-17 21:01:22 GMT", "2017-04-15 21:01:22"),
        ("Mon, 18-Apr-77 22:50:13 GMT", "1977-04-18 22:50:13"),
        ("Thu, 01-Jan-70 00:00:00 GMT", "1970-01-01 00:00:00"),
        ("Wed, 31-Dec-69 23:59:59 GMT", "2069-12-31 23:59:59"),
        ("Wed,18-Apr-07 22:50:12 GMT", "2007-04-18 22:50:12"),
        ("Mon, 18-Apr-1977 22:50:13 GMT", "1977-04-18 22:50:13"),
        // Delimiters of every kind, names spelled out or misspelled, any case.
        ("Thu, 19-Apr-2007 16:00:00 GMT", "2007-04-19 16:00:00"),
        ("Wed, 25 Apr 2007 21:02:13 GMT", "2007-04-25 21:02:13"),
        ("Thu, 19/Apr\\2007 16:00:00 GMT", "2007-04-19 16:00:00"),
        ("Fri, 1 Jan 2010 01:01:50 GMT", "2010-01-01 01:01:50"),
        ("Wednesday, 1-Jan-2003 00:00:00 GMT", "2003-01-01 00:00:00"),
        (", 1-Jan-2003 00:00:00 GMT", "2003-01-01 00:00:00"),
        (" 1-Jan-2003 00:00:00 GMT", "2003-01-01 00:00:00"),
        ("1-Jan-2003 00:00:00 GMT", "2003-01-01 00:00:00"),
        ("WillyWonka  , 18-Apr-07 22:50:12 GMT", "2007-04-18 22:50:12"),
        ("WillyWonka  , 18-Apr-07 22:50:12", "2007-04-18 22:50:12"),
        ("WillyWonka  ,  18-apr-07   22:50:12", "2007-04-18 22:50:12"),
        ("\"Sat, 15-Apr-17\\\"21:01:22\\\"GMT\"", "2017-04-15 21:01:22"),
        ("Partyday, 18- April-07 22:50:12", "2007-04-18 22:50:12"),
        ("Partyday, 18 - Apri-07 22:50:12", "2007-04-18 22:50:12"),
        ("Wednes, 1-Januar-2003 00:00:00 GMT", "2003-01-01 00:00:00"),
        ("2017 April 15 21:01:22", "2017-04-15 21:01:22"),
        ("15 April 2017 21:01:22", "2017-04-15 21:01:22"),
        // Whatever follows, zone or not, is ignored; the first time, day, month and year found count.
        ("Sat, 15-Apr-17 21:01:22", "2017-04-15 21:01:22"),
        ("Sat, 15-Apr-17 21:01:22 GMT-2", "2017-04-15 21:01:22"),
        ("Sat, 15-Apr-17 21:01:22 GMT BLAH", "2017-04-15 21:01:22"),
        ("Sat, 15-Apr-17 21:01:22 GMT-0400", "2017-04-15 21:01:22"),
        ("Sat, 15-Apr-17 21:01:22 GMT-0400 (EDT)", "2017-04-15 21:01:22"),
        ("Sat, 15-Apr-17 21:01:22 DST", "2017-04-15 21:01:22"),
        ("Sat, 15-Apr-17 21:01:22 -0400", "2017-04-15 21:01:22"),
        ("Sat, 15-Apr-17 21:01:22 (hello there)", "2017-04-15 21:01:22"),
        ("Sat, 15-Apr-17 21:01:22 11:22:33", "2017-04-15 21:01:22"),
        ("Sat, 15-Apr-17 ::00 21:01:22", "2017-04-15 21:01:22"),
        ("Sat, 15-Apr-17 boink:z 21:01:22", "2017-04-15 21:01:22"),
        ("Thu, 12-Aug-2007 20:49:07 Jan GMT", "2007-08-12 20:49:07"),
        // Tokens in any order.
        ("22:50:12 Thu Apr 18 2007 GMT", "2007-04-18 22:50:12"),
        ("Thu 22:50:12 Apr 18 2007 GMT", "2007-04-18 22:50:12"),
        ("Thu Apr 22:50:12 18 2007 GMT", "2007-04-18 22:50:12"),
        ("Thu Apr 18 2007 22:50:12 GMT", "2007-04-18 22:50:12"),
        ("Thu Apr 18 2007 GMT 22:50:12", "2007-04-18 22:50:12"),
        ("15-Sat, Apr-17 21:01:22 GMT", "2017-04-15 21:01:22"),
        ("15-Sat, Apr 21:01:22 GMT 17", "2017-04-15 21:01:22"),
        ("15-Sat, Apr 21:01:22 GMT 2017", "2017-04-15 21:01:22"),
        ("15 Apr 21:01:22 2017", "2017-04-15 21:01:22"),
        ("15 17 Apr 21:01:22", "2017-04-15 21:01:22"),
        ("Apr 15 17 21:01:22", "2017-04-15 21:01:22"),
        ("Apr 15 21:01:22 17", "2017-04-15 21:01:22"),
        // One-digit time fields; the edges of every range.
        ("1:2:3 1 jan 2000", "2000-01-01 01:02:03"),
        ("Thu, 31-Aug-2007 20:49:07 GMT", "2007-08-31 20:49:07"),
        ("Sun, 29 Feb 2004 23:59:59 GMT", "2004-02-29 23:59:59"),
        ("Tue, 29 Feb 2000 00:00:00 GMT", "2000-02-29 00:00:00"),
        ("Mon, 01 Jan 1601 00:00:00 GMT", "1601-01-01 00:00:00"),
        ("Fri, 31 Dec 9999 23:59:59 GMT", "9999-12-31 23:59:59"),
    ]

    /// Dates the algorithm refuses, so the attribute is ignored.
    static let invalid: [String] = [
        "",
        "IAintNoDateFool",
        // No day: `012` has three digits, so it is the year, and `2008` then matches nothing.
        "Thu, 012-Aug-2008 20:49:07 GMT",
        // No year: five digits and more are no year.
        "Thu, 12-Aug-31841 20:49:07 GMT",
        "Thu, 12-Aug-9999999999 20:49:07 GMT",
        "Thu, 999999999999-Aug-2007 20:49:07 GMT",
        // No time: a field of three digits, a space inside.
        "Thu, 12-Aug-2007 20:61:99999999999 GMT",
        "Thu, 01 Jan 2037 00: 00:00 GMT",
        "Thu, 12-Aug-2007 GMT",
        // No month, no day.
        "Thu, 12 2007 20:49:07 GMT",
        "Thu, Aug 2007 20:49:07 GMT",
        // Out of range.
        "Thu, 32-Aug-2007 20:49:07 GMT",
        "Thu, 0-Aug-2007 20:49:07 GMT",
        "98 April 17 21:01:22",
        "Sat, 15-Apr-17 91:22:33 21:01:22",
        "Thu, 12-Aug-2007 24:00:00 GMT",
        "Thu, 12-Aug-2007 23:60:00 GMT",
        "Thu, 12-Aug-2007 23:59:60 GMT",
        "Sun, 31 Dec 1600 23:59:59 GMT",
        // Days that don't exist.
        "Mon, 31 Apr 2007 00:00:00 GMT",
        "Mon, 29 Feb 2100 00:00:00 GMT",
        "Thu, 29 Feb 2007 00:00:00 GMT",
    ]

    @Test("every date form of §5.1.1 is read, to the second", arguments: valid)
    func validDates(text: String, expected: String) throws {
        let date = try #require(CookieDate.parse(text), "\(text)")
        #expect(date == Self.utc(expected), "\(text)")
    }

    @Test("invalid dates are refused", arguments: invalid)
    func invalidDates(text: String) {
        #expect(CookieDate.parse(text) == nil, "\(text)")
    }

    @Test("through the store: a future date keeps, a past one deletes, an invalid one leaves a session cookie")
    func throughTheStore() throws {
        let store = CookieStore.after(
            [
                "future=1; Expires=Thu, 31 Dec 23:55:55 2037 GMT",
                "short=1; Expires=Wed, 15 Apr 37 21:01:22 GMT",
                "invalid=1; Expires=Thu, 12-Aug-31841 20:49:07 GMT",
                "gone=1",
                // An invalid Expires after a valid one leaves the valid one in force (§5.2.1: it is ignored).
                "both=1; Expires=Thu, 31 Dec 23:55:55 2037 GMT; Expires=Thu, 012-Aug-2008 20:49:07 GMT",
            ],
            ["gone=2; Expires=Thu Apr 18 22:50:12 2007 GMT"])
        let byName = store.byName
        // A date later than 400 days from now is that day (RFC 6265bis): the dates above are, until 2036.
        func expiry(_ expected: Date?) -> Date? {
            expected.map { min($0, Date().addingTimeInterval(400 * 86_400)) }
        }
        func isNear(_ date: Date?, _ expected: Date?) -> Bool {
            guard let date, let expected else { return false }
            return abs(date.timeIntervalSince(expected)) < 60
        }
        #expect(isNear(byName["future"]?.expiresAt, expiry(Self.utc("2037-12-31 23:55:55"))))
        #expect(isNear(byName["short"]?.expiresAt, expiry(Self.utc("2037-04-15 21:01:22"))))
        #expect(isNear(byName["both"]?.expiresAt, expiry(Self.utc("2037-12-31 23:55:55"))))
        let invalid = try #require(byName["invalid"])
        #expect(invalid.expiresAt == nil)
        #expect(byName["gone"] == nil)
    }

    @Test("Max-Age: digits with an optional minus; zero or less deletes; too many digits is the longest lifetime")
    func maxAge() throws {
        let byName = CookieStore.after(
            [
                "plus=1; Max-Age=+60", "space=1; Max-Age=6 0", "huge=1; Max-Age=99999999999999999999999",
                "negative=1", "hugeNegative=1",
            ],
            ["negative=1; Max-Age=-1", "hugeNegative=1; Max-Age=-99999999999999999999999"]
        ).byName
        #expect(byName["plus"]?.expiresAt == nil)
        #expect(byName["space"]?.expiresAt == nil)
        let huge = try #require(byName["huge"]?.expiresAt)
        #expect(abs(huge.timeIntervalSinceNow - 400 * 86_400) < 60)
        #expect(byName["negative"] == nil && byName["hugeNegative"] == nil)
    }
}
