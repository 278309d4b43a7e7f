import Foundation

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
