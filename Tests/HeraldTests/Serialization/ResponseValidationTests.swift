import Foundation
import Testing

@testable import Herald

@Suite("Response validation")
struct ResponseValidationTests {
    @Test("a 2xx passes the default rules and a 404 fails with unacceptableStatusCode carrying the status")
    func statusCodes() throws {
        let validation = ResponseValidation.default
        try validation.validate(makeResponse(status: 200), data: Data("x".utf8))
        try validation.validate(makeResponse(status: 299), data: Data())
        let error = try #require(heraldError { try validation.validate(makeResponse(status: 404), data: Data()) })
        #expect(error.code == .unacceptableStatusCode)
        #expect(error.statusCode == 404)
        #expect(error.message.contains("404"))
        #expect(error.message.contains("200-299"))
        #expect(error.url?.absoluteString == "https://example.com/r")
    }

    @Test("nil acceptable status codes and content types accept anything")
    func acceptsAnything() throws {
        let validation = ResponseValidation(acceptableStatusCodes: nil, acceptableContentTypes: nil)
        try validation.validate(makeResponse(status: 503, contentType: "image/png"), data: Data("x".utf8))
    }

    @Test("the status is validated before the content type")
    func statusFirst() throws {
        let error = try #require(
            heraldError {
                try ResponseValidation.json.validate(
                    makeResponse(status: 500, contentType: "text/html"), data: Data("<h1>".utf8))
            })
        #expect(error.code == .unacceptableStatusCode)
    }

    @Test(
        "JSON content types, wildcards and +json suffixes are accepted, case-insensitively",
        arguments: [
            "application/json", "application/json; charset=utf-8", "TEXT/JSON", "text/javascript",
            "application/problem+json", "application/vnd.api+json",
        ])
    func acceptedJSONTypes(contentType: String) throws {
        try ResponseValidation.json.validate(makeResponse(contentType: contentType), data: Data("{}".utf8))
    }

    @Test(
        "a non-JSON content type fails with unacceptableContentType naming what was received",
        arguments: ["text/html", "application/xml", "application/jsonp", "application/+json", "json"])
    func rejectedTypes(contentType: String) throws {
        let error = try #require(
            heraldError {
                try ResponseValidation.json.validate(makeResponse(contentType: contentType), data: Data("{}".utf8))
            })
        #expect(error.code == .unacceptableContentType)
        #expect(error.message.contains(contentType.lowercased()))
        #expect(error.message.contains("application/json"))
    }

    @Test("a body without Content-Type fails restricted types; an empty body passes whatever its type")
    func missingContentType() throws {
        let error = try #require(
            heraldError { try ResponseValidation.json.validate(makeResponse(), data: Data("{}".utf8)) })
        #expect(error.code == .unacceptableContentType)
        #expect(error.message.contains("no Content-Type"))
        try ResponseValidation.json.validate(makeResponse(status: 204), data: Data())
        try ResponseValidation.json.validate(makeResponse(contentType: "text/html"), data: Data())
    }

    @Test("type/* and */* patterns match any subtype or any type")
    func wildcards() throws {
        let text = ResponseValidation(acceptableContentTypes: ["text/*"])
        try text.validate(makeResponse(contentType: "text/plain"), data: Data("x".utf8))
        #expect(heraldError { try text.validate(makeResponse(contentType: "image/png"), data: Data("x".utf8)) } != nil)
        let any = ResponseValidation(acceptableContentTypes: ["*/*"])
        try any.validate(makeResponse(contentType: "image/png"), data: Data("x".utf8))
    }

    @Test("a pattern written with parameters, spaces or capitals matches as the type alone")
    func patternsNormalized() throws {
        let validation = ResponseValidation(acceptableContentTypes: [" Application/JSON; charset=utf-8 "])
        // Before, no response matched: "received "application/json", acceptable: application/json; charset=utf-8".
        try validation.validate(makeResponse(contentType: "application/json"), data: Data("{}".utf8))
        try validation.validate(makeResponse(contentType: "application/json; charset=latin1"), data: Data("{}".utf8))
        #expect(
            heraldError { try validation.validate(makeResponse(contentType: "text/html"), data: Data("x".utf8)) }?.code
                == .unacceptableContentType)
    }

    @Test("the acceptable status codes are summarised as ranges in the message")
    func statusSummary() {
        #expect(ResponseValidation.summary(of: Set(200..<300).union([304])) == "200-299, 304")
        #expect(ResponseValidation.summary(of: Set(stride(from: 100, to: 600, by: 2))).hasSuffix(", …"))
    }
}
