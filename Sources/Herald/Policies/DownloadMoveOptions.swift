/// How a finished download is moved to the URL its `destination` closure returned.
///
/// Without options a move fails when the destination exists or its directory does not — and the
/// temporary file is then kept and reported (see `downloadDidFailToMoveFile`), never deleted. The file gets its
/// name in one step that fails if the name is taken (a hard link), so two downloads moved to one name at once
/// can't both succeed; onto another file system it is copied beside the destination and synced first, so the
/// name never shows a partial copy. (On a file system without hard links, the name is checked, then the file
/// renamed.)
///
/// The file keeps the temporary file's mode, `0600`: readable by the process's user alone, whatever the
/// destination folder. Change it once it is moved if others must read it (a web server's files, say).
public struct DownloadMoveOptions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: Int

    /// Creates options from raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Replace a regular file already at the destination (atomically, with `rename(2)`; onto another file
    /// system after a copy beside it, synced). A directory at the destination is never removed. Without it, a
    /// stale file from an earlier run makes every retry fail (AFNetworking #3617, #3775).
    public static let replaceExistingFile = DownloadMoveOptions(rawValue: 1 << 0)
    /// Create the destination's missing parent directories.
    public static let createIntermediateDirectories = DownloadMoveOptions(rawValue: 1 << 1)
}
