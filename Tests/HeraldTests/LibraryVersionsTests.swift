import Testing

@testable import Herald

@Suite("Library versions")
struct LibraryVersionsTests {
    @Test("the libcurl and libuv versions are read from the loaded libraries")
    func versions() {
        #expect(LibraryVersions.curl.split(separator: ".").count == 3)
        #expect(LibraryVersions.curl.hasPrefix("7.") || LibraryVersions.curl.hasPrefix("8."))
        #expect(LibraryVersions.libuv.hasPrefix("1."))
        #expect(LibraryVersions.curlTLS?.isEmpty == false)
    }
}
