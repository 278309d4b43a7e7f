import Foundation
import HeraldEngine

extension SessionConfiguration {
    /// Checks the header fields every request of the session carries: each name an HTTP token, each value
    /// free of control characters other than tab (CR, LF and NUL among them), so that no way of setting a field
    /// can split a request.
    /// - Throws: ``HeraldError/Code/invalidRequest`` naming the first bad field.
    func validateAdditionalHeaders() throws(HeraldError) {
        for field in httpAdditionalHeaders where !Request.isValidField(name: field.name, value: field.value) {
            throw HeraldError(
                .invalidRequest,
                "The session configuration's header '\(field.name)' is not an HTTP token or its value contains "
                    + "a control character (CR, LF, NUL, or another than tab).")
        }
    }
}

extension SessionConfiguration {
    /// Why these settings can't be used, if one of them can't: a timeout that is negative or not a number, a
    /// limit below zero, or a scheme in ``allowedProtocols`` that is not lowercased or that libcurl doesn't
    /// speak (libcurl would refuse the whole list, and every request with it). `nil` when all are usable.
    func settingsProblem() -> HeraldError? {
        for (name, seconds) in [
            ("timeoutIntervalForRequest", timeoutIntervalForRequest),
            ("timeoutIntervalForResource", timeoutIntervalForResource),
        ] where seconds.isNaN || seconds < 0 {
            return HeraldError(
                .invalidRequest, "The session configuration's \(name) is \(seconds): 0 (none) or a number of seconds.")
        }
        for (name, limit) in [
            ("maximumConnectionsPerHost", maximumConnectionsPerHost),
            ("maximumConnectionsTotal", maximumConnectionsTotal), ("maximumRedirects", maximumRedirects),
            ("maximumResponseSize", maximumResponseSize), ("maximumHeaderSize", maximumHeaderSize),
        ] where limit < 0 {
            return HeraldError(
                .invalidRequest, "The session configuration's \(name) is \(limit): 0 or more.")
        }
        for scheme in allowedProtocols.sorted() {
            guard scheme == scheme.lowercased() else {
                return HeraldError(
                    .invalidRequest,
                    "The session configuration's allowedProtocols holds '\(scheme)': schemes are written in lowercase.")
            }
            guard CurlFeatures.protocols.contains(scheme) else {
                return HeraldError(
                    .invalidRequest,
                    "The session configuration's allowedProtocols holds '\(scheme)', which libcurl doesn't speak.")
            }
        }
        return nil
    }
}

extension SessionConfiguration {
    /// Checks that `folder` is a place ``temporaryDirectory`` may name: a directory owned by the process's
    /// effective user or by root, not writable by group or others unless it is sticky. A download task
    /// factory runs the same check on the folder it is given, so call this to choose another folder ahead of
    /// time rather than have every download refused.
    /// - Parameter folder: The folder to check.
    /// - Throws: ``HeraldError/Code/fileIO`` saying what is wrong with it.
    public static func validateTemporaryDirectory(_ folder: URL) throws(HeraldError) {
        try SessionTemporaryDirectory.checkParent(folder).get()
    }
}
