import Foundation
@testable import Herald
import Testing

/// The `If-Range` validator resume data sends: RFC 9110 §13.1.5 allows a strong entity tag, or a strong date when
/// there is no entity tag at all.
@Suite("The If-Range validator of resume data")
struct ResumeValidatorTests {
    static func resumeData(entityTag: String?, lastModified: String?) -> DownloadResumeData {
        DownloadResumeData(
            url: URL(string: "http://127.0.0.1:9/never-sent")!, headers: [], bytesReceived: 10, entityTag: entityTag,
            lastModified: lastModified, partialFilePath: "/tmp/download-1-x.part")
    }

    @Test("a strong entity tag is sent; a weak one is not, and neither is the date beside it")
    func entityTagRules() {
        let date = "Mon, 01 Jan 2024 00:00:00 GMT"
        #expect(Self.resumeData(entityTag: "\"v1\"", lastModified: date).validator == "\"v1\"")
        // Before, the date went out beside a weak tag: a version changed within the date's second passed for it.
        #expect(Self.resumeData(entityTag: "W/\"v1\"", lastModified: date).validator == nil)
        #expect(Self.resumeData(entityTag: "W/\"v1\"", lastModified: nil).validator == nil)
        #expect(Self.resumeData(entityTag: nil, lastModified: date).validator == date)
        #expect(Self.resumeData(entityTag: nil, lastModified: nil).validator == nil)
    }

    @Test("a Last-Modified is an If-Range validator only when a second or more before the response's Date")
    func lastModifiedMustBeStrong() {
        let modified = "Mon, 01 Jan 2024 00:00:00 GMT"
        #expect(DownloadResumeData.strongLastModified(modified, date: "Mon, 01 Jan 2024 00:00:01 GMT") == modified)
        #expect(DownloadResumeData.strongLastModified(modified, date: "Tue, 02 Jan 2024 00:00:00 GMT") == modified)
        // Modified within the second it was sent: it could change again in that second and keep its date.
        #expect(DownloadResumeData.strongLastModified(modified, date: modified) == nil)
        #expect(DownloadResumeData.strongLastModified(modified, date: "Sun, 31 Dec 2023 23:59:59 GMT") == nil)
        #expect(DownloadResumeData.strongLastModified("yesterday", date: modified) == nil)
        // Without a Date to judge by, the date is taken as it is.
        #expect(DownloadResumeData.strongLastModified(modified, date: nil) == modified)
        #expect(DownloadResumeData.strongLastModified(nil, date: modified) == nil)
    }
}
