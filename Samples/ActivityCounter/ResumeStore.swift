import Foundation

/// `--continue`: where an interrupted download's bytes and resume data are kept between runs.
///
/// Beside the saved files in `--output-dir`, a download that was interrupted (Ctrl-C, SIGTERM, a connection
/// lost for good) leaves `download-KEY.part` (the bytes so far) and `download-KEY.resume` (Herald's resume data:
/// the URL, the validator, how many bytes). `KEY` is a hash of the URL, so the next run with `--continue` finds
/// them again and asks the server only for the rest. Both files go once the download is saved.
struct ResumeStore: Sendable {
    let directory: URL

    private func key(for url: URL) -> String {
        // FNV-1a: stable across runs and processes (Swift's hashValue is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.absoluteString.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    /// The partial file kept for `url`.
    func partialFile(for url: URL) -> URL {
        directory.appendingPathComponent("download-\(key(for: url)).part")
    }

    /// The resume data file kept for `url`.
    func resumeFile(for url: URL) -> URL {
        directory.appendingPathComponent("download-\(key(for: url)).resume")
    }

    /// The resume data kept for `url`, pointing at the partial file where it is now; `nil` when there is none or
    /// it is for another URL.
    func load(for url: URL) -> Data? {
        guard let data = try? Data(contentsOf: resumeFile(for: url)),
            var object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let saved = object["url"] as? String, URL(string: saved)?.absoluteString == url.absoluteString
        else { return nil }
        object["partialFilePath"] = partialFile(for: url).path
        return try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// Keeps `resumeData`'s partial file as ``partialFile(for:)`` and the resume data beside it.
    ///
    /// - Returns: The partial file's path, or `nil` (and nothing kept) when either could not be written.
    func keep(_ resumeData: Data, for url: URL) -> String? {
        guard var object = try? JSONSerialization.jsonObject(with: resumeData) as? [String: Any],
            let source = object["partialFilePath"] as? String
        else { return nil }
        let partial = partialFile(for: url)
        let manager = FileManager.default
        do {
            if URL(fileURLWithPath: source).standardizedFileURL != partial.standardizedFileURL {
                if manager.fileExists(atPath: partial.path) { try manager.removeItem(at: partial) }
                try manager.moveItem(at: URL(fileURLWithPath: source), to: partial)
            }
            object["partialFilePath"] = partial.path
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            try data.write(to: resumeFile(for: url), options: .atomic)
            return partial.path
        } catch {
            try? manager.removeItem(atPath: source)
            try? manager.removeItem(at: partial)
            return nil
        }
    }

    /// Removes what was kept for `url` (after it was saved, or when its resume data was refused).
    func discard(for url: URL) {
        try? FileManager.default.removeItem(at: resumeFile(for: url))
        try? FileManager.default.removeItem(at: partialFile(for: url))
    }
}
