import FleetHarness
import Foundation
import Testing

/// What a fleet service does with requests and command lines it should refuse or ignore: malformed queries,
/// statuses without a body, `--help`, and OpenTelemetry's environment variables.
@Suite("Service robustness", .serialized)
struct ServiceRobustnessTests {
    @Test("a malformed query gets 400 from A and from B, and both keep answering")
    func malformedQuery() async throws {
        try await withFleet { fleet in
            for target in ["/work?a=%zz", "/work?a=%", "/work?a=b%2", "/work?a=\u{1}", "/work?a=[b]", "/work?a=%7"] {
                for service in [fleet.serviceA, fleet.serviceB] {
                    let status = try await RawHTTP.status(of: target, at: service)
                    #expect(status == 400, "\(target) at \(service.absoluteString)")
                }
            }
            #expect(try await fleet.request("/work") == 200)
            #expect(try await fleet.request("/work?status=404") == 404)
        }
    }

    @Test("204 and 304 carry no body, so the connection A keeps for B answers the next request")
    func statusesWithoutBody() async throws {
        try await withFleet { fleet in
            for status in [204, 304, 204, 304] {
                #expect(try await fleet.request("/work?status=\(status)") == status)
                #expect(try await fleet.request("/work") == 200)
            }
            let statuses = try await fleet.load(
                Array(repeating: "/work?status=204", count: 20) + Array(repeating: "/work?status=304", count: 20)
                    + Array(repeating: "/work", count: 20), concurrency: 8)
            #expect(statuses == [204: 20, 304: 20, 200: 20])
            // B's own answers: no body on the wire.
            let raw = try await RawHTTP.response(to: "/work?status=204", at: fleet.serviceB)
            #expect(raw.hasPrefix("HTTP/1.1 204"), "\(raw)")
            #expect(raw.hasSuffix("\r\n\r\n"), "\(raw)")
        }
    }

    @Test("fleet-service --help prints the usage and exits 0")
    func help() async throws {
        let (status, output, _) = try await Self.run(["--help"], environment: [:])
        #expect(status == 0)
        #expect(output.hasPrefix("usage: fleet-service"), "\(output)")
        let (unknown, _, error) = try await Self.run(["--bogus"], environment: [:])
        #expect(unknown == 64)
        #expect(error.contains("unknown option --bogus"), "\(error)")
    }

    @Test("a standard stream that can't be written (a full disk) gives an exit status, never a crash")
    func unwritableStreams() async throws {
        // The usage to a full standard output: 74. A bad command line whose message can't be written: still 64.
        #expect(try await Self.status(of: ["--help"], redirecting: ">/dev/full") == 74)
        #expect(try await Self.status(of: ["--bogus"], redirecting: "2>/dev/full") == 64)
    }

    /// Runs `fleet-service` with `arguments` through `sh -c`, with the shell redirection `redirect`, and returns
    /// its exit status; fails after 60 seconds.
    static func status(of arguments: [String], redirecting redirect: String) async throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exec \"$0\" \"$@\" \(redirect)", Fleet.Locations.checkout.service.path] + arguments
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let exited = Task.detached { () -> Int32 in
            process.waitUntilExit()
            return process.terminationStatus
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(60))
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        let status = await exited.value
        timeout.cancel()
        return status
    }

    @Test("OTEL_* variables are ignored, one line each, and the service starts")
    func otelEnvironmentIgnored() async throws {
        let environment = [
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_PROPAGATORS": "b3", "OTEL_TRACES_SAMPLER": "jaeger_remote",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
        ]
        let (status, output, error) = try await Self.run(
            ["--name", "service-env", "--otlp", "http://127.0.0.1:9"], environment: environment, stopOnListening: true)
        #expect(output.contains("listening on "), "stdout: \(output) stderr: \(error)")
        // Stopped by SIGTERM once listening: a graceful exit.
        #expect(status == 0, "stderr: \(error)")
        for name in environment.keys {
            let lines = error.split(separator: "\n").filter { $0.contains("ignoring \(name):") }
            #expect(lines.count == 1, "\(name): \(error)")
        }
    }

    /// Runs `fleet-service` with `arguments` and `environment` added to this process's own; when
    /// `stopOnListening`, sends SIGTERM once it prints `listening on`. Returns the exit status, the standard
    /// output and the standard error; fails after 60 seconds.
    static func run(_ arguments: [String], environment: [String: String], stopOnListening: Bool = false)
        async throws -> (Int32, String, String)
    {
        let process = Process()
        process.executableURL = Fleet.Locations.checkout.service
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let reading = Task.detached { () -> (String, String) in
            var text = Data()
            let handle = output.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                text.append(chunk)
                if stopOnListening, String(decoding: text, as: UTF8.self).contains("listening on ") {
                    process.terminate()
                }
            }
            let errorText = error.fileHandleForReading.readDataToEndOfFile()
            return (String(decoding: text, as: UTF8.self), String(decoding: errorText, as: UTF8.self))
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(60))
            if process.isRunning { process.interrupt() }
            try await Task.sleep(for: .seconds(5))
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        let (out, err) = await reading.value
        timeout.cancel()
        process.waitUntilExit()
        return (process.terminationStatus, out, err)
    }
}

/// One HTTP/1.1 request written by hand on a socket, for request targets that `URL` would not make.
enum RawHTTP {
    /// The status of `GET target` at `base`.
    static func status(of target: String, at base: URL) async throws -> Int {
        let text = try await response(to: target, at: base)
        let fields = text.split(separator: " ", maxSplits: 2)
        guard fields.count >= 2, let status = Int(fields[1]) else { throw FleetError("no status in \(text)") }
        return status
    }

    /// The whole response to `GET target` at `base` (`Connection: close`), read until the server closes;
    /// fails after 30 seconds without a byte.
    static func response(to target: String, at base: URL) async throws -> String {
        try await response(
            sending: "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", at: base)
    }

    /// The whole response to `text`, sent as it is, read until the server closes; fails after 30 seconds
    /// without a byte.
    static func response(sending text: String, at base: URL) async throws -> String {
        guard let port = base.port else { throw FleetError("no port in \(base)") }
        return try await Task.detached { () throws -> String in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw FleetError("socket: \(errno)") }
            defer { close(fd) }
            var timeout = timeval(tv_sec: 30, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { throw FleetError("connect: \(errno)") }
            let request = Array(text.utf8)
            guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else {
                throw FleetError("send: \(errno)")
            }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count < 0, errno == EINTR { continue }
                guard count >= 0 else { throw FleetError("recv: \(errno) after \(received.count) bytes") }
                if count == 0 { break }
                received += buffer[..<count]
            }
            return String(decoding: received, as: UTF8.self)
        }.value
    }
}

/// The OTLP receiver's answers to exports it should refuse: it answers each with a status and keeps answering.
@Suite("OTLP receiver limits")
struct OTLPReceiverTests {
    @Test("no, negative or huge Content-Length, Transfer-Encoding and bad gzip get 4xx; the receiver keeps answering")
    func refusals() async throws {
        let locations = Fleet.Locations.checkout
        let process = Process()
        process.executableURL = locations.python
        process.arguments = [locations.receiverScript.path, "0"]
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let line = try await Task.detached { () throws -> String in
            var text = Data()
            while !text.contains(UInt8(ascii: "\n")) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { throw FleetError("the receiver ended: \(String(decoding: text, as: UTF8.self))") }
                text.append(chunk)
            }
            return String(decoding: text, as: UTF8.self)
        }.value
        let port = try #require(Int(line.split(separator: "\n")[0].dropFirst("listening on ".count)))
        let base = try #require(URL(string: "http://127.0.0.1:\(port)"))
        let post = "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
        for (headers, body, status) in [
            ("", "", "411"),
            ("Content-Length: -1\r\n", "", "400"),
            ("Content-Length: x\r\n", "", "400"),
            ("Content-Length: 99999999999\r\n", "", "413"),
            ("Transfer-Encoding: chunked\r\n", "0\r\n\r\n", "411"),
            ("Content-Encoding: gzip\r\nContent-Length: 3\r\n", "abc", "400"),
            ("Content-Length: 3\r\n", "\u{FF}\u{FF}\u{FF}", "400"),
        ] {
            let answer = try await RawHTTP.response(
                sending: post + headers + "Connection: close\r\n\r\n" + body, at: base)
            #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(headers): \(answer)")
        }
        let spans = try await RawHTTP.response(to: "/spans", at: base)
        #expect(spans.hasPrefix("HTTP/1.1 200 "), "\(spans)")
    }

    @Test("a port that is not one: a line on standard error and exit status 2")
    func badPort() async throws {
        let locations = Fleet.Locations.checkout
        for argument in ["port", "-1", "65536"] {
            let process = Process()
            process.executableURL = locations.python
            process.arguments = [locations.receiverScript.path, argument]
            let error = Pipe()
            process.standardError = error
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            let text = await Task.detached {
                String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            }.value
            process.waitUntilExit()
            #expect(process.terminationStatus == 2, "\(argument): \(text)")
            #expect(text.split(separator: "\n").count == 1, "\(argument): \(text)")
        }
    }
}
