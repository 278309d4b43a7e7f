extension SessionConfiguration {
    /// Checks the header fields every request of the session carries: each name an HTTP token, each value
    /// free of CR, LF and NUL, so that no way of setting a field can split a request.
    /// - Throws: ``HeraldError/Code/invalidRequest`` naming the first bad field.
    func validateAdditionalHeaders() throws(HeraldError) {
        for field in httpAdditionalHeaders where !Request.isValidField(name: field.name, value: field.value) {
            throw HeraldError(
                .invalidRequest,
                "The session configuration's header '\(field.name)' is not an HTTP token or its value contains "
                    + "CR, LF or NUL.")
        }
    }
}
