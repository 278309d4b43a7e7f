import Testing

@testable import HeraldEngine

@Suite("Reading libcurl 7.88.1's text for a GOAWAY that refused a request's stream")
struct GoawayRefusalWatchTests {
    private func watch(_ messages: [String]) -> GoawayRefusalWatch {
        var watch = GoawayRefusalWatch()
        for message in messages {
            Array(message.utf8).withUnsafeBytes { watch.read($0) }
        }
        return watch
    }

    private static let stream3 = "Using Stream ID: 3 (easy handle 0x55d1c0a3b2a0)\n"

    @Test("a GOAWAY naming a last stream below the request's refuses it")
    func lowerLastStreamRefuses() {
        let watch = watch([Self.stream3, "recveived GOAWAY, error=0, last_stream=1\n"])
        #expect(watch.stream == 3)
        #expect(watch.refusedStream)
    }

    @Test("a GOAWAY naming the request's stream or a later one as the last refuses nothing")
    func lastStreamAtOrAboveDoesNotRefuse() {
        #expect(!watch([Self.stream3, "recveived GOAWAY, error=0, last_stream=3\n"]).refusedStream)
        #expect(!watch([Self.stream3, "recveived GOAWAY, error=2, last_stream=5\n"]).refusedStream)
    }

    @Test("a GOAWAY before any stream of the request, or before a later one, counts for none")
    func goawayCountsOnlyAfterItsStream() {
        #expect(!watch(["recveived GOAWAY, error=0, last_stream=0\n"]).refusedStream)
        #expect(!watch(["recveived GOAWAY, error=0, last_stream=1\n", Self.stream3]).refusedStream)
        let movedOn = watch([
            Self.stream3, "recveived GOAWAY, error=0, last_stream=1\n", "Using Stream ID: 1 (easy handle 0x1)\n",
        ])
        #expect(movedOn.stream == 1 && !movedOn.refusedStream)
    }

    @Test("libcurl's own retry forgets the stream and the GOAWAY")
    func libcurlRetryForgets() {
        let watch = watch([
            Self.stream3, "recveived GOAWAY, error=0, last_stream=1\n",
            "Connection died, retrying a fresh connect (retry count: 1)\n",
        ])
        #expect(watch.stream == nil && !watch.refusedStream)
    }

    @Test("text that is not exactly libcurl's is ignored")
    func otherTextIgnored() {
        for goaway in [
            "recveived GOAWAY, error=0, last_stream=1 \n", "recveived GOAWAY, error=0, last_stream=\n",
            "received GOAWAY, error=0, last_stream=1\n", "recveived GOAWAY, error=, last_stream=1\n",
            "* recveived GOAWAY, error=0, last_stream=1\n", "recveived GOAWAY, error=0, last_stream=99999999999\n",
        ] {
            #expect(!watch([Self.stream3, goaway]).refusedStream, "\(goaway)")
        }
        #expect(watch(["Using Stream ID: 3\n"]).stream == nil)
        #expect(watch(["Using Stream ID: a (easy handle 0x1)\n"]).stream == nil)
        #expect(watch(["Using Stream ID:  3 (easy handle 0x1)\n"]).stream == nil)
        #expect(watch(["Using Stream ID: 4294967296 (easy handle 0x1)\n"]).stream == nil)
        // libcurl prints the error code with %d.
        #expect(watch([Self.stream3, "recveived GOAWAY, error=-1, last_stream=2\n"]).refusedStream)
    }
}
