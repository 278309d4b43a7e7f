import ArgumentParser
import Foundation
import Herald

/// The options that shape each transfer, named as curl and wget name them.
struct TransferOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Idle timeout: fail a transfer when no byte moves for this many seconds (e.g. --timeout 30).",
            valueName: "seconds"))
    var timeout: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Fail a transfer (each attempt) that takes longer than this in all (e.g. --max-time 600).",
            valueName: "seconds"))
    var maxTime: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Fail a download whose body is larger than this many bytes; K, M, G suffixes (e.g. --max-filesize 10M).",
            valueName: "bytes"))
    var maxFilesize: ByteCount?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Try a transient failure again up to N times: connection refused or lost, timeout, 408, 429, 5xx; "
                + "Retry-After is honoured, else exponential backoff with jitter; no wait, Retry-After's "
                + "included, is longer than 120 s (e.g. --retry 3).",
            valueName: "N"))
    var retry = 0

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The upper bound of the first retry's wait, doubling each time up to 120 s; 0-120 "
                + "(e.g. --retry-delay 0.5).",
            valueName: "seconds"))
    var retryDelay = 1.0

    @Flag(
        name: [.customShort("c"), .customLong("continue")],
        help: ArgumentHelp(
            "Resume interrupted downloads from the partial files kept in --output-dir, and keep them when "
                + "interrupted; skip URLs whose file an earlier --continue run saved there "
                + "(e.g. --continue --output-dir downloads)."))
    var resume = false

    @Option(
        name: [.customShort("H"), .long],
        help: ArgumentHelp(
            "Add a request header; repeatable (e.g. -H 'Accept: application/json').", valueName: "name: value"))
    var header: [String] = []

    @Option(
        name: .long, help: ArgumentHelp("Send this User-Agent (e.g. --user-agent 'mirror/1.0').", valueName: "text"))
    var userAgent: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Trust the certificate authorities in this PEM file instead of the system's (e.g. --cacert ca.pem).",
            valueName: "file"))
    var cacert: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Require the server's public key to match this pin; repeatable (e.g. --pin sha256//r8udi/Mxd6pLO7y7hZyUMWq8YnFnIWXCqeHsTDRqy8=).",
            valueName: "sha256//base64"))
    var pin: [String] = []

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "DANGEROUS: accept any TLS certificate, even forged ones; anyone on the path can read and change the "
                + "traffic. Pins still apply. For a test server only (e.g. --insecure)."))
    var insecure = false

    mutating func validate() throws {
        for (name, value) in [("--timeout", timeout), ("--max-time", maxTime)] {
            if let value, !(value.isFinite && value > 0 && value <= 7 * 24 * 3600) {
                throw ValidationError("\(name) must be a number of seconds above 0.")
            }
        }
        guard (0...100).contains(retry) else { throw ValidationError("--retry must be between 0 and 100.") }
        // Every wait is capped at this: a larger first wait would not be honoured.
        let cap = RetrySchedule.defaultMaximumDelay
        guard retryDelay.isFinite, retryDelay >= 0, retryDelay <= cap else {
            throw ValidationError(
                "--retry-delay must be between 0 and \(Int(cap)) seconds (every wait is capped there).")
        }
        if let cacert, !FileManager.default.isReadableFile(atPath: cacert) {
            throw ValidationError("--cacert \(cacert) can't be read.")
        }
        _ = try headerFields()
        _ = try securityPolicy()
    }

    /// `-H` and `--user-agent` as header fields.
    func headerFields() throws -> HTTPHeaders {
        var headers = HTTPHeaders()
        for line in header {
            guard let colon = line.firstIndex(of: ":") else {
                throw ValidationError("-H '\(line)' is not 'Name: value'.")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, name.unicodeScalars.allSatisfy(Self.isTokenCharacter),
                Self.isValidFieldValue(value)
            else {
                throw ValidationError("-H '\(line)' is not a valid header field.")
            }
            headers.add(name: name, value: value)
        }
        if let userAgent {
            // Refused like a bad -H value: a CR or LF would end the field and start one of the user's making.
            guard Self.isValidFieldValue(userAgent) else {
                throw ValidationError("--user-agent must not contain control characters such as CR or LF.")
            }
            headers.replaceOrAdd(name: "User-Agent", value: userAgent)
        } else if !headers.contains("User-Agent") {
            headers.add(
                name: "User-Agent", value: "activity-counter/\(HeraldVersion.string) \(HeraldVersion.userAgent)")
        }
        return headers
    }

    /// Whether `value` can be sent as a header field's value: no control character but tab.
    private static func isValidFieldValue(_ value: String) -> Bool {
        !value.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }
    }

    /// `--cacert`, `--pin` and `--insecure` as Herald's security policy.
    func securityPolicy() throws -> SecurityPolicy {
        do throws(HeraldError) {
            var policy: SecurityPolicy = .default
            if insecure {
                policy = .dangerouslyAcceptingInvalidCertificates()
            } else if let cacert {
                policy = try .trustingCertificateAuthorities(pemFile: URL(fileURLWithPath: cacert))
            }
            return pin.isEmpty ? policy : try policy.pinning(publicKeys: pin)
        } catch {
            throw ValidationError("--cacert/--pin: \(error.message)")
        }
    }

    /// RFC 9110 `tchar`.
    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII
            && (CharacterSet.alphanumerics.contains(scalar) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar))
    }
}

/// A byte count with an optional K, M or G suffix (powers of 1024): `500`, `10K`, `2M`.
struct ByteCount: ExpressibleByArgument, Sendable {
    let bytes: Int64

    init?(argument: String) {
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        var digits = Substring(argument.uppercased())
        var multiplier: Int64 = 1
        if let last = digits.last, let unit = units[last] {
            multiplier = unit
            digits = digits.dropLast()
        }
        guard let value = Int64(digits), value > 0 else { return nil }
        let (bytes, overflow) = value.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { return nil }
        self.bytes = bytes
    }
}
