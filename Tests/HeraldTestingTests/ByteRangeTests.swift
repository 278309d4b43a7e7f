import Testing

@testable import HeraldTesting

@Suite("Range header interpretation")
struct ByteRangeTests {
    @Test(
        "single byte ranges are honoured",
        arguments: [
            ("bytes=0-9", ByteRange.partial(0..<10)),
            ("bytes=90-", .partial(90..<100)),
            ("bytes=90-500", .partial(90..<100)),
            ("bytes=-10", .partial(90..<100)),
            ("bytes=-500", .partial(0..<100)),
        ])
    func honoured(header: String, expected: ByteRange) {
        #expect(ByteRange(header: header, count: 100) == expected)
    }

    @Test(
        "a range starting at or past the end is unsatisfiable", arguments: ["bytes=100-", "bytes=150-200", "bytes=-0"])
    func unsatisfiable(header: String) {
        #expect(ByteRange(header: header, count: 100) == .unsatisfiable)
    }

    @Test(
        "absent, multi-range and malformed headers serve the whole representation",
        arguments: [
            nil, "bytes=0-1,5-6", "items=0-1", "bytes=5-2", "bytes=x-",
        ] as [String?])
    func ignored(header: String?) {
        #expect(ByteRange(header: header, count: 100) == .full)
    }
}
