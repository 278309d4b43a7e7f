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
}
