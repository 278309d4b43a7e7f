import Foundation

/// Opens a download's temporary file so that no one else's file is ever written: a new file is created with
/// `O_EXCL | O_NOFOLLOW`, mode 0600; an existing one (a retried attempt, a resumed download) is opened with
/// `O_NOFOLLOW | O_NONBLOCK` (a FIFO never blocks the open) and used only if it is a regular file of the
/// process's effective user with one link.
enum PrivateFile {
    /// A descriptor open for writing on the file at `url`.
    /// - Throws: ``TransferError/Code/fileIO`` when it can't be opened, or what is there is a symlink or
    ///   another user's file, or has another name elsewhere (a hard link someone planted).
    static func openForWriting(_ url: URL) throws(TransferError) -> Int32 {
        let created = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if created >= 0 { return created }
        guard errno == EEXIST else { throw FileIOError.make("Cannot open the download file", url: url) }
        // Non-blocking: a FIFO planted at the path would otherwise block the open (on the engine's loop thread)
        // until something reads it; opened at once, the check below refuses it.
        let descriptor = open(url.path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw FileIOError.make("Cannot open the download file", url: url) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == geteuid(),
            status.st_nlink == 1
        else {
            close(descriptor)
            throw TransferError(
                .fileIO,
                "The download file \(url.path) is not a regular file of this process's user with one link; "
                    + "nothing is written to it.")
        }
        // A regular file: its writes block as they always do.
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        return descriptor
    }
}
