import Foundation
import Herald

/// What one fleet service is told on its command line.
///
/// `fleet-service --name NAME --otlp URL [--port PORT] [--downstream URL] [--service-version VERSION]
/// [--instance-id ID]`: it listens on 127.0.0.1:PORT (0, the default, picks a free port; the port is printed as
/// `listening on PORT`), exports logs, metrics and traces over OTLP/HTTP to URL, and, given `--downstream`,
/// answers `/work` by calling that service's `/work` through a Herald session.
struct ServiceOptions {
    /// The service's name: OpenTelemetry's `service.name`, and its job's name in Prometheus.
    var name: String
    /// OpenTelemetry's `service.version`; default ``defaultVersion``.
    var version: String
    /// OpenTelemetry's `service.instance.id`; default a random UUID, new for each process.
    var instanceID: String
    /// The loopback port to listen on; 0 for any free one.
    var port: Int
    /// The OTLP/HTTP receiver's base URL, such as `http://127.0.0.1:4318`.
    var otlpEndpoint: URL
    /// The service `/work` calls, if any.
    var downstream: URL?

    /// The sample's version, its `service.version` unless `--service-version` says otherwise: the sample is
    /// versioned with Herald.
    static let defaultVersion = HeraldVersion.string

    /// What `--help` prints.
    static let usage = """
        usage: fleet-service --name NAME --otlp URL [--port PORT] [--downstream URL] [--service-version VERSION]
                             [--instance-id ID]
          --name NAME                 the service's name (OpenTelemetry's service.name, Prometheus's job)
          --otlp URL                  the OTLP/HTTP receiver's base URL, such as http://127.0.0.1:4318
          --port PORT                 the port to listen on at 127.0.0.1; 0 (the default) for any free one
          --downstream URL            answer /work by calling this service's /work through Herald
          --service-version VERSION   OpenTelemetry's service.version (default \(defaultVersion))
          --instance-id ID            OpenTelemetry's service.instance.id (default a random UUID)
          --help                      print this and exit
        OTEL_* environment variables are ignored (and said so on standard error): the command line wins.
        Exit status: 0 after --help, 64 for a bad command line, 74 when standard output can't be written (the
        usage, or the "listening on PORT" line), 1 when the service fails.
        """

    /// A command line that does not say what the service needs, or that asks for help.
    struct UsageError: Error, CustomStringConvertible {
        let description: String
        /// Whether it asked for the usage (`--help` or `-h`) rather than got something wrong.
        var isHelp = false
    }

    /// Reads `arguments` (without the program name).
    /// - Throws: ``UsageError`` for `--help` (``UsageError/isHelp``), an unknown option, a missing or malformed value, or a missing `--name` or
    ///   `--otlp`.
    init(arguments: [String]) throws(UsageError) {
        var values: [String: String] = [:]
        var remaining = arguments[...]
        while let option = remaining.popFirst() {
            if option == "--help" || option == "-h" { throw UsageError(description: Self.usage, isHelp: true) }
            guard ["--name", "--port", "--otlp", "--downstream", "--service-version", "--instance-id"].contains(option)
            else {
                throw UsageError(description: "unknown option \(option)")
            }
            guard let value = remaining.popFirst() else { throw UsageError(description: "\(option) needs a value") }
            values[option] = value
        }
        guard let name = values["--name"], !name.isEmpty else { throw UsageError(description: "--name is required") }
        guard let otlp = values["--otlp"].flatMap(Self.httpURL) else {
            throw UsageError(description: "--otlp needs an http URL")
        }
        let port = values["--port"].map { Int($0) } ?? 0
        guard let port, (0...65_535).contains(port) else { throw UsageError(description: "--port needs 0…65535") }
        var downstream: URL?
        if let value = values["--downstream"] {
            guard let url = Self.httpURL(value) else { throw UsageError(description: "--downstream needs an http URL") }
            downstream = url
        }
        let version = values["--service-version"] ?? Self.defaultVersion
        let instanceID = values["--instance-id"] ?? UUID().uuidString.lowercased()
        guard !version.isEmpty, !instanceID.isEmpty else {
            throw UsageError(description: "--service-version and --instance-id need a non-empty value")
        }
        self.name = name
        self.version = version
        self.instanceID = instanceID
        self.port = port
        self.otlpEndpoint = otlp
        self.downstream = downstream
    }

    private static func httpURL(_ text: String) -> URL? {
        guard let url = URL(string: text), url.scheme == "http", url.host != nil else { return nil }
        return url
    }
}
