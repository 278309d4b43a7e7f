import Foundation

@testable import Herald

/// A response head for serializer tests.
func makeResponse(status: Int = 200, contentType: String? = nil, url: String = "https://example.com/r") -> HTTPResponse
{
    var headers = HTTPHeaders()
    if let contentType { headers.add(name: "Content-Type", value: contentType) }
    return HTTPResponse(url: URL(string: url) ?? URL(fileURLWithPath: "/"), statusCode: status, headers: headers)
}

/// Runs `body`, returning the `HeraldError` it throws, or `nil` when it succeeds or throws something else.
///
/// Takes an untyped closure because closures inside `#require` do not infer typed throws; the sources
/// themselves are checked by the compiler to throw only `HeraldError`.
func heraldError<T>(_ body: () throws -> T) -> HeraldError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error as? HeraldError
    }
}
