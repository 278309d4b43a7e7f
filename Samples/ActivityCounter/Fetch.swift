import ArgumentParser
import Foundation
import HeraldObservers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `activity-counter fetch URL…`: downloads the given URLs.
struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download the given http(s) URLs concurrently.",
        discussion: """
            Examples:
              activity-counter fetch https://example.com/a.iso https://example.com/b.iso --output-dir downloads
              activity-counter fetch --input-file urls.txt --retry 3 --timeout 30 --max-filesize 2G --output-dir downloads
              grep -v '^#' list.txt | activity-counter fetch --input-file - --continue --output-dir mirror
              activity-counter fetch https://internal.test/x --cacert ca.pem --pin sha256//BASE64= --events | jq .

            Files are named after Content-Disposition, else the URL's last path component, reduced to one safe \
            path component; names that collide get -2, -3…; nothing is ever written outside --output-dir, and an \
            existing file is never replaced without --overwrite. With --continue a URL whose file an earlier \
            --continue run saved is skipped while that file is still there, not fetched again: which URL each \
            file came from is kept in .activity-counter-index.json in --output-dir (a file named like another \
            URL's is no reason to skip). A URL given more than once (as the summary shows it) is fetched once. \
            Ctrl-C (SIGINT), SIGTERM or SIGHUP cancel the \
            transfers, remove their temporary files (or keep them with --continue), print the summary and exit \
            130, 143 or 129; a second signal never cuts that cleanup short.

            Exit status:
            \(ExitStatus.helpText)
            """)

    @Argument(help: "The http or https URLs to download (e.g. https://example.com/file.tar.gz).")
    var urls: [String] = []

    @Option(
        name: [.customShort("i"), .long],
        help: ArgumentHelp(
            "Read URLs from this file, one a line, '#' starting a comment; '-' reads stdin (e.g. -i urls.txt).",
            valueName: "file"))
    var inputFile: String?

    @OptionGroup var options: RunOptions
    @OptionGroup var transfer: TransferOptions

    mutating func validate() throws {
        if transfer.resume, options.outputDir == nil {
            throw ValidationError("--continue keeps partial files in --output-dir: give one.")
        }
        // The input file is read once, in `run`: stdin, a pipe or a FIFO (`-i <(…)`) can be read only once.
        let arguments = try Self.checked(urls.map { (text: $0, origin: Self.quoted($0)) })
        guard inputFile != nil || !arguments.isEmpty else {
            throw ValidationError("Give at least one URL, or run `activity-counter demo`.")
        }
    }

    func run() async throws {
        let all: [URL]
        do {
            all = try allURLs()
            guard !all.isEmpty else {
                throw ValidationError("Give at least one URL, or run `activity-counter demo`.")
            }
        } catch {
            // Reported as a bad argument is, with this subcommand's usage, exit 64.
            StandardStream.write(
                "Error: \(Self.message(for: error))\nUsage: \(ActivityCounter.usageString(for: Fetch.self))\n"
                    + "  See 'activity-counter fetch --help' for more information.\n", to: STDERR_FILENO)
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        let targets = Self.removingDuplicates(all, console: Console(quiet: options.quiet)).map { FetchTarget(url: $0) }
        let outcome = try await FetchRun(targets: targets, options: options, transfer: transfer).run()
        if outcome.exitStatus != .success { throw ExitCode(outcome.exitStatus.rawValue) }
    }

    /// `urls` in their order, each only the first time it appears as the summary shows it (credentials and
    /// signatures redacted): two copies would save the same file twice, and with `--continue` both would
    /// resume from the same partial file. Each one left out is said on stderr.
    static func removingDuplicates(_ urls: [URL], console: Console) -> [URL] {
        var seen: Set<String> = []
        return urls.filter { url in
            let shown = console.redacted(url)
            guard seen.insert(shown).inserted else {
                console.note("\(shown) is given more than once: fetched once.")
                return false
            }
            return true
        }
    }

    /// `text`, a URL that does not parse, with whatever stands where its user and password would be replaced
    /// by `***:***`: the part of the authority (after `//`, before the first `/`, `?` or `#`) up to its last `@`.
    static func redactingUserInfo(_ text: String) -> String {
        guard let slashes = text.range(of: "//") else { return text }
        let authorityEnd = text[slashes.upperBound...].firstIndex { "/?#".contains($0) } ?? text.endIndex
        guard let at = text[slashes.upperBound..<authorityEnd].lastIndex(of: "@") else { return text }
        return String(text[..<slashes.upperBound]) + "***:***" + String(text[at...])
    }

    /// The arguments' URLs, then the input file's (read here, once), each checked.
    private func allURLs() throws -> [URL] {
        var texts = urls.map { (text: $0, origin: Self.quoted($0)) }
        if let inputFile {
            let lines = try InputFile.lines(of: inputFile)
            texts += lines.map { (text: $0.text, origin: "\(inputFile):\($0.number): \(Self.quoted($0.text))") }
        }
        return try Self.checked(texts)
    }

    /// An error message quotes the URL as the log would show it: credentials never reach the terminal.
    static func quoted(_ text: String) -> String {
        "'" + (URL(string: text).map { LogRedaction.default.redacting($0) } ?? redactingUserInfo(text)) + "'"
    }

    /// Each text as an http or https URL with a host.
    private static func checked(_ texts: [(text: String, origin: String)]) throws -> [URL] {
        try texts.map { text, origin in
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                ["http", "https"].contains(scheme),
                url.host?.isEmpty == false
            else {
                throw ValidationError("\(origin) is not an http or https URL with a host.")
            }
            if let port = url.port, !(0...65535).contains(port) {
                throw ValidationError("\(origin) has port \(port): a port is 0-65535.")
            }
            return url
        }
    }
}

/// `--input-file`: one URL a line; blank lines and lines starting with `#` are skipped.
enum InputFile {
    /// The lines of `text`, whatever ends them: LF, CRLF or a lone CR. Split on scalars: `"\r\n"` is one
    /// `Character`, so splitting the characters on `"\n"` would never split a CRLF file.
    static func splitLines(_ text: String) -> [String] {
        var lines: [String] = []
        var line = String.UnicodeScalarView()
        var afterCR = false
        for scalar in text.unicodeScalars {
            defer { afterCR = scalar == "\r" }
            if scalar == "\n", afterCR { continue }
            if scalar == "\n" || scalar == "\r" {
                lines.append(String(line))
                line = String.UnicodeScalarView()
            } else {
                line.append(scalar)
            }
        }
        lines.append(String(line))
        return lines
    }

    /// The URL lines of `path` (`-`: stdin), read once, to the end: a regular file, a pipe or a FIFO alike.
    static func lines(of path: String) throws -> [(number: Int, text: String)] {
        let data: Data
        do {
            data = try read(path)
        } catch {
            throw ValidationError("--input-file \(path) can't be read: \(reason(error)).")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ValidationError("--input-file \(path) is not UTF-8 text.")
        }
        return splitLines(text).enumerated().compactMap { index, line in
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { return nil }
            return (index + 1, trimmed)
        }
    }

    /// All of `path`'s bytes. `Data(contentsOf:)` refuses what is not a regular file (`-i <(…)` names a pipe),
    /// so the file is opened and read to its end: readToEnd(), not readDataToEndOfFile(), which traps on an
    /// unreadable descriptor.
    private static func read(_ path: String) throws -> Data {
        if path == "-" {
            // Closed at launch (`0<&-`): /dev/null stands in for it, but an empty list would hide the mistake.
            if StandardStream.closedAtLaunch.withLock({ $0.contains(STDIN_FILENO) }) { throw POSIXError(.EBADF) }
            return try FileHandle.standardInput.readToEnd() ?? Data()
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { throw POSIXError(.EISDIR) }
        return try handle.readToEnd() ?? Data()
    }

    /// Why a read failed, as `strerror` words ("No such file or directory").
    private static func reason(_ error: any Error) -> String {
        let error = error as NSError
        let posix =
            error.domain == NSPOSIXErrorDomain ? error : (error.userInfo[NSUnderlyingErrorKey] as? NSError)
        if let posix, posix.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(posix.code))) }
        return error.localizedDescription
    }
}
