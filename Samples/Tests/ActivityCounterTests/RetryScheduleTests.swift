import Foundation
import Herald
import Testing

@testable import ActivityCounter

@Suite("activity-counter: retry schedule and numbered names")
struct RetryPolicyTests {
    private let schedule = RetrySchedule(retries: 3, initialDelay: 1, maximumDelay: 120)

    private func response(_ status: Int, retryAfter: String? = nil) -> HTTPResponse {
        var headers = HTTPHeaders()
        if let retryAfter { headers.add(name: "Retry-After", value: retryAfter) }
        return HTTPResponse(url: URL(string: "http://127.0.0.1/x")!, statusCode: status, headers: headers)
    }

    @Test("the wait is full jitter under initialDelay × 2^(retry-1), capped; past --retry there is none")
    func backoff() {
        let failure = FetchFailure.transfer(.networkConnectionLost)
        #expect(schedule.delay(beforeRetry: 1, after: failure, response: nil, random: { 1 }) == 1)
        #expect(schedule.delay(beforeRetry: 3, after: failure, response: nil, random: { 1 }) == 4)
        #expect(schedule.delay(beforeRetry: 3, after: failure, response: nil, random: { 0.25 }) == 1)
        #expect(schedule.delay(beforeRetry: 4, after: failure, response: nil, random: { 1 }) == nil)
        let long = RetrySchedule(retries: 20, initialDelay: 1, maximumDelay: 120)
        #expect(long.delay(beforeRetry: 12, after: failure, response: nil, random: { 1 }) == 120)
    }

    @Test("a continued download's status, carried by Herald's error, is an HTTP failure: its 503 is retried")
    func statusOfAContinuedDownload() {
        let url = URL(string: "http://127.0.0.1/x")!
        // Before, these were transfer failures: never retried, and reported as errors of the transfer.
        #expect(
            FetchFailure(HeraldError(.unacceptableStatusCode, "503", url: url, statusCode: 503)) == .http(status: 503))
        #expect(FetchFailure(HeraldError(.cannotResume, "404", url: url, statusCode: 404)) == .http(status: 404))
        #expect(
            schedule.delay(
                beforeRetry: 1,
                after: FetchFailure(
                    HeraldError(
                        .unacceptableStatusCode, "503", url: url, statusCode: 503)), response: nil, random: { 1 })
                != nil)
        // Without a status they stay what they were.
        #expect(FetchFailure(HeraldError(.cannotResume, "corrupt resume data")) == .transfer(.cannotResume))
        #expect(FetchFailure(HeraldError(.downloadMoveFailed, "x")) == .notSaved)
    }

    @Test("only transient failures are retried: connect, reset, timeout, 408, 429 and 5xx")
    func transientOnly() {
        let transient: [FetchFailure] = [
            .transfer(.cannotConnect), .transfer(.networkConnectionLost), .transfer(.timedOut), .http(status: 408),
            .http(status: 429), .http(status: 500), .http(status: 503),
        ]
        let permanent: [FetchFailure] = [
            .http(status: 404), .http(status: 401), .transfer(.cannotFindHost), .transfer(.serverCertificateUntrusted),
            .transfer(.badServerResponse), .tooLarge(limit: 1), .notSaved, .interrupted,
        ]
        #expect(transient.allSatisfy { schedule.delay(beforeRetry: 1, after: $0, response: nil) != nil })
        #expect(permanent.allSatisfy { schedule.delay(beforeRetry: 1, after: $0, response: nil) == nil })
    }

    @Test("Retry-After in seconds or as an HTTP date replaces the backoff, capped; garbage is ignored")
    func retryAfter() {
        let failure = FetchFailure.http(status: 429)
        #expect(schedule.delay(beforeRetry: 1, after: failure, response: response(429, retryAfter: "7")) == 7)
        #expect(schedule.delay(beforeRetry: 1, after: failure, response: response(429, retryAfter: "9999")) == 120)
        #expect(
            schedule.delay(beforeRetry: 1, after: failure, response: response(429, retryAfter: "soon"), random: { 1 })
                == 1)
        let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(RetrySchedule.retryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == 30)
        #expect(RetrySchedule.retryAfter("Wed, 21 Oct 2015 07:27:00 GMT", now: now) == 0)
        #expect(RetrySchedule.retryAfter("-5") == nil)
    }

    @Test("a folder replaced by a file while the run goes on: claiming a name ends at once, with the first name")
    func claimInAFolderThatWentAway() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path("out")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let directory = try OutputDirectory(path: path, overwrite: false)
        try FileManager.default.removeItem(atPath: path)
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: path))
        // lstat of out/report.pdf fails with ENOTDIR: no name can be known free, and none is searched for ever.
        #expect(directory.claim("report.pdf").lastPathComponent == "report.pdf")
        #expect(directory.claim("report.pdf").lastPathComponent == "report-2.pdf")
    }

    @Test("numbered names keep a short extension and stay within 255 bytes")
    func numberedNames() {
        #expect(OutputDirectory.numbered("report.pdf", 1) == "report.pdf")
        #expect(OutputDirectory.numbered("report.pdf", 2) == "report-2.pdf")
        #expect(OutputDirectory.numbered("archive", 3) == "archive-3")
        let long = String(repeating: "n", count: 251) + ".bin"
        let numbered = OutputDirectory.numbered(long, 12)
        #expect(numbered.utf8.count == 255)
        #expect(numbered.hasSuffix("-12.bin"))
    }
}
