import Foundation
import Testing

@testable import Herald

@Suite("HeraldError")
struct HeraldErrorTests {
    @Test("code descriptions are unique, short, snake-case and stable")
    func codeDescriptions() {
        let descriptions = HeraldError.Code.allCodes.map(\.description)
        #expect(descriptions.count == 32)
        #expect(Set(descriptions).count == descriptions.count)
        for description in descriptions {
            #expect(description.count <= 32)
            #expect(description.allSatisfy { ($0.isASCII && $0.isLowercase) || $0 == "_" }, "\(description)")
        }
        #expect(HeraldError.Code.timedOut.description == "timed_out")
        #expect(HeraldError.Code.serverTrustPinMismatch.description == "server_trust_pin_mismatch")
        #expect(HeraldError.Code.serverCertificateUntrusted.description == "server_certificate_untrusted")
        #expect(HeraldError.Code.invalidSecurityPolicy.description == "invalid_security_policy")
        #expect(HeraldError.Code.internal.description == "internal")
        #expect(HeraldError.Code.reachabilityUnavailable.description == "reachability_unavailable")
        #expect(HeraldError.Code.fileInUse.description == "file_in_use")
    }

    @Test("a URL quoted in the message or in libcurl's text loses its user name and password")
    func quotedCredentialsRedacted() {
        // libcurl 7.88's own text for a malformed proxy in the environment quotes the proxy whole.
        let error = HeraldError(
            .proxy, "The proxy http://alice:s3cret@127.0.0.1:99999 failed.", curlCode: 5,
            curlMessage: "Unsupported proxy syntax in 'http://alice:s3cret@127.0.0.1:99999'")
        #expect(error.message == "The proxy http://***:***@127.0.0.1:99999 failed.")
        #expect(error.curlMessage == "Unsupported proxy syntax in 'http://***:***@127.0.0.1:99999'")
        #expect(!error.description.contains("s3cret"))
        #expect(!(error.errorDescription ?? "").contains("s3cret"))
        // A user alone, several URLs, and what is no URL's user information.
        #expect(
            "socks5://bob@127.0.0.1:1080 then https://c:d@h.example/p?x=y@z".redactingURLCredentials()
                == "socks5://***@127.0.0.1:1080 then https://***:***@h.example/p?x=y@z")
        #expect(
            "mail alice@example.com, see http://h.example/a@b".redactingURLCredentials()
                == "mail alice@example.com, see http://h.example/a@b")
        #expect("no credentials here".redactingURLCredentials() == "no credentials here")
        // What libcurl quotes of a proxy value it couldn't read (from `https_proxy`): no scheme, a password with an
        // unencoded `#`, `/` or space, a bad port. Everything before the last `@` in the quotes goes.
        let unreadable = [
            ("Unsupported proxy syntax in 'user:p#ss@127.0.0.1:3128'", "'***:***@127.0.0.1:3128'"),
            ("Unsupported proxy syntax in 'http://user:se/cret@127.0.0.1:9'", "'http://***:***@127.0.0.1:9'"),
            ("Unsupported proxy syntax in 'user:secret@127.0.0.1:99999'", "'***:***@127.0.0.1:99999'"),
            ("Unsupported proxy syntax in 'http://user:two words@127.0.0.1:9'", "'http://***:***@127.0.0.1:9'"),
            ("Unsupported proxy syntax in 'token@127.0.0.1:9'", "'***@127.0.0.1:9'"),
            ("Unsupported proxy syntax in 'user:pa'ss#x@127.0.0.1:3128'", "'***:***@127.0.0.1:3128'"),
            ("Unsupported proxy syntax in 'http://user:it's#a@127.0.0.1:9'", "'http://***:***@127.0.0.1:9'"),
        ]
        for (text, redacted) in unreadable {
            let result = text.redactingURLCredentials()
            #expect(result == "Unsupported proxy syntax in " + redacted)
            for secret in ["p#ss", "cret", "words", "pa'ss", "it's"] { #expect(!result.contains(secret)) }
        }
        #expect("quoted 'no credentials'".redactingURLCredentials() == "quoted 'no credentials'")
    }

    @Test("description reads code, message, curl code and text, then the URL")
    func descriptionFormat() throws {
        let url = try #require(URL(string: "https://example.com/x"))
        let error = HeraldError(
            .timedOut, "the request timed out", curlCode: 28, curlMessage: "Operation timed out",
            url: url)
        #expect(
            error.description
                == "timed_out: the request timed out (curl 28: Operation timed out) [https://example.com/x]")
        #expect(HeraldError(.cancelled, "cancelled by the caller").description == "cancelled: cancelled by the caller")
        #expect(error.localizedDescription == error.description)
    }

    @Test("the initializer redacts credentials in the URL")
    func initializerRedacts() throws {
        let url = try #require(URL(string: "https://alice:s3cret@example.com/path?q=1"))
        let error = HeraldError(.badURL, "bad", url: url)
        #expect(error.url?.absoluteString == "https://***:***@example.com/path?q=1")
        #expect(!error.description.contains("s3cret"))
    }

    @Test("the description leaves out a pre-signed URL's signature values; the url property keeps them")
    func descriptionRedactsSignatures() throws {
        let url = try #require(
            URL(string: "https://bucket.example/o?X-Amz-Signature=abc123&X-Amz-Credential=AKIA%2Fx&sig=s1&keep=1"))
        let error = HeraldError(.timedOut, "the request timed out", url: url)
        // Before, the whole query went into the text every log line of the error carries.
        #expect(
            error.description
                == "timed_out: the request timed out "
                + "[https://bucket.example/o?X-Amz-Signature=***&X-Amz-Credential=***&sig=***&keep=1]")
        #expect(!error.localizedDescription.contains("abc123"))
        #expect(error.url == url)
    }

    @Test("a code pattern matches a thrown HeraldError in catch clauses")
    func catchPattern() {
        func fail() throws { throw HeraldError(.cannotConnect, "refused") }
        var caught = false
        do { try fail() } catch HeraldError.Code.timedOut {
            Issue.record("matched the wrong code")
        } catch HeraldError.Code.cannotConnect {
            caught = true
        } catch {
            Issue.record("did not match")
        }
        #expect(caught)
        #expect(!(HeraldError.Code.cannotConnect ~= CocoaError(.fileNoSuchFile)))
    }

    @Test("underlying errors and status codes are kept")
    func keepsUnderlying() {
        struct Cause: Error {}
        let error = HeraldError(.unacceptableStatusCode, "500", underlying: Cause(), statusCode: 500)
        #expect(error.underlying is Cause)
        #expect(error.statusCode == 500)
    }
}

@Suite("URL credential redaction")
struct URLRedactionTests {
    @Test(
        "user and password are replaced by ***",
        arguments: [
            ("https://alice:secret@example.com/a?b=c#d", "https://***:***@example.com/a?b=c#d"),
            ("http://alice@example.com:8080/", "http://***@example.com:8080/"),
            ("https://alice:p%40ss@example.com", "https://***:***@example.com"),
            ("https://:secret@example.com/", "https://***:***@example.com/"),
        ])
    func redacts(input: String, expected: String) throws {
        let url = try #require(URL(string: input))
        #expect(url.redactingCredentials().absoluteString == expected)
    }

    @Test(
        "URLs without credentials are unchanged, including an @ in the path or query",
        arguments: [
            "https://example.com/a", "https://example.com/users/@me?mail=a@b.c", "http://127.0.0.1:8080/",
        ])
    func unchanged(input: String) throws {
        let url = try #require(URL(string: input))
        #expect(url.redactingCredentials() == url)
    }
}
