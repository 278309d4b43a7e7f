import Foundation
@testable import Herald
@testable import HeraldEngine
import Testing

@Suite("libcurl features known at build time")
struct CurlFeaturesTests {
    @Test("in-memory certificate authorities are available exactly from libcurl 7.77.0 (CURLOPT_CAINFO_BLOB)")
    func inMemoryCertificateAuthorities() throws {
        let parts = LibraryVersions.curl.split(separator: ".").compactMap { Int($0) }
        let version = try #require(parts.count == 3 ? (parts[0], parts[1], parts[2]) : nil)
        #expect(CurlFeatures.inMemoryCertificateAuthorities == (version >= (7, 77, 0)))
    }

    @Test("the system's bundle is trusted alone where libcurl then keeps its store: 7.87.0 and later, with OpenSSL")
    func cachedSystemBundle() throws {
        let parts = LibraryVersions.curl.split(separator: ".").compactMap { Int($0) }
        let version = try #require(parts.count == 3 ? (parts[0], parts[1], parts[2]) : nil)
        let openSSL = LibraryVersions.curlTLS?.hasPrefix("OpenSSL") == true
        // Debian's libcurl (the one CI runs) reads /etc/ssl/certs/ca-certificates.crt by default.
        let debianBundle = "/etc/ssl/certs/ca-certificates.crt"
        if version >= (7, 87, 0), openSSL, FileManager.default.isReadableFile(atPath: debianBundle) {
            #expect(CurlFeatures.cachedSystemBundle == debianBundle)
        } else if version < (7, 87, 0) || !openSSL {
            #expect(CurlFeatures.cachedSystemBundle == nil)
        }
    }
}
