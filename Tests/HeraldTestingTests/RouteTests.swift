import Testing

@testable import HeraldTesting

@Suite("Route parsing")
struct RouteTests {
    @Test("a status path parses its code and optional location")
    func statusWithLocation() {
        guard case .status(302, "/there", nil) = Route.parse(uri: "/status/302?location=/there").route else {
            Issue.record("expected a 302 status route")
            return
        }
    }

    @Test(
        "a status code outside 200...599 or not a number is a bad request",
        arguments: ["/status/99", "/status/600", "/status/abc"])
    func badStatusCode(uri: String) {
        guard case .badRequest = Route.parse(uri: uri).route else {
            Issue.record("expected a bad request for \(uri)")
            return
        }
    }

    @Test("bytes parameters are parsed, with defaults for the absent ones")
    func byteOptions() {
        guard case .bytes(let options) = Route.parse(uri: "/bytes/100?chunked=1&delayMs=5").route else {
            Issue.record("expected a bytes route")
            return
        }
        #expect(options == ByteStreamOptions(count: 100, isChunked: true, chunkSize: 64 << 10, delayMilliseconds: 5))
    }

    @Test(
        "invalid bytes parameters are bad requests",
        arguments: [
            "/bytes/-1", "/bytes/x", "/bytes/10?chunkSize=0", "/bytes/10?chunkSize=9999999", "/bytes/10?delayMs=-3",
        ])
    func badByteOptions(uri: String) {
        guard case .badRequest = Route.parse(uri: uri).route else {
            Issue.record("expected a bad request for \(uri)")
            return
        }
    }

    @Test("fault parameters are validated: truncated must send fewer bytes than it declares")
    func faultParameters() {
        #expect(
            Route.parse(uri: "/fault/truncated?declared=10&sent=4").route.fault == .truncated(declared: 10, sent: 4))
        #expect(
            Route.parse(uri: "/fault/reset-mid-body?bytes=7").route.fault == .resetMidBody(bytes: 7, declared: 1031))
        guard case .badRequest = Route.parse(uri: "/fault/truncated?declared=10&sent=10").route else {
            Issue.record("expected a bad request")
            return
        }
    }

    @Test("unknown paths are not found, and the path excludes the query")
    func unknownPath() {
        let (path, route) = Route.parse(uri: "/nope/deeper?x=1")
        #expect(path == "/nope/deeper")
        guard case .notFound = route else {
            Issue.record("expected not found")
            return
        }
    }
}

extension Route {
    fileprivate var fault: Fault? {
        if case .fault(let fault) = self { return fault }
        return nil
    }
}
