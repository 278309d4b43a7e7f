import Foundation
import Herald
import HeraldNotifications
import HeraldTesting
import Testing

/// HTTP/2 end to end, against nginx serving HTTP/2 over TLS on loopback with a throwaway certificate the
/// session trusts through its security policy.
@Suite("HTTP/2 against a loopback nginx", .timeLimit(.minutes(3)))
struct HTTP2Tests {
    /// A session trusting `server`'s authority, with its own notification center and a recorder on it.
    struct Client {
        let session: SessionManager
        let recorder: RecordingObserver
        /// Records the connections' changes too.
        let connections: RecordingObserver

        init(server: NginxServer, httpVersion: HTTPVersion = .automatic, connectionsPerHost: Int = 6) throws {
            var configuration = SessionConfiguration()
            configuration.maximumConnectionsPerHost = connectionsPerHost
            configuration.securityPolicy = try server.securityPolicy()
            configuration.httpVersion = httpVersion
            configuration.timeoutIntervalForRequest = 60
            let center = NotificationHub()
            recorder = RecordingObserver(center: center)
            connections = RecordingObserver(center: center, recordsConnections: true)
            session = SessionManager(configuration: configuration, notificationCenter: center)
            session.responseSerializer = DataResponseSerializer()
        }

        /// Each task's completion payload, by task.
        func completions(of tasks: [DataTask]) throws -> [TaskCompletion] {
            let byTask = Dictionary(recorder.completions.map { ($0.taskIdentifier, $0) }) { first, _ in first }
            return try tasks.map { task in try #require(byTask[task.taskIdentifier]) }
        }

        func close() { session.invalidate(cancelingTasks: true) }
    }

    @Test("64 tasks resumed at once to a new origin share one connection: one TLS handshake, 64 streams")
    func burstSharesOneConnection() async throws {
        try await withNginx { server in
            let client = try Client(server: server)
            defer { client.close() }
            let uris = (0..<64).map { "/ok/burst-\($0)" }
            let tasks = try uris.map { try client.session.dataTask(with: Request(url: server.url($0))) }
            for task in tasks { task.resume() }
            _ = try await client.recorder.waitForCompletions(64, timeout: .seconds(60))

            let completions = try client.completions(of: tasks)
            for completion in completions {
                #expect(completion.error == nil, "\(String(describing: completion.error))")
                #expect(completion.response?.statusCode == 200)
                #expect(completion.responseData == Data("ok\n".utf8))
                // What the observers' network.protocol.version is made from, and what curl measured.
                #expect(completion.response?.httpVersion == "HTTP/2")
                #expect(completion.metrics?.httpVersion == "HTTP/2")
            }
            // One connection on the client's side: every transfer's local port is the same one.
            let localPorts = Set(completions.compactMap { $0.metrics?.localPort })
            #expect(localPorts.count == 1, "local ports: \(localPorts.sorted())")
            #expect(completions.allSatisfy { $0.metrics?.localPort != nil })
            #expect(completions.filter { $0.metrics?.connectionReused == false }.count == 1)
            // The session's own numbering of its connections says the same: one, carrying the streams.
            #expect(Set(completions.map { $0.metrics?.connectionIdentifier }) == [1])
            // Every change is posted before the invalidation. The connection went active and idle (more than
            // once when a slow machine let the first streams end before the last began), then closed, and
            // never counted with another.
            await client.session.invalidateAndWait()
            let changes = client.connections.connectionChanges
            let states = changes.map(\.state)
            #expect(states.first == .active && changes.first?.previousState == nil, "\(states)")
            #expect(states.suffix(2) == [.idle, .closed], "\(states)")
            #expect(zip(changes, changes.dropFirst()).allSatisfy { $1.previousState == $0.state }, "\(states)")
            #expect(changes.allSatisfy { $0.connectionIdentifier == 1 })
            #expect(changes.dropLast().allSatisfy { $0.activeConnections + $0.idleConnections == 1 })
            #expect(changes.last?.protocolVersion == "2")

            // And on the server's: one connection (so one TLS handshake) carried all 64 requests, as HTTP/2.
            let lines = try await server.waitForRequests(uris)
            #expect(Set(lines.map(\.connection)).count == 1, "nginx connections: \(Set(lines.map(\.connection)))")
            #expect(lines.allSatisfy { $0.serverProtocol == "HTTP/2.0" && $0.status == 200 })
        }
    }

    @Test(
        "the per-host limit counts connections: with one, 150 requests (more than a connection's 100 streams) share it")
    func perHostLimitCountsConnections() async throws {
        try await withNginx { server in
            let client = try Client(server: server, connectionsPerHost: 1)
            defer { client.close() }
            let uris = (0..<150).map { "/ok/limit-\($0)" }
            let tasks = try uris.map { try client.session.dataTask(with: Request(url: server.url($0))) }
            for task in tasks { task.resume() }
            _ = try await client.recorder.waitForCompletions(150, timeout: .seconds(60))
            let completions = try client.completions(of: tasks)
            #expect(completions.allSatisfy { $0.error == nil && $0.response?.statusCode == 200 })
            #expect(completions.allSatisfy { $0.metrics?.httpVersion == "HTTP/2" })
            let lines = try await server.waitForRequests(uris)
            #expect(Set(lines.map(\.connection)).count == 1, "nginx connections: \(Set(lines.map(\.connection)))")
        }
    }

    @Test("over HTTP/1.1 the per-host limit still bounds the connections a burst opens")
    func perHostLimitOverHTTP1() async throws {
        try await withNginx { server in
            let client = try Client(server: server, httpVersion: .http1_1, connectionsPerHost: 2)
            defer { client.close() }
            // Paced bodies (four seconds each), so that every request of the burst wants a connection at once.
            let ports = try await Self.pacedHTTP1Burst(of: 4, on: client, to: server)
            #expect(ports.count == 2, "local ports: \(ports.sorted())")
        }
    }

    /// Resumes `count` GETs of the paced body at once, checks that each got the whole body over HTTP/1.1, and
    /// returns the local ports their connections used.
    static func pacedHTTP1Burst(of count: Int, on client: Client, to server: NginxServer) async throws -> Set<Int> {
        let tasks = try (0..<count).map { _ in
            try client.session.dataTask(with: Request(url: server.url("/paced.bin")))
        }
        for task in tasks { task.resume() }
        _ = try await client.recorder.waitForCompletions(count, timeout: .seconds(60))
        let completions = try client.completions(of: tasks)
        #expect(completions.allSatisfy { $0.error == nil && $0.responseData?.count == NginxServer.pacedBytes })
        #expect(completions.allSatisfy { $0.metrics?.httpVersion == "HTTP/1.1" })
        return Set(completions.compactMap { $0.metrics?.localPort })
    }

    @Test("a burst to an HTTPS server without HTTP/2 waits for one handshake, then opens a connection per request")
    func burstToHTTP1OnlyServer() async throws {
        try await withNginx(offersHTTP2: false) { server in
            let client = try Client(server: server)
            defer { client.close() }
            // Paced bodies (four seconds each): were the requests held until the first one's end, each would
            // take the connection the one before left, and one connection would carry them all.
            let ports = try await Self.pacedHTTP1Burst(of: 4, on: client, to: server)
            #expect(ports.count == 4, "local ports: \(ports.sorted())")
        }
    }

    @Test("a multiplexed task's lifecycle timeline is the same as over HTTP/1.1")
    func timelineAsOverHTTP1() async throws {
        try await withNginx { server in
            var timelines: [HTTPVersion: [[RecordingObserver.Kind]]] = [:]
            for version in [HTTPVersion.http1_1, .automatic] {
                let client = try Client(server: server, httpVersion: version)
                defer { client.close() }
                let tasks = try (0..<8).map {
                    try client.session.dataTask(with: Request(url: server.url("/ok/timeline-\(version)-\($0)")))
                }
                for task in tasks { task.resume() }
                _ = try await client.recorder.waitForCompletions(8, timeout: .seconds(60))
                let completions = try client.completions(of: tasks)
                #expect(completions.allSatisfy { $0.error == nil && $0.response?.statusCode == 200 })
                let expected = version == .http1_1 ? "HTTP/1.1" : "HTTP/2"
                #expect(completions.allSatisfy { $0.metrics?.httpVersion == expected })
                timelines[version] = tasks.map { client.recorder.timeline(ofTask: $0.taskIdentifier) }
                // Nothing but one resume and one complete per task.
                #expect(client.recorder.events.count == 16, "\(client.recorder.timeline)")
            }
            let overHTTP2 = try #require(timelines[.automatic])
            #expect(overHTTP2 == timelines[.http1_1])
            #expect(overHTTP2.allSatisfy { $0 == [.resume, .complete] }, "\(overHTTP2)")
        }
    }

    @Test("cancelling one stream ends it alone: the others on its connection finish")
    func cancelOneStream() async throws {
        try await withNginx { server in
            let client = try Client(server: server)
            defer { client.close() }
            // The slow body takes half a minute: it is cancelled at its first bytes, while the paced ones
            // (four seconds each) are still arriving on the same connection.
            let canceller = ActionAtProgress<DataTask>(atLeast: 1) { $0.cancel() }
            let slow = try client.session.dataTask(
                with: Request(url: server.url("/slow.bin")), downloadProgress: canceller.handler)
            canceller.attach(slow)
            let pacedURIs = (0..<8).map { _ in "/paced.bin" }
            let paced = try pacedURIs.map { try client.session.dataTask(with: Request(url: server.url($0))) }
            slow.resume()
            for task in paced { task.resume() }
            _ = try await client.recorder.waitForCompletions(9, timeout: .seconds(60))

            let slowCompletion = try #require(try client.completions(of: [slow]).first)
            #expect(slowCompletion.error?.code == .cancelled, "\(String(describing: slowCompletion.error))")
            let pacedCompletions = try client.completions(of: paced)
            for completion in pacedCompletions {
                #expect(completion.error == nil, "\(String(describing: completion.error))")
                #expect(completion.response?.statusCode == 200)
                #expect(completion.responseData?.count == NginxServer.pacedBytes)
                #expect(completion.metrics?.httpVersion == "HTTP/2")
            }
            // The cancellation came first: the paced bodies were still arriving when the stream was reset.
            let order = client.recorder.events.filter { $0.kind == .complete }.compactMap(\.taskIdentifier)
            #expect(order.first == slow.taskIdentifier, "completion order: \(order)")
            // All on the one connection, which the reset stream left open.
            let ports = Set((pacedCompletions + [slowCompletion]).compactMap { $0.metrics?.localPort })
            #expect(ports.count == 1, "local ports: \(ports.sorted())")
            #expect(pacedCompletions.allSatisfy { $0.metrics?.localPort != nil })
            #expect(slow.state == .completed)
        }
    }

    @Test("a stream the server resets fails alone, as a lost connection: the others on its connection finish")
    func serverResetsOneStream() async throws {
        try await withNginx { server in
            let client = try Client(server: server)
            defer { client.close() }
            // The paced bodies take four seconds each: still arriving when the reset comes.
            let paced = try (0..<4).map { _ in try client.session.dataTask(with: Request(url: server.url("/paced.bin")))
            }
            for task in paced { task.resume() }
            let reset = try client.session.dataTask(with: Request(url: server.url("/reset")))
            reset.resume()
            _ = try await client.recorder.waitForCompletions(5, timeout: .seconds(60))

            let resetCompletion = try #require(try client.completions(of: [reset]).first)
            let error = try #require(resetCompletion.error, "the reset stream succeeded")
            #expect(error.code == .networkConnectionLost, "\(error)")
            #expect(error.curlCode == 92, "\(error)")
            #expect(client.recorder.timeline(ofTask: reset.taskIdentifier) == [.resume, .complete])
            let pacedCompletions = try client.completions(of: paced)
            for completion in pacedCompletions {
                #expect(completion.error == nil, "\(String(describing: completion.error))")
                #expect(completion.responseData?.count == NginxServer.pacedBytes)
            }
            // The reset came first, and left the connection the paced bodies arrived on open.
            let order = client.recorder.events.filter { $0.kind == .complete }.compactMap(\.taskIdentifier)
            #expect(order.first == reset.taskIdentifier, "completion order: \(order)")
            let ports = Set(pacedCompletions.compactMap { $0.metrics?.localPort })
            #expect(ports.count == 1, "local ports: \(ports.sorted())")
            let lines = try await server.waitForRequests(["/reset"])
            #expect(lines.first?.serverProtocol == "HTTP/2.0")
        }
    }

    @Test(
        "server push is declined: a server set to push pushes nothing, and each task gets its own answer alone",
        .enabled(if: NginxServer.pushes, "this nginx no longer pushes (server push was dropped in 1.25.1)"))
    func pushIsDeclined() async throws {
        try await withNginx { server in
            let client = try Client(server: server)
            defer { client.close() }
            let tasks = try (0..<3).map { _ in try client.session.dataTask(with: Request(url: server.url("/pushing"))) }
            // One after another on the one connection: by the time the last answer is in, a push the first
            // two answers came with would long have been served.
            for (index, task) in tasks.enumerated() {
                task.resume()
                _ = try await client.recorder.waitForCompletions(index + 1, timeout: .seconds(30))
            }
            // Nothing but each task's resume and complete.
            #expect(client.recorder.events.count == 2 * tasks.count, "\(client.recorder.timeline)")
            for completion in try client.completions(of: tasks) {
                #expect(completion.error == nil, "\(String(describing: completion.error))")
                #expect(completion.responseData == Data("pushing\n".utf8))
                #expect(completion.metrics?.httpVersion == "HTTP/2")
            }
            // libcurl tells the server at the start of each connection that it takes no pushes
            // (SETTINGS_ENABLE_PUSH 0): nginx, told to push /ok/pushed with each answer, never does.
            let lines = try await server.waitForRequests(["/pushing"])
            #expect(lines.allSatisfy { $0.serverProtocol == "HTTP/2.0" })
            #expect(!server.accessLog.contains { $0.uri == "/ok/pushed" }, "\(server.accessLog)")
        }
    }

    @Test("a second connection to the server resumes the TLS session the first one negotiated")
    func tlsSessionResumedAcrossConnections() async throws {
        try await withNginx { server in
            // HTTP/1.1, so that a second request while the first connection is busy needs a connection of its own.
            let client = try Client(server: server, httpVersion: .http1_1)
            defer { client.close() }
            let first = try client.session.dataTask(with: Request(url: server.url("/ok/first")))
            first.resume()
            _ = try await client.recorder.waitForCompletions(1, timeout: .seconds(30))

            // The first connection is busy with the paced body (on the first transfer's easy handle, which the
            // session kept) when the second request starts, on another easy handle and a new connection.
            let bodyStarted = OneShot<Void>()
            let paced = try client.session.dataTask(
                with: Request(url: server.url("/paced.bin")), downloadProgress: { _ in bodyStarted.send(()) })
            paced.resume()
            try await bodyStarted.value(timeout: .seconds(30))
            let second = try client.session.dataTask(with: Request(url: server.url("/ok/second")))
            second.resume()
            _ = try await client.recorder.waitForCompletions(3, timeout: .seconds(30))

            let completions = try client.completions(of: [first, paced, second])
            #expect(completions.allSatisfy { $0.error == nil && $0.response?.statusCode == 200 })
            let ports = completions.map { $0.metrics?.localPort }
            #expect(ports[0] == ports[1], "the paced body reuses the first connection: \(ports)")
            #expect(ports[2] != ports[1], "the second request opens a connection of its own: \(ports)")

            let lines = try await server.waitForRequests(["/ok/first", "/paced.bin", "/ok/second"])
            #expect(lines[0].connection != lines[2].connection)
            #expect(lines[0].sessionReused == false, "\(lines[0])")
            #expect(lines[2].sessionReused == true, "the second handshake was a full one: \(lines[2])")
        }
    }

    @Test(
        "after a GOAWAY the streams it left unprocessed succeed on a new connection; each task posts one resume and one complete"
    )
    func goawayMovesStreamsToANewConnection() async throws {
        // nginx ends each connection after two requests: at the second it sends GOAWAY naming that stream the
        // last it processes, and ignores the streams opened after it.
        try await withNginx(requestsPerConnection: 2) { server in
            let client = try Client(server: server)
            defer { client.close() }
            let uris = (0..<8).map { "/ok/goaway-\($0)" }
            let tasks = try uris.map { try client.session.dataTask(with: Request(url: server.url($0))) }
            for task in tasks { task.resume() }
            _ = try await client.recorder.waitForCompletions(8, timeout: .seconds(60))

            let completions = try client.completions(of: tasks)
            for (task, completion) in zip(tasks, completions) {
                #expect(completion.error == nil, "\(String(describing: completion.error))")
                #expect(completion.response?.statusCode == 200)
                #expect(completion.metrics?.httpVersion == "HTTP/2")
                // One resume, one complete: a request sent again is not the task's business.
                #expect(client.recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
            }
            // Nothing else was posted: no retry, no wait for connectivity.
            #expect(client.recorder.events.count == 16, "\(client.recorder.timeline)")

            // Every request was processed once, no connection carried more than two, so at least four were used.
            let lines = try await server.waitForRequests(uris)
            let perConnection = Dictionary(grouping: lines, by: \.connection).mapValues(\.count)
            #expect(perConnection.values.allSatisfy { $0 <= 2 }, "requests per connection: \(perConnection)")
            #expect(perConnection.count >= 4, "requests per connection: \(perConnection)")
            #expect(server.accessLog.count == 8, "\(server.accessLog)")
        }
    }

    @Test(
        "a request on a kept HTTP/2 connection that the server shuts down with GOAWAY, no other stream open, succeeds on a new one"
    )
    func goawayOnIdleKeptConnection() async throws {
        try await withKeptShuttingDownConnection { server, session, recorder, url in
            // The next request goes out on the kept connection as stream 3, which the GOAWAY leaves unprocessed.
            let second = try session.dataTask(with: Request(url: url))
            second.resume()
            _ = try await recorder.waitForCompletions(2, timeout: .seconds(30))
            #expect(second.error == nil, "\(String(describing: second.error))")
            #expect(second.response?.statusCode == 200)
            #expect(server.goawaysSent == 1)
            #expect(server.acceptedConnections == 2)
            #expect(recorder.timeline(ofTask: second.taskIdentifier) == [.resume, .complete])
        }
    }

    @Test(
        "a POST the server refuses with GOAWAY before processing it, no other stream open, is sent again on a new connection and processed once"
    )
    func goawayRefusedPostSucceedsOnNewConnection() async throws {
        try await withKeptShuttingDownConnection { server, session, recorder, url in
            let body = Data("order=42&quantity=1".utf8)
            // Stream 3 on the kept connection: HEADERS and DATA, then the GOAWAY naming stream 1 the last.
            let task = try session.uploadTask(with: Request(url: url, method: "POST"), from: body)
            task.resume()
            _ = try await recorder.waitForCompletions(2, timeout: .seconds(30))
            #expect(task.error == nil, "\(String(describing: task.error))")
            #expect(task.response?.statusCode == 200)
            #expect(task.response?.httpVersion == "HTTP/2")
            #expect(server.goawaysSent == 1)
            #expect(server.acceptedConnections == 2)
            // Processed once, whole, on the new connection (its upgrade request).
            let posts = server.processedRequests.filter { $0.method == "POST" }
            #expect(posts == [.init(method: "POST", path: "/", body: body)], "\(posts)")
            #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        }
    }

    @Test("two POSTs open together that one GOAWAY refuses are each sent again on a new connection and processed once")
    func goawayRefusesTwoStreams() async throws {
        try await withKeptShuttingDownConnection(streamsBeforeGoaway: 2) { server, session, recorder, url in
            let bodies = [Data("order=1".utf8), Data("order=2".utf8)]
            let tasks = try bodies.map { try session.uploadTask(with: Request(url: url, method: "POST"), from: $0) }
            for task in tasks { task.resume() }
            _ = try await recorder.waitForCompletions(3, timeout: .seconds(30))
            for task in tasks {
                // libcurl tells of the GOAWAY to one of the two alone: the other failed with a framing error.
                #expect(task.error == nil, "\(String(describing: task.error))")
                #expect(task.response?.statusCode == 200)
                #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
            }
            #expect(server.goawaysSent == 1)
            // Each processed once, whole, on a new connection of its own (its upgrade request).
            let posts = server.processedRequests.filter { $0.method == "POST" }.map(\.body)
            #expect(posts.sorted { $0.lexicographicallyPrecedes($1) } == bodies, "\(posts)")
        }
    }

    @Test(
        "a streamed POST the server refuses with GOAWAY before processing it is not sent again, and fails saying why"
    )
    func goawayRefusedStreamedPostIsNotResent() async throws {
        try await withKeptShuttingDownConnection { server, session, recorder, url in
            let sent = Locked(false)
            // One read gives the whole body, the next its end; no fresh stream when it must be sent again.
            let stream = BodyStream { buffer in
                let isFirstRead = sent.withLock { done in
                    defer { done = true }
                    return !done
                }
                guard isFirstRead else { return 0 }
                buffer.copyBytes(from: Data("streamed order".utf8))
                return 14
            }
            let task = try session.uploadTask(
                withStreamedRequest: Request(url: url, method: "POST"), bodyProvider: stream)
            task.resume()
            _ = try await recorder.waitForCompletions(2, timeout: .seconds(30))
            let error = try #require(task.error)
            #expect(error.code == .bodyStream, "\(error)")
            #expect(error.message.contains("GOAWAY") && error.message.contains("not sent again"), "\(error)")
            #expect(server.goawaysSent == 1)
            // No new connection, nothing processed but the first request.
            #expect(server.acceptedConnections == 1)
            #expect(server.processedRequests.map(\.method) == ["GET"])
            #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        }
    }

    @Test("a POST whose stream a GOAWAY names as the last one, which the server may have processed, is not sent again")
    func goawayNamingThePostIsNotResent() async throws {
        try await withKeptShuttingDownConnection(namingTheNewStreamLast: true) { server, session, recorder, url in
            let task = try session.uploadTask(with: Request(url: url, method: "POST"), from: Data("order=7".utf8))
            task.resume()
            _ = try await recorder.waitForCompletions(2, timeout: .seconds(30))
            #expect(task.error != nil)
            #expect(task.response == nil)
            #expect(server.goawaysSent == 1)
            #expect(server.acceptedConnections == 1)
            #expect(recorder.timeline(ofTask: task.taskIdentifier) == [.resume, .complete])
        }
    }

    /// Runs `body` with a session whose first request (a GET, answered on stream 1) left a kept HTTP/2
    /// connection to a ``ShuttingDownH2CServer``, which ends the connection with a GOAWAY at the next stream on
    /// it: refusing that stream, or with `namingTheNewStreamLast` naming it the last one.
    private func withKeptShuttingDownConnection(
        namingTheNewStreamLast: Bool = false, streamsBeforeGoaway: Int = 1,
        _ body: (ShuttingDownH2CServer, SessionManager, RecordingObserver, URL) async throws -> Void
    ) async throws {
        let server = try ShuttingDownH2CServer(
            namingTheNewStreamLast: namingTheNewStreamLast, streamsBeforeGoaway: streamsBeforeGoaway)
        defer { server.stop() }
        var configuration = SessionConfiguration()
        configuration.httpVersion = .http2
        let center = NotificationHub()
        let recorder = RecordingObserver(center: center)
        let session = SessionManager(configuration: configuration, notificationCenter: center)
        defer { session.invalidate(cancelingTasks: true) }
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)/"))
        let first = try session.dataTask(with: Request(url: url))
        first.resume()
        _ = try await recorder.waitForCompletions(1, timeout: .seconds(30))
        try #require(first.error == nil && first.response?.httpVersion == "HTTP/2")
        try await body(server, session, recorder, url)
    }

    @Test("an HTTP/2 response head larger than libcurl takes fails with badServerResponse, not a lost connection")
    func oversizedHeadOverHTTP2() async throws {
        try await withNginx { server in
            let client = try Client(server: server, httpVersion: .http2)
            defer { client.close() }
            let task = try client.session.dataTask(with: Request(url: server.url("/huge-head")))
            task.resume()
            _ = try await client.recorder.waitForCompletions(1, timeout: .seconds(30))
            let error = try #require(task.error)
            #expect(error.code == .badServerResponse, "\(error)")
            #expect(error.message.contains("larger than libcurl accepts"))
        }
    }

    @Test("a streamed body its consumer doesn't read holds back no other request to the host")
    func unreadStreamHoldsBackNoOtherRequest() async throws {
        try await withNginx { server in
            let client = try Client(server: server, httpVersion: .http2)
            defer { client.close() }
            let policy = StreamBufferPolicy(highWatermark: 64 << 10, lowWatermark: 16 << 10)
            let (head, body) = try await client.session.bytes(
                for: Request(url: server.url("/big.bin")), bufferPolicy: policy)
            #expect(head.statusCode == 200)
            // Unread: the stream pauses once its buffer is full, and the server goes on sending.
            let alongside = try client.session.dataTask(with: Request(url: server.url("/ok/alongside")))
            alongside.resume()
            _ = try await client.recorder.waitForCompletions(1, timeout: .seconds(20))
            #expect(alongside.error == nil, "\(String(describing: alongside.error))")
            #expect(alongside.response?.statusCode == 200)
            var received = 0
            for try await chunk in body { received += chunk.count }
            #expect(received == NginxServer.bigBytes)
            // Both on one HTTP/2 connection: the unread stream's pause was the connection's to bear.
            _ = try await client.recorder.waitForCompletions(2, timeout: .seconds(20))
            let ports = client.recorder.completions.map { $0.metrics?.localPort }
            #expect(head.httpVersion == "HTTP/2")
            #expect(ports.count == 2 && ports[0] == ports[1], "\(ports)")
        }
    }

    @Test("HTTP/2 with prior knowledge against a server that speaks HTTP/1.1 only: badServerResponse that says so")
    func priorKnowledgeAgainstHTTP1() async throws {
        try await withNginx(cleartext: true, offersHTTP2: false) { server in
            let client = try Client(server: server, httpVersion: .http2PriorKnowledge)
            defer { client.close() }
            let task = try client.session.dataTask(with: Request(url: server.url("/ok/prior")))
            task.resume()
            _ = try await client.recorder.waitForCompletions(1, timeout: .seconds(30))
            let error = try #require(task.error)
            #expect(error.code == .badServerResponse)
            #expect(error.message.contains("prior knowledge"), "\(error)")
        }
    }

    @Test("HTTP/2 with prior knowledge over TLS shares its connection: one handshake for requests one after another")
    func priorKnowledgeOverTLSReusesConnection() async throws {
        try await withNginx { server in
            let client = try Client(server: server, httpVersion: .http2PriorKnowledge)
            defer { client.close() }
            var tasks: [DataTask] = []
            for index in 0..<3 {
                let task = try client.session.dataTask(with: Request(url: server.url("/ok/tls-prior-\(index)")))
                tasks.append(task)
                task.resume()
                _ = try await client.recorder.waitForCompletions(index + 1, timeout: .seconds(30))
            }
            let completions = try client.completions(of: tasks)
            for completion in completions {
                #expect(completion.error == nil, "\(String(describing: completion.error))")
                #expect(completion.metrics?.httpVersion == "HTTP/2")
            }
            // Before, each request paid a connection and a TLS handshake of its own.
            #expect(Set(completions.compactMap { $0.metrics?.connectionIdentifier }).count == 1)
            #expect(completions.dropFirst().allSatisfy { $0.metrics?.connectionReused == true })
        }
    }

    @Test(
        "HTTP/2 with prior knowledge: POSTs alternating between an HTTPS and a cleartext origin each go as their scheme does"
    )
    func priorKnowledgeAcrossSchemes() async throws {
        try await withNginx { secure in
            try await withNginx(cleartext: true) { cleartext in
                let client = try Client(server: secure, httpVersion: .http2PriorKnowledge)
                defer { client.close() }
                // One after another, so that each transfer takes the easy handle the one before left in the pool.
                let urls = [
                    secure.url("/ok/across-0"), cleartext.url("/ok/across-1"),
                    cleartext.url("/ok/across-2"), secure.url("/ok/across-3"), secure.url("/ok/across-4"),
                ]
                var tasks: [DataTask] = []
                for (index, url) in urls.enumerated() {
                    let request = Request(url: url, method: "POST", body: Data("post \(index)".utf8))
                    let task = try client.session.dataTask(with: request)
                    tasks.append(task)
                    task.resume()
                    _ = try await client.recorder.waitForCompletions(index + 1, timeout: .seconds(30))
                }
                let completions = try client.completions(of: tasks)
                for completion in completions {
                    // A cleartext POST on the connection the one before left would fail with this libcurl.
                    #expect(completion.error == nil, "\(String(describing: completion.error))")
                    #expect(completion.metrics?.httpVersion == "HTTP/2")
                }
                // Cleartext: a connection each. Over TLS: the last two share the first's, as they would without
                // the cleartext ones between.
                #expect(completions[2].metrics?.connectionReused == false)
                #expect(completions[3].metrics?.connectionReused == true)
                #expect(completions[4].metrics?.connectionReused == true)
            }
        }
    }

    @Test("HTTP/2 with prior knowledge: requests one after another and at once all succeed")
    func priorKnowledgeRequestsSucceed() async throws {
        try await withNginx(cleartext: true) { server in
            let client = try Client(server: server, httpVersion: .http2PriorKnowledge)
            defer { client.close() }
            // One after another: each would reuse the connection the one before left.
            var tasks: [DataTask] = []
            for index in 0..<3 {
                let task = try client.session.dataTask(with: Request(url: server.url("/ok/sequential-\(index)")))
                tasks.append(task)
                task.resume()
                _ = try await client.recorder.waitForCompletions(index + 1, timeout: .seconds(30))
            }
            // And at once.
            let burst = try (0..<8).map {
                try client.session.dataTask(with: Request(url: server.url("/ok/burst-\($0)")))
            }
            for task in burst { task.resume() }
            _ = try await client.recorder.waitForCompletions(11, timeout: .seconds(30))
            tasks += burst
            for completion in try client.completions(of: tasks) {
                #expect(completion.error == nil, "\(String(describing: completion.error))")
                #expect(completion.response?.statusCode == 200)
                #expect(completion.response?.httpVersion == "HTTP/2")
                #expect(completion.metrics?.httpVersion == "HTTP/2")
            }
            let lines = try await server.waitForRequests(tasks.map { $0.originalRequest.url.path })
            #expect(lines.allSatisfy { $0.serverProtocol == "HTTP/2.0" && $0.status == 200 })
        }
    }
}
