import Foundation
import Herald
import HeraldNotifications
import HeraldObservers
import Hummingbird
import Logging
import Metrics
import NIOCore
import ServiceLifecycle
import Tracing

/// One service of the sample fleet: a Hummingbird server on loopback whose `/work` either answers itself or,
/// with a downstream, answers by calling the downstream's `/work` through a Herald session observed by
/// HeraldObservers' metrics, tracing and logging observers.
@main
enum FleetService {
    static func main() async {
        // A service calls loopback alone: a proxy the environment names (http_proxy, all_proxy, …) is for the world
        // outside. Set before anything runs, on one thread.
        setenv("no_proxy", "127.0.0.1,::1,localhost", 1)
        setenv("NO_PROXY", "127.0.0.1,::1,localhost", 1)
        let options: ServiceOptions
        do {
            options = try ServiceOptions(arguments: Array(CommandLine.arguments.dropFirst()))
        } catch {
            // `write(contentsOf:)`, never Foundation's `write(_:)`, which traps when the stream is closed or full:
            // the exit status still says what happened.
            if error.isHelp {
                let written: ()? = try? FileHandle.standardOutput.write(
                    contentsOf: Data("\(ServiceOptions.usage)\n".utf8))
                exit(written == nil ? 74 : 0)
            }
            try? FileHandle.standardError.write(
                contentsOf: Data("fleet-service: \(error)\n\(ServiceOptions.usage)\n".utf8))
            exit(64)
        }
        // The command line wins over OpenTelemetry's environment variables: swift-otel would let them replace
        // the endpoint `--otlp` gives (or stop the process on a value it does not support).
        Telemetry.ignoreOTelEnvironment(service: options.name)
        do {
            try await run(options)
        } catch {
            try? FileHandle.standardError.write(contentsOf: Data("fleet-service \(options.name): \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ options: ServiceOptions) async throws {
        let (telemetry, tracer) = try Telemetry.bootstrap(
            resource: ServiceResource(name: options.name, version: options.version, instanceID: options.instanceID),
            otlpEndpoint: options.otlpEndpoint)
        let logger = Logger(label: options.name)
        let router = Router()
        router.middlewares.add(TracingMiddleware())
        router.middlewares.add(MetricsMiddleware())
        let registry = telemetry.registry
        router.get("metrics") { _, _ -> Response in
            var text: [UInt8] = []
            registry.emit(into: &text)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: text)))
        }
        router.get("health") { _, _ in "ok" }

        var observations: [ObservationToken] = []
        var session: SessionManager?
        if let downstream = options.downstream {
            // At most six connections to the downstream (Herald's default, said here because the fleet's tests
            // measure the wait for one): a seventh concurrent request waits, and its wait shows as
            // `http.client.request.time_in_queue`.
            var configuration = SessionConfiguration()
            configuration.maximumConnectionsPerHost = 6
            // A total limit too: with none (the default), libcurl sizes its cache of idle connections by the
            // transfers running when one ends and closes the oldest beyond that as a burst winds down, so the
            // next burst connects again (measured here: 13 connections for eight bursts of 16 instead of 6).
            configuration.maximumConnectionsTotal = 16
            let client = SessionManager(configuration: configuration)
            let center = client.notificationCenter
            let tracing = TracingObserver(tracer: tracer)
            var clientLogger = Logger(label: "\(options.name).herald")
            clientLogger.logLevel = .debug
            // Units and descriptions as dimensions: swift-otel makes them the OTLP instruments' unit and
            // description; HeraldPrometheusFactory drops them (the unit is in the Prometheus name).
            var metricsConfiguration = MetricsObserver.Configuration()
            metricsConfiguration.describesInstruments = true
            observations = [
                MetricsObserver(factory: MetricsSystem.factory, configuration: metricsConfiguration).observe(center),
                tracing.observe(center),
                LoggingObserver(logger: clientLogger).observe(center),
            ]
            let relay = Relay(session: client, tracing: tracing, downstream: downstream)
            router.get("work") { request, _ in await relay.forward(query: request.uri.query) }
            session = client
        } else {
            router.get("work") { request, _ in try await Work.answer(query: request.uri.query) }
        }

        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: options.port), serverName: options.name),
            services: telemetry.services,
            onServerRunning: { channel in
                // The harness reads the port from this line: a service that can't tell it is of no use, and stops.
                do {
                    try FileHandle.standardOutput.write(
                        contentsOf: Data("listening on \(channel.localAddress?.port ?? 0)\n".utf8))
                } catch {
                    try? FileHandle.standardError.write(
                        contentsOf: Data("fleet-service \(options.name): cannot write the port: \(error)\n".utf8))
                    exit(74)
                }
            },
            logger: logger)
        try await app.runService()
        observations.forEach { $0.cancel() }
        await session?.invalidateAndWait()
    }
}

/// Service A's `/work`: the same request to the downstream's `/work`, through Herald, inside the incoming
/// request's span.
struct Relay<T: Tracer>: Sendable where T.Span: Sendable {
    let session: SessionManager
    let tracing: TracingObserver<T>
    let downstream: URL

    func forward(query: String?) async -> Response {
        // Foundation traps when given a query that is not valid percent-encoded text: check it first, and
        // answer 400 when it is not.
        if let query, !Work.isValidQuery(query) {
            return Response(
                status: .badRequest, body: ResponseBody(byteBuffer: ByteBuffer(string: "malformed query\n")))
        }
        var components = URLComponents(url: downstream.appending(path: "work"), resolvingAgainstBaseURL: false)
        components?.percentEncodedQuery = query
        guard let url = components?.url else { return Response(status: .badRequest) }
        // The client span starts before the task exists, so the traceparent sent names it: B's server span
        // becomes its child.
        let outgoing = tracing.startSpan(for: Herald.Request(url: url))
        do {
            let (body, response) = try await session.data(for: outgoing)
            let status = HTTPResponse.Status(code: response.statusCode)
            // 1xx, 204 and 304 have no body: one written after them would be read as the start of the next
            // response on the client's connection.
            guard Work.allowsBody(status.code) else { return Response(status: status) }
            return Response(status: status, body: ResponseBody(byteBuffer: ByteBuffer(bytes: Array("a>".utf8) + body)))
        } catch {
            return Response(status: .badGateway, body: ResponseBody(byteBuffer: ByteBuffer(string: "\(error.code)\n")))
        }
    }
}
