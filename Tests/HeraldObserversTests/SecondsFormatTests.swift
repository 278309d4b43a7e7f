@testable import HeraldObservers
import Testing

/// The logging observer's seconds: millisecond precision, as `%.3f` would print them.
@Suite("Seconds in log metadata")
struct SecondsFormatTests {
    @Test(
        "whole milliseconds, padded, rounded, signed",
        arguments: [
            (0.125, "0.125"), (1.5, "1.500"), (0, "0.000"), (0.0004, "0.000"), (0.0006, "0.001"),
            (0.05, "0.050"), (12.3456, "12.346"), (-0.25, "-0.250"), (3600.0019, "3600.002"),
        ])
    func milliseconds(_ value: Double, _ expected: String) {
        #expect(LoggingObserver.seconds(value) == expected)
    }

    @Test("values no millisecond count can hold are printed as they are")
    func outOfRange() {
        #expect(LoggingObserver.seconds(.infinity) == "inf")
        #expect(LoggingObserver.seconds(.nan) == "nan")
        #expect(LoggingObserver.seconds(1e20) == "\(1e20)")
    }
}
