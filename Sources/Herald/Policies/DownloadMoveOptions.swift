/// How a finished download is moved to the URL its `destination` closure returned.
///
/// Without options a move fails when the destination exists or its directory does not — and the
/// temporary file is then kept and reported (see `downloadDidFailToMoveFile`), never deleted.
public struct DownloadMoveOptions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: Int

    /// Creates options from raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Replace a regular file already at the destination (atomically, with `rename(2)`, when source and
    /// destination share a file system). A directory at the destination is never removed. Without it, a
    /// stale file from an earlier run makes every retry fail (AFNetworking #3617, #3775).
    public static let replaceExistingFile = DownloadMoveOptions(rawValue: 1 << 0)
    /// Create the destination's missing parent directories.
    public static let createIntermediateDirectories = DownloadMoveOptions(rawValue: 1 << 1)
}
