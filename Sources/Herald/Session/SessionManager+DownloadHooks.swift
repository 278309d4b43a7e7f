import Foundation

// AF's download-task blocks.
extension SessionManager {
    /// AF's `downloadTaskDidFinishDownloading`: where a finished download goes when its task has no
    /// `destination` closure of its own. Called like `destination`: once, after the whole body is on disk and
    /// before the completion handler, on ``completionQueue`` when it is the session's own (the default), on
    /// a serial queue of the task's completion when you passed a completion queue. It must not block: on the
    /// session's queue, other tasks' completions wait behind it. Returning `nil` leaves the file at its
    /// temporary location. Default `nil`.
    public var downloadTaskDidFinishDownloading:
        (@Sendable (_ task: DownloadTask, _ temporaryURL: URL, _ response: HTTPResponse) -> URL?)?
    {
        get { readHooks { $0.downloadTaskDidFinishDownloading } }
        set { updateHooks { $0.downloadTaskDidFinishDownloading = newValue } }
    }

    /// AF's `downloadTaskDidWriteData`: called on ``completionQueue`` after each write to a download's file,
    /// in order, before the task's completion handler, with the bytes just written, the file's total
    /// (including a resumed download's earlier bytes) and the expected total when known. Default `nil`.
    public var downloadTaskDidWriteData:
        (
            @Sendable (
                _ task: DownloadTask, _ bytesWritten: Int64, _ totalBytesWritten: Int64, _ totalBytesExpected: Int64?
            ) -> Void
        )?
    {
        get { readHooks { $0.downloadTaskDidWriteData } }
        set { updateHooks { $0.downloadTaskDidWriteData = newValue } }
    }

    /// AF's `downloadTaskDidResume`: called on ``completionQueue`` when a download created from resume data
    /// starts receiving its body — and for each attempt of a retried download that continues its file — with
    /// the offset it continues from (`0` when the server sent the whole representation again) and the
    /// expected total when known; before any `downloadTaskDidWriteData` of that body. A redirect or a challenge
    /// on the way, and an answer the file refuses (an error status, a range that doesn't continue it), start no
    /// body and are not reported. Default `nil`.
    public var downloadTaskDidResume:
        (@Sendable (_ task: DownloadTask, _ fileOffset: Int64, _ expectedTotalBytes: Int64?) -> Void)?
    {
        get { readHooks { $0.downloadTaskDidResume } }
        set { updateHooks { $0.downloadTaskDidResume = newValue } }
    }
}
