import Foundation

/// One URL to download and the status it should end with (200-299 unless the demo plans otherwise).
struct FetchTarget: Sendable {
    var url: URL
    var expectedStatus: Int?
}

/// How one download ended.
struct FetchResult: Sendable {
    /// Where the bytes are when the download kept a file.
    enum File: Sendable, Equatable {
        /// Saved in `--output-dir`.
        case saved(String)
        /// Downloaded, but the move into `--output-dir` failed: the file stays where it was written.
        case keptAfterFailedMove(String)
        /// Interrupted; the bytes so far are kept for `--continue`.
        case partial(String)
        /// With `--continue`, already in `--output-dir` under the URL's name: not fetched again.
        case alreadyThere(String)

        var path: String {
            switch self {
            case .saved(let path), .keptAfterFailedMove(let path), .partial(let path), .alreadyThere(let path): path
            }
        }
    }

    var target: FetchTarget
    var status: Int?
    var bytes: Int64 = 0
    var seconds: Double = 0
    /// How many requests were made (1 + retries).
    var attempts = 1
    var failure: FetchFailure?
    var file: File?

    /// Success, or exactly the failure the target planned (the demo's 404).
    var behavedAsExpected: Bool {
        guard let expected = target.expectedStatus, !(200..<300).contains(expected) else { return failure == nil }
        return failure == .http(status: expected)
    }
}
