import Foundation
import Herald
import HeraldNotifications
import Testing

/// ``RetryPolicy`` and ``RetryAfter`` as pure functions: which failures are retried, and after how long.
@Suite("Retry policy")
struct RetryPolicyTests {
    private static let session = SessionManager()
    private static let url = URL(string: "http://127.0.0.1:9/resource")!

    private static func context(
        method: String = "GET", status: Int? = nil, code: HeraldError.Code = .unacceptableStatusCode,
        retryAfter: String? = nil, attempt: Int = 1, resourceDeadline: Date? = nil
    ) throws -> RetryContext {
        let task = try session.dataTask(with: Request(url: url, method: method))
        var headers: HTTPHeaders = [:]
        if let retryAfter { headers.add(name: "Retry-After", value: retryAfter) }
        let response = status.map { HTTPResponse(url: url, statusCode: $0, headers: headers, httpVersion: "HTTP/1.1") }
        let error = HeraldError(code, "failed", url: url, statusCode: status)
        return RetryContext(
            task: task, request: Request(url: url, method: method), error: error, response: response, attempt: attempt,
            resourceDeadline: resourceDeadline)
    }

    private static let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT

    @Test("idempotent methods with a transient status are retried; POST and PATCH are not by default")
    func methods() throws {
        let policy = RetryPolicy(jitter: 0)
        for method in ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"] {
            #expect(policy.decision(for: try Self.context(method: method, status: 503), now: Self.now) != .doNotRetry)
        }
        for method in ["POST", "PATCH"] {
            #expect(policy.decision(for: try Self.context(method: method, status: 503), now: Self.now) == .doNotRetry)
        }
    }

    @Test("only the configured statuses and error codes count as transient")
    func transientFailures() throws {
        let policy = RetryPolicy(jitter: 0)
        for status in [408, 429, 500, 502, 503, 504] {
            #expect(policy.decision(for: try Self.context(status: status), now: Self.now) == .retryWithDelay(0.5))
        }
        for status in [400, 401, 403, 404, 501] {
            #expect(policy.decision(for: try Self.context(status: status), now: Self.now) == .doNotRetry)
        }
        for code in [HeraldError.Code.timedOut, .cannotConnect, .networkConnectionLost, .cannotFindHost] {
            #expect(policy.decision(for: try Self.context(code: code), now: Self.now) == .retryWithDelay(0.5))
        }
        for code in [HeraldError.Code.serverCertificateUntrusted, .invalidRequest, .responseTooLarge, .tls] {
            #expect(policy.decision(for: try Self.context(code: code), now: Self.now) == .doNotRetry)
        }
    }

    @Test("a delay that reaches the resource timeout is not waited for: the attempt's outcome stands")
    func resourceDeadline() throws {
        let policy = RetryPolicy(jitter: 0)
        let deadline = Self.now.addingTimeInterval(30)
        // Before, a Retry-After of 100 s was waited for, and the task ended in timedOut 30 s later, its 503 lost.
        #expect(
            policy.decision(
                for: try Self.context(status: 503, retryAfter: "100", resourceDeadline: deadline), now: Self.now)
                == .doNotRetry)
        #expect(
            policy.decision(
                for: try Self.context(status: 503, retryAfter: "10", resourceDeadline: deadline), now: Self.now)
                == .retryWithDelay(10))
        // The backoff too: 0.5 s with 0.4 s left is not waited for.
        #expect(
            policy.decision(
                for: try Self.context(status: 503, resourceDeadline: Self.now.addingTimeInterval(0.4)), now: Self.now)
                == .doNotRetry)
        #expect(
            policy.decision(for: try Self.context(status: 503, resourceDeadline: nil), now: Self.now)
                == .retryWithDelay(0.5))
    }

    @Test("the limit counts retries: with 2, attempts 1 and 2 are retried and attempt 3 is not")
    func limit() throws {
        let policy = RetryPolicy(retryLimit: 2, jitter: 0)
        #expect(policy.decision(for: try Self.context(status: 503, attempt: 1), now: Self.now) == .retryWithDelay(0.5))
        #expect(policy.decision(for: try Self.context(status: 503, attempt: 2), now: Self.now) == .retryWithDelay(1))
        #expect(policy.decision(for: try Self.context(status: 503, attempt: 3), now: Self.now) == .doNotRetry)
        #expect(RetryPolicy(retryLimit: 0).decision(for: try Self.context(status: 503), now: Self.now) == .doNotRetry)
    }

    @Test("exponential backoff, capped, with jitter inside ±jitter of it")
    func backoff() {
        let policy = RetryPolicy(backoffBase: 2, backoffScale: 0.5, maximumBackoff: 3, jitter: 0.25)
        #expect(policy.backoff(afterRetries: 0, random: 0) == 0.5)
        #expect(policy.backoff(afterRetries: 1, random: 0) == 1)
        #expect(policy.backoff(afterRetries: 2, random: 0) == 2)
        #expect(policy.backoff(afterRetries: 3, random: 0) == 3)  // capped
        #expect(policy.backoff(afterRetries: 1, random: -1) == 0.75)
        #expect(policy.backoff(afterRetries: 1, random: 1) == 1.25)
        #expect(policy.backoff(afterRetries: 1, random: 7) == 1.25)  // the draw is clamped
    }

    @Test("random jitter stays in range over many draws")
    func jitterRange() async throws {
        let policy = RetryPolicy(backoffScale: 1, jitter: 0.5)
        let context = try Self.context(status: 503)
        var delays: Set<TimeInterval> = []
        for _ in 0..<200 {
            guard case .retryWithDelay(let delay) = await policy.retry(context) else {
                Issue.record("not retried")
                return
            }
            #expect(delay >= 0.5 && delay <= 1.5)
            delays.insert(delay)
        }
        #expect(delays.count > 1)  // jitter varies the delay
    }

    @Test("Retry-After in seconds or as an HTTP date is the delay, without jitter; too long means no retry")
    func retryAfter() throws {
        let policy = RetryPolicy(jitter: 0.5, maximumRetryAfter: 120)
        #expect(
            policy.decision(for: try Self.context(status: 429, retryAfter: "7"), now: Self.now) == .retryWithDelay(7))
        let date = "Wed, 21 Oct 2015 07:28:30 GMT"
        #expect(
            policy.decision(for: try Self.context(status: 503, retryAfter: date), now: Self.now) == .retryWithDelay(30))
        #expect(policy.decision(for: try Self.context(status: 503, retryAfter: "600"), now: Self.now) == .doNotRetry)
        // Malformed: the backoff applies.
        guard
            case .retryWithDelay(let delay) = policy.decision(
                for: try Self.context(status: 503, retryAfter: "soon"), now: Self.now)
        else {
            Issue.record("not retried")
            return
        }
        #expect(delay >= 0.25 && delay <= 0.75)
    }

    @Test("RetryAfter parses seconds and the three HTTP date formats; the past is 0; garbage is nil")
    func retryAfterParsing() {
        #expect(RetryAfter.seconds("120", now: Self.now) == 120)
        #expect(RetryAfter.seconds(" 0 ", now: Self.now) == 0)
        #expect(RetryAfter.seconds("Wed, 21 Oct 2015 07:28:10 GMT", now: Self.now) == 10)
        #expect(RetryAfter.seconds("Wednesday, 21-Oct-15 07:28:20 GMT", now: Self.now) == 20)
        #expect(RetryAfter.seconds("Wed Oct 21 07:28:40 2015", now: Self.now) == 40)
        #expect(RetryAfter.seconds("Tue, 20 Oct 2015 07:28:00 GMT", now: Self.now) == 0)
        #expect(RetryAfter.seconds("-5", now: Self.now) == nil)
        #expect(RetryAfter.seconds("", now: Self.now) == nil)
        #expect(RetryAfter.seconds("tomorrow", now: Self.now) == nil)
        // As the response cache reads dates: GMT in any case, spaces around the date ignored; no other zone.
        #expect(RetryAfter.seconds("Wed, 21 Oct 2015 07:28:10 gmt", now: Self.now) == 10)
        #expect(RetryAfter.httpDate("  Wed, 21 Oct 2015 07:28:10 GMT ") != nil)
        #expect(RetryAfter.httpDate("Wed, 21 Oct 2015 07:28:10 UTC") == nil)
    }

    @Test("Interceptor asks retriers in order until one retries")
    func compositeRetriers() async throws {
        let asked = Locked<[String]>([])
        let interceptor = Interceptor(retriers: [
            Interceptor(retry: { _ in
                asked.withLock { $0.append("first") }
                return .doNotRetry
            }),
            Interceptor(retry: { _ in
                asked.withLock { $0.append("second") }
                return .retryWithDelay(2)
            }),
            Interceptor(retry: { _ in
                asked.withLock { $0.append("third") }
                return .retry
            }),
        ])
        #expect(await interceptor.retry(try Self.context(status: 503)) == .retryWithDelay(2))
        #expect(asked.withLock { $0 } == ["first", "second"])
        #expect(await Interceptor().retry(try Self.context(status: 503)) == .doNotRetry)
    }
}
