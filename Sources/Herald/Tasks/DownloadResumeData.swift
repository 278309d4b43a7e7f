import Foundation

/// The resume data a cancelled download produces: what a new task needs to continue it.
///
/// Format (documented, versioned, stable): a UTF-8 JSON object
///
/// ```json
/// {"format": "herald.download-resume-data", "version": 1,
///  "url": "https://…", "headers": [["Accept", "*/*"]],
///  "bytesReceived": 1048576, "entityTag": "\"abc\"", "lastModified": "Wed, 21 Oct 2015 07:28:00 GMT",
///  "partialFilePath": "/tmp/herald-…/download-3-….part", "leftOrigin": true}
/// ```
///
/// `leftOrigin` (absent means `false`) says that `url` is on another origin than the request the download was
/// made for (a redirect led there): the continuation sends no credential field there, the session's included,
/// as the redirect didn't.
///
/// `entityTag` and `lastModified` are optional, but at least one is present: it is sent as `If-Range`, so
/// a resource that changed is sent whole (and the file restarts from zero) rather than spliced.
struct DownloadResumeData: Codable, Sendable, Equatable {
    static let formatName = "herald.download-resume-data"
    static let currentVersion = 1

    var format = Self.formatName
    var version = Self.currentVersion
    var url: URL
    var headers: [[String]]
    var bytesReceived: Int64
    var entityTag: String?
    var lastModified: String?
    var partialFilePath: String
    /// Whether ``url`` is on another origin than the download's first request: see the format above.
    var leftOrigin: Bool?

    /// The `If-Range` validator: the entity tag when it is strong, else the date when there is no entity tag.
    /// Never a weak tag, and never the date beside one (RFC 9110 §13.1.5: with a weak tag the server may send the
    /// rest of another version that the date doesn't tell apart): then there is none, and nothing to resume.
    var validator: String? {
        if let entityTag { return entityTag.hasPrefix("W/") ? nil : entityTag }
        return lastModified
    }

    /// `lastModified`, a response's `Last-Modified`, when it is a strong validator as `If-Range` needs (RFC 9110
    /// §8.8.2.2): at least a second before the response's `Date`, so that the representation could not change
    /// within that second unnoticed. `nil` when it is later or unreadable; kept as it is when the response has no
    /// readable `Date` to judge by.
    static func strongLastModified(_ lastModified: String?, date: String?) -> String? {
        guard let lastModified else { return nil }
        guard let date, let sent = ResponseCachePolicy.parseDate(date) else { return lastModified }
        guard let modified = ResponseCachePolicy.parseDate(lastModified) else { return nil }
        return sent.timeIntervalSince(modified) >= 1 ? lastModified : nil
    }

    var partialFileURL: URL { URL(fileURLWithPath: partialFilePath) }

    func encoded() -> Data? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try? encoder.encode(self)
    }

    /// Decodes and checks resume data; every problem is ``HeraldError/Code/cannotResume``.
    static func decode(_ data: Data) throws(HeraldError) -> DownloadResumeData {
        let resume: DownloadResumeData
        do {
            resume = try JSONDecoder().decode(DownloadResumeData.self, from: data)
        } catch {
            throw HeraldError(.cannotResume, "The resume data is corrupt or was not made by Herald.", underlying: error)
        }
        guard resume.format == formatName else {
            throw HeraldError(.cannotResume, "The resume data is not Herald download resume data.")
        }
        guard resume.version == currentVersion else {
            throw HeraldError(.cannotResume, "Resume data version \(resume.version) is not supported.")
        }
        guard resume.bytesReceived >= 0, resume.headers.allSatisfy({ $0.count == 2 }) else {
            throw HeraldError(.cannotResume, "The resume data is corrupt.")
        }
        guard let validator = resume.validator else {
            throw HeraldError(
                .cannotResume, "The resume data has no strong ETag or Last-Modified to check the resource is unchanged."
            )
        }
        // Sent as `If-Range`: a CR or LF would split the request. (The stored header fields are checked with
        // the request, as any request's are.)
        guard !Request.containsLineBreakOrNUL(validator) else {
            throw HeraldError(.cannotResume, "The resume data's ETag or Last-Modified contains CR, LF or NUL.")
        }
        // Resuming appends to this file, so it must be one Herald made: an absolute path to a
        // `download-….part` file, reached without `..`, and not itself a symbolic link (the open refuses one too;
        // the folders on the way are followed as they are). Otherwise crafted
        // resume data could make a download write into any file the process may write.
        // Split on the byte, as the kernel does: a `/` followed by a combining mark is one Character, and would
        // hide a `..` from a split on Characters.
        let components = resume.partialFilePath.utf8.split(
            separator: UInt8(ascii: "/"), omittingEmptySubsequences: false
        )
        .map { String(decoding: $0, as: UTF8.self) }
        // A NUL would end the C string the checks below and the open pass to the kernel early, so that they
        // could name different files than the path's last component says.
        guard resume.partialFilePath.utf8.first == UInt8(ascii: "/"), !resume.partialFilePath.utf8.contains(0),
            !components.contains(".."),
            !components.contains("."), let fileName = components.last, fileName.hasPrefix("download-"),
            fileName.hasSuffix(".part")
        else {
            throw HeraldError(.cannotResume, "The resume data does not name a Herald partial download file.")
        }
        var status = stat()
        guard lstat(resume.partialFilePath, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw HeraldError(
                .cannotResume, "The partial download file \(resume.partialFilePath) no longer exists.",
                url: resume.url)
        }
        guard Int64(status.st_size) >= resume.bytesReceived else {
            throw HeraldError(
                .cannotResume,
                "The partial download file holds \(status.st_size) bytes, fewer than the \(resume.bytesReceived) "
                    + "the resume data promises.", url: resume.url)
        }
        return resume
    }
}
