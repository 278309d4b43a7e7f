import Foundation
@testable import HeraldTesting
import Testing

@Suite("Digest authentication endpoint")
struct DigestAuthTests {
    @Test("MD5 matches the RFC 1321 test vectors")
    func md5Vectors() {
        #expect(MD5.hex("") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(MD5.hex("abc") == "900150983cd24fb0d6963f7d28e17f72")
        #expect(MD5.hex("The quick brown fox jumps over the lazy dog") == "9e107d9d372bb6826bd81d3542a419d6")
        #expect(
            MD5.hex(String(repeating: "1234567890", count: 8)) == "57edf4a22be3c955ac49da2e2107b67a")
    }

    @Test("/auth/digest challenges with a nonce, rejects a wrong answer and accepts a correct RFC 7616 one")
    func digestAuth() async throws {
        try await withTestServer { server in
            let target = "/auth/digest?user=ann&password=secret"
            let challenge = try await RawHTTPClient.exchange(RawHTTPClient.get(target), port: server.port)
            #expect(challenge.statusCode == 401)
            let header = try #require(challenge.header("WWW-Authenticate"))
            #expect(header.hasPrefix("Digest "))
            let fields = DigestAuthResponder.parameters(of: String(header.dropFirst(7)))
            #expect(fields["realm"] == "herald-digest")
            #expect(fields["qop"] == "auth")
            let nonce = try #require(fields["nonce"])

            func answer(password: String) -> String {
                let ha1 = MD5.hex("ann:herald-digest:\(password)")
                let ha2 = MD5.hex("GET:\(target)")
                let response = MD5.hex("\(ha1):\(nonce):00000001:abcdef:auth:\(ha2)")
                return
                    #"Authorization: Digest username="ann", realm="herald-digest", nonce="\#(nonce)", uri="\#(target)", qop=auth, nc=00000001, cnonce="abcdef", response="\#(response)""#
            }
            let rejected = try await RawHTTPClient.exchange(
                RawHTTPClient.get(target, headers: [answer(password: "nope")]), port: server.port)
            #expect(rejected.statusCode == 401)
            let accepted = try await RawHTTPClient.exchange(
                RawHTTPClient.get(target, headers: [answer(password: "secret")]), port: server.port)
            #expect(accepted.statusCode == 200)
            #expect(String(decoding: accepted.body, as: UTF8.self) == #"{"authenticated":true,"user":"ann"}"#)
        }
    }
}
