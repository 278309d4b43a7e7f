import Foundation
import Herald
import Instrumentation
import Testing

/// `Request` shares its fields between copies until one is changed: every change must stay in the copy made.
@Suite("Request is a value")
struct RequestValueTests {
    private static let url = URL(string: "http://127.0.0.1:8080/a")!

    private static func original() -> Request {
        Request(
            url: url, method: "POST", headers: ["X-One": "1"], body: Data("body".utf8), timeoutInterval: 5)
    }

    @Test("changing each field of a copy leaves the original as it was")
    func copiesAreIndependent() {
        let original = Self.original()
        var copy = original
        copy.url = URL(string: "http://127.0.0.1:8080/b")!
        copy.method = "PUT"
        copy.headers.add(name: "X-Two", value: "2")
        copy.body = nil
        copy.timeoutInterval = nil
        var context = ServiceContext.topLevel
        context[CopyMarkerKey.self] = "copy"
        copy.serviceContext = context

        #expect(original == Self.original())
        #expect(original.url.path == "/a")
        #expect(original.method == "POST")
        #expect(original.headers.count == 1)
        #expect(original.body == Data("body".utf8))
        #expect(original.timeoutInterval == 5)
        #expect(original.serviceContext == nil)

        #expect(copy.url.path == "/b")
        #expect(copy.method == "PUT")
        #expect(copy.headers.count == 2)
        #expect(copy.body == nil)
        #expect(copy.timeoutInterval == nil)
        #expect(copy.serviceContext?[CopyMarkerKey.self] == "copy")
    }

    @Test("changing the original after copying leaves the copy as it was, and equal copies hash alike")
    func originalChangesStayInOriginal() {
        var original = Self.original()
        let copy = original
        original.headers.add(name: "X-Three", value: "3")
        original.method = "DELETE"
        #expect(copy == Self.original())
        #expect(original != copy)
        #expect(copy.hashValue == Self.original().hashValue)
        // A request that is not shared changes in place, and keeps every change.
        var alone = Self.original()
        for index in 0..<10 { alone.headers.add(name: "X-\(index)", value: "\(index)") }
        #expect(alone.headers.count == 11)
    }
}

extension RequestValueTests {
    @Test("a request prints and dumps its fields, not the box that holds them")
    func printsItsFields() {
        let request = Self.original()
        let printed = String(describing: request)
        #expect(printed.hasPrefix("Request(url: http://127.0.0.1:8080/a, method: \"POST\", headers: "))
        #expect(printed.contains("timeoutInterval: Optional(5.0)"))
        #expect(printed.hasSuffix("serviceContext: nil)"))
        #expect(!printed.contains("storage"))
        var dumped = ""
        dump(request, to: &dumped)
        #expect(dumped.contains("- method: \"POST\""))
        let labels = Mirror(reflecting: request).children.map(\.label)
        #expect(labels == ["url", "method", "headers", "body", "timeoutInterval", "serviceContext"])
    }
}

private enum CopyMarkerKey: ServiceContextKey {
    typealias Value = String
}
