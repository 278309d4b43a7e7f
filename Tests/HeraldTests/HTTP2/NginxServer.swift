import Foundation
import HeraldTesting
import Herald

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's nginx serving HTTP/2 on a loopback port, in the foreground, with a temporary prefix that ``stop()``
/// deletes: over TLS with a throwaway certificate, or in cleartext for clients with prior knowledge.
///
/// Its access log goes to stdout, one line per request in the form
/// `herald-h2 conn=<connection> reused=<r or .> proto=<HTTP/2.0> uri=<uri> status=<status> bytes=<sent>`:
/// `$connection` is nginx's serial number of the TCP connection the request came on, `$ssl_session_reused`
/// says whether its TLS handshake resumed an earlier session. nginx writes the line when the request ends.
///
/// Locations: `/ok/<anything>` answers `ok` at once; `/paced.bin` (256 KiB) and `/slow.bin` (2 MiB) are
/// files sent at 64 KiB/s, so a transfer of the first takes about four seconds and of the second half a
/// minute. With `requestsPerConnection`, nginx ends a connection after that many requests: at the last one it
/// sends GOAWAY naming that request's stream as the last it processes, and ignores the streams the client
/// opened after it. With `offersHTTP2` false it speaks HTTP/1.1 only. Prefer
/// ``withNginx(cleartext:offersHTTP2:requestsPerConnection:_:)``, which always stops it.
final class NginxServer: StoppableServer {
    /// The `add_header` directives of `/huge-head`: 140 fields of 1,000 bytes each.
    static let hugeHeadFields = (0..<140).map {
        "add_header X-Big-\($0) \(String(repeating: "x", count: 1000)) always;"
    }
    .joined(separator: " ")

    /// One line of the access log.
    struct LogLine: Equatable {
        let connection: String
        let sessionReused: Bool
        let serverProtocol: String
        let uri: String
        let status: Int
    }

    let port: Int
    let pki: ThrowawayPKI
    /// Whether it serves cleartext HTTP/2 (prior knowledge) rather than HTTPS.
    let cleartext: Bool
    private let daemon: ListeningDaemon

    private init(port: Int, pki: ThrowawayPKI, cleartext: Bool, daemon: ListeningDaemon) {
        self.port = port
        self.pki = pki
        self.cleartext = cleartext
        self.daemon = daemon
    }

    static let pacedBytes = 256 * 1024
    static let slowBytes = 2 * 1024 * 1024
    /// The size of `/big.bin`, served at full speed: more than a stream window and a consumer's buffer.
    static let bigBytes = 48 * 1024 * 1024

    /// The executable `make deps` installs.
    static func executable() throws -> URL {
        for path in ["/usr/sbin/nginx", "/usr/bin/nginx"] where FileManager.default.isExecutableFile(atPath: path) {
            return URL(fileURLWithPath: path)
        }
        throw LoopbackDaemon.Failure(description: "nginx is not installed; run `make deps`")
    }

    /// `https://127.0.0.1:<port><path>` (`http://` in cleartext).
    func url(_ path: String) -> URL {
        URL(string: "\(cleartext ? "http" : "https")://127.0.0.1:\(port)\(path)")!
    }

    /// A security policy that trusts the throwaway authority that issued the server's certificate.
    func securityPolicy() throws -> SecurityPolicy {
        try SecurityPolicy.trustingCertificateAuthorities(pemFile: pki.authority.certificate)
    }

    /// The access log so far.
    var accessLog: [LogLine] {
        daemon.output.split(separator: "\n").compactMap { Self.parse(String($0)) }
    }

    /// Waits until the access log has a line for each of `uris`, and returns those lines, in `uris`' order.
    func waitForRequests(_ uris: [String], timeout: Duration = .seconds(60)) async throws -> [LogLine] {
        for uri in uris {
            try await daemon.waitForLog(containing: " uri=\(uri) status=", timeout: timeout)
        }
        let log = accessLog
        return try uris.map { uri in
            guard let line = log.first(where: { $0.uri == uri }) else {
                throw LoopbackDaemon.Failure(description: "no access-log line for \(uri): \(daemon.output)")
            }
            return line
        }
    }

    private static func parse(_ line: String) -> LogLine? {
        guard line.hasPrefix("herald-h2 ") else { return nil }
        var fields: [String: String] = [:]
        for part in line.dropFirst("herald-h2 ".count).split(separator: " ") {
            guard let equals = part.firstIndex(of: "=") else { continue }
            fields[String(part[..<equals])] = String(part[part.index(after: equals)...])
        }
        guard let connection = fields["conn"], let reused = fields["reused"], let proto = fields["proto"],
            let uri = fields["uri"], let status = fields["status"].flatMap({ Int($0) })
        else { return nil }
        return LogLine(
            connection: connection, sessionReused: reused == "r", serverProtocol: proto, uri: uri, status: status)
    }

    /// Whether this machine's nginx can push (before 1.25.1, which dropped server push with `http2_push`): then
    /// `/pushing` answers with a push of `/ok/pushed`.
    static let pushes: Bool = {
        guard let executable = try? executable(), let newer = try? takesHTTP2Directive(executable) else { return false }
        return !newer
    }()

    /// Whether this nginx takes `http2 on;` (1.25.1 and later) rather than the `http2` parameter of `listen`.
    private static func takesHTTP2Directive(_ executable: URL) throws -> Bool {
        let process = SpawnedProcess()
        process.executableURL = executable
        process.arguments = ["-v"]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // "nginx version: nginx/1.22.1"
        guard let slash = output.range(of: "nginx/") else {
            throw LoopbackDaemon.Failure(description: "nginx -v printed no version: \(output)")
        }
        let numbers = output[slash.upperBound...].prefix { $0.isNumber || $0 == "." }.split(separator: ".")
            .compactMap { Int($0) }
        guard numbers.count >= 2 else { throw LoopbackDaemon.Failure(description: "nginx -v: \(output)") }
        let version = (numbers[0], numbers[1], numbers.count > 2 ? numbers[2] : 0)
        return version >= (1, 25, 1)
    }

    /// Makes a throwaway authority and a certificate for 127.0.0.1, starts nginx presenting it and waits until
    /// its worker runs.
    static func start(
        cleartext: Bool = false, offersHTTP2: Bool = true, requestsPerConnection: Int? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> NginxServer {
        let executable = try executable()
        let http2Directive = try takesHTTP2Directive(executable)
        let pki = try await ThrowawayPKI.make()
        do {
            let identity = try await pki.issueServerIdentity()
            let isRoot = getuid() == 0
            let daemon = try await LoopbackDaemon.start("nginx", readyText: "start worker process", timeout: timeout) {
                port, directory in
                let root = directory.appendingPathComponent("www")
                try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
                try Data(repeating: UInt8(ascii: "p"), count: pacedBytes).write(
                    to: root.appendingPathComponent("paced.bin"))
                try Data(repeating: UInt8(ascii: "s"), count: slowBytes).write(
                    to: root.appendingPathComponent("slow.bin"))
                try Data(repeating: UInt8(ascii: "b"), count: bigBytes).write(
                    to: root.appendingPathComponent("big.bin"))
                let prefix = directory.path
                let http2Parameter = offersHTTP2 && !http2Directive ? " http2" : ""
                let listen = "listen 127.0.0.1:\(port)\(cleartext ? "" : " ssl")\(http2Parameter);"
                let tls = """
                    ssl_certificate \(identity.certificate.path);
                    ssl_certificate_key \(identity.key.path);
                    # TLS 1.3 (not in nginx's default protocols before 1.23.4) and a session cache: libcurl with
                    # OpenSSL turns TLS 1.2 session tickets off, so a resumed session needs either.
                    ssl_protocols TLSv1.2 TLSv1.3;
                    ssl_session_cache shared:herald:1m;
                    """
                // Temporary paths for every module with one, whether or not this build has it: the directives
                // of a module it lacks are unknown and refused, so only the core one is named.
                let config = """
                    daemon off;
                    worker_processes 1;
                    \(isRoot ? "user root root;" : "")
                    pid \(prefix)/nginx.pid;
                    error_log stderr notice;
                    events { worker_connections 1024; }
                    http {
                        log_format herald 'herald-h2 conn=$connection reused=$ssl_session_reused proto=$server_protocol uri=$request_uri status=$status';
                        access_log /dev/stdout herald;
                        client_body_temp_path \(prefix)/client_body;
                        default_type application/octet-stream;
                        server {
                            \(listen)
                            \(offersHTTP2 && http2Directive ? "http2 on;" : "")
                            server_name localhost;
                            \(cleartext ? "" : tls)
                            \(requestsPerConnection.map { "keepalive_requests \($0);" } ?? "")
                            root \(root.path);
                            location /ok/ { return 200 "ok\\n"; }
                            location = /paced.bin { limit_rate 64k; }
                            location = /slow.bin { limit_rate 64k; }
                            # Closes the request without an answer: over HTTP/2, a reset of its stream alone.
                            location = /reset { return 444; }
                            # A response head of about 140 KiB: 140 fields of 1,000 bytes.
                            location = /huge-head { \(Self.hugeHeadFields) return 200 "ok\\n"; }
                            \(http2Directive ? "" : #"location = /pushing { http2_push /ok/pushed; return 200 "pushing\n"; }"#)
                        }
                    }

                    """
                let configFile = directory.appendingPathComponent("nginx.conf")
                try Data(config.utf8).write(to: configFile)
                // -e stderr: the compiled-in error log (/var/log/nginx) is never opened, so no root is needed.
                return try LoopbackDaemon(
                    executable: executable, arguments: ["-p", prefix, "-e", "stderr", "-c", configFile.path],
                    killsProcessGroup: true, directory: directory)
            }
            return NginxServer(port: daemon.port, pki: pki, cleartext: cleartext, daemon: daemon)
        } catch {
            pki.remove()
            throw error
        }
    }

    /// Stops nginx (master and worker), deletes its prefix and the certificates.
    func stop() async throws {
        defer { pki.remove() }
        try await daemon.stop()
    }
}

/// Runs `body` with nginx serving HTTP/2 (see ``NginxServer``) and stops it afterwards, whether `body` returns or
/// throws.
func withNginx<Result>(
    cleartext: Bool = false, offersHTTP2: Bool = true, requestsPerConnection: Int? = nil,
    _ body: (NginxServer) async throws -> Result
) async throws -> Result {
    try await withRunning(
        try await NginxServer.start(
            cleartext: cleartext, offersHTTP2: offersHTTP2, requestsPerConnection: requestsPerConnection),
        body)
}
