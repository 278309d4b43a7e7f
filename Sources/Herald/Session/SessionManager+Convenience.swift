extension SessionManager {
    /// Creates a suspended data task with only a completion handler, so it can be written as a trailing
    /// closure: `try session.dataTask(with: request) { response, object, error in … }`.
    ///
    /// The same as ``dataTask(with:uploadProgress:downloadProgress:completionHandler:)`` without progress
    /// handlers; the task's ``SessionTask/uploadProgress`` and ``SessionTask/downloadProgress`` still count.
    /// - Throws: ``HeraldError`` as the full form does.
    public func dataTask(with request: Request, completionHandler: @escaping TaskCompletionHandler)
        throws(HeraldError) -> DataTask
    {
        try dataTask(with: request, uploadProgress: nil, downloadProgress: nil, completionHandler: completionHandler)
    }
}
