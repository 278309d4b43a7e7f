import Foundation
import HeraldNotifications
import HeraldTesting
import Testing

@testable import Herald
@testable import HeraldEngine

/// Reachability and waiting for connectivity against the kernel's real routing tables, changed by the tests
/// with iproute2 in a network namespace of their own (see ``NetworkNamespace``): veth pairs, addresses,
/// default routes and host routes added and removed, links set down and up. Every request goes to a loopback
/// server; the other addresses are only ever routes asked about, never sent to.
@Suite(
    "reachability in a network namespace of its own", .serialized,
    .enabled(
        if: NetworkNamespace.unavailableReason == nil,
        Comment(rawValue: "skipped: " + (NetworkNamespace.unavailableReason ?? ""))))
struct ReachabilityNamespaceTests {
    /// Records one center's `reachabilityDidChange` as `"previous→status"` labels, with the interface's name.
    final class Changes: Sendable {
        let center = NotificationHub()
        let log = EventLog<ReachabilityChange>()
        private let token: ObservationToken

        init() {
            let log = log
            token = center.addObserver(for: .reachabilityDidChange) { log.append($0.userInfo) }
        }

        static func label(_ status: NetworkReachabilityStatus) -> String {
            status.interface.map { "\(status.label)(\($0.name))" } ?? status.label
        }

        /// Waits for `count` changes in all and returns them as labels.
        func labels(count: Int, timeout: Duration = .seconds(10)) async throws -> [String] {
            try await log.wait(forCount: count, timeout: timeout).map {
                "\(Self.label($0.previousStatus))→\(Self.label($0.status))"
            }
        }

        /// Expects no change beyond the `count` seen, for `duration`.
        func expectNoMore(than count: Int, for duration: Duration) async {
            await #expect(throws: EventLog<ReachabilityChange>.TimedOut.self) {
                try await self.log.wait(forCount: count + 1, timeout: duration)
            }
        }
    }

    /// Runs `body`, then deletes the test's links and brings loopback up again, whatever happened.
    func restoringNetwork(_ body: () async throws -> Void) async throws {
        var failure: (any Error)?
        do { try await body() } catch { failure = error }
        // One batch that goes on past its errors (links a test never made): deleting a link takes its addresses
        // and routes along; the flush takes the routes left through loopback.
        try? await NetworkNamespace.ip(
            contentsOf: [
                "link del hr0", "link del hr1", "link del hr2", "link del hr3", "route flush table main",
                "rule del prohibit to 10.212.0.7",
            ] + Self.loopbackRoutesAdded, force: true)
        try await NetworkNamespace.ip("link set lo up")
        if let failure { throw failure }
    }

    /// Runs `body` with a task of a session that waits for connectivity, resumed with its route removed (the
    /// namespace's loopback routes put back afterwards), and the resource timeout `resourceTimeout` if given.
    func withTaskWithoutRoute(
        resourceTimeout: TimeInterval? = nil, _ body: (SessionFixture, DataTask) async throws -> Void
    ) async throws {
        var configuration = SessionConfiguration()
        configuration.waitsForConnectivity = true
        if let resourceTimeout { configuration.timeoutIntervalForResource = resourceTimeout }
        let fixture = try await SessionFixture.make(configuration: configuration)
        try await restoringNetwork {
            try await NetworkNamespace.ip(contentsOf: Self.loopbackRoutesRemoved)
            let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
            task.resume()
            try await body(fixture, task)
        }
        try await fixture.tearDown()
    }

    /// A veth pair `name`/`name`p, both up, with `address` (a /24) on `name`.
    func vethPair(_ name: String, address: String) -> [String] {
        [
            "link add \(name) type veth peer name \(name)p", "link set \(name) up", "link set \(name)p up",
            "addr add \(address)/24 dev \(name)",
        ]
    }

    @Test("monitoring posts the status it read, then nothing and almost no CPU over 5 idle seconds")
    func idle() async throws {
        try await restoringNetwork {
            let changes = Changes()
            let reachability = NetworkReachability(notificationCenter: changes.center, debounceInterval: 0.05)
            try reachability.startMonitoring()
            defer { reachability.stopMonitoring() }
            // Known as soon as monitoring starts: the tables were read then.
            #expect(reachability.status == .notReachable)
            #expect(try await changes.labels(count: 1) == ["unknown→not_reachable"])
            let loopBefore = await NetworkNamespace.loopThreadCPUSeconds(of: .shared)
            let processBefore = NetworkNamespace.processCPUSeconds()
            await changes.expectNoMore(than: 1, for: .seconds(5))
            let process = NetworkNamespace.processCPUSeconds() - processBefore
            let loop = await NetworkNamespace.loopThreadCPUSeconds(of: .shared) - loopBefore
            print("reachability idle 5 s: process CPU \(process * 1000) ms, loop thread \(loop * 1000) ms")
            // The loop thread sleeps in epoll_wait with the netlink socket in it: nothing to do while nothing
            // changes. (Reading the thread's time costs one wake-up, in the second reading.)
            #expect(loop < 0.002)
            #expect(process < 0.100)
        }
    }

    @Test("each change of links, carrier, addresses and default routes posts once, in order")
    func sequence() async throws {
        try await restoringNetwork {
            let changes = Changes()
            let reachability = NetworkReachability(notificationCenter: changes.center, debounceInterval: 0.05)
            try reachability.startMonitoring()
            defer { reachability.stopMonitoring() }
            var expected = ["unknown→not_reachable"]
            #expect(try await changes.labels(count: 1) == expected)

            try await NetworkNamespace.ip(
                contentsOf: vethPair("hr0", address: "10.200.0.1") + ["route add default via 10.200.0.2 dev hr0"])
            expected.append("not_reachable→reachable_via_ethernet(hr0)")
            #expect(try await changes.labels(count: 2) == expected)
            #expect(reachability.status.interface?.kind == .ethernet)
            #expect(reachability.isReachableViaEthernet)

            // The peer down: hr0 loses its carrier; its route stays, unusable.
            try await NetworkNamespace.ip("link set hr0p down")
            expected.append("reachable_via_ethernet(hr0)→not_reachable")
            #expect(try await changes.labels(count: 3) == expected)
            try await NetworkNamespace.ip("link set hr0p up")
            expected.append("not_reachable→reachable_via_ethernet(hr0)")
            #expect(try await changes.labels(count: 4) == expected)

            // hr0 itself down: the kernel drops its routes without a message; up again, the route is added back.
            try await NetworkNamespace.ip("link set hr0 down")
            expected.append("reachable_via_ethernet(hr0)→not_reachable")
            #expect(try await changes.labels(count: 5) == expected)
            try await NetworkNamespace.ip("link set hr0 up", "route add default via 10.200.0.2 dev hr0 metric 20")
            expected.append("not_reachable→reachable_via_ethernet(hr0)")
            #expect(try await changes.labels(count: 6) == expected)

            // A second link with a better metric takes over, and hands back when it goes.
            try await NetworkNamespace.ip(
                contentsOf: vethPair("hr1", address: "10.201.0.1") + [
                    "route add default via 10.201.0.2 dev hr1 metric 10"
                ])
            expected.append("reachable_via_ethernet(hr0)→reachable_via_ethernet(hr1)")
            #expect(try await changes.labels(count: 7) == expected)
            try await NetworkNamespace.ip("link del hr1")
            expected.append("reachable_via_ethernet(hr1)→reachable_via_ethernet(hr0)")
            #expect(try await changes.labels(count: 8) == expected)

            // The address goes: the kernel drops the route through it without a message.
            try await NetworkNamespace.ip("addr del 10.200.0.1/24 dev hr0")
            expected.append("reachable_via_ethernet(hr0)→not_reachable")
            #expect(try await changes.labels(count: 9) == expected)
            try await NetworkNamespace.ip("addr add 10.200.0.1/24 dev hr0", "route add default via 10.200.0.2 dev hr0")
            expected.append("not_reachable→reachable_via_ethernet(hr0)")
            #expect(try await changes.labels(count: 10) == expected)
            try await NetworkNamespace.ip("route del default")
            expected.append("reachable_via_ethernet(hr0)→not_reachable")
            #expect(try await changes.labels(count: 11) == expected)

            // A default route through loopback is no network.
            try await NetworkNamespace.ip("route add default dev lo")
            await changes.expectNoMore(than: 11, for: .milliseconds(500))
            #expect(reachability.status == .notReachable)
        }
    }

    @Test("an IPv6 default route alone makes the network reachable")
    func ipv6() async throws {
        try await restoringNetwork {
            let changes = Changes()
            let reachability = NetworkReachability(notificationCenter: changes.center, debounceInterval: 0.05)
            try reachability.startMonitoring()
            defer { reachability.stopMonitoring() }
            var expected = ["unknown→not_reachable"]
            #expect(try await changes.labels(count: 1) == expected)
            try await NetworkNamespace.ip(
                "link add hr0 type veth peer name hr0p", "link set hr0 up", "link set hr0p up",
                "addr add fd00:48::1/64 dev hr0 nodad", "route add default via fd00:48::2 dev hr0")
            expected.append("not_reachable→reachable_via_ethernet(hr0)")
            #expect(try await changes.labels(count: 2) == expected)
            try await NetworkNamespace.ip("route del default via fd00:48::2 dev hr0")
            expected.append("reachable_via_ethernet(hr0)→not_reachable")
            #expect(try await changes.labels(count: 3) == expected)
        }
    }

    @Test("a replaced default route and a second gateway on one link: the status follows the kernel's routes")
    func replacedAndSecondGateway() async throws {
        try await restoringNetwork {
            let changes = Changes()
            let reachability = NetworkReachability(notificationCenter: changes.center, debounceInterval: 0.05)
            try reachability.startMonitoring()
            defer { reachability.stopMonitoring() }
            var expected = ["unknown→not_reachable"]
            #expect(try await changes.labels(count: 1) == expected)
            try await NetworkNamespace.ip(
                contentsOf: vethPair("hr0", address: "10.200.0.1") + vethPair("hr1", address: "10.201.0.1")
                    + ["route add default via 10.200.0.2 dev hr0 metric 10"])
            expected.append("not_reachable→reachable_via_ethernet(hr0)")
            #expect(try await changes.labels(count: 2) == expected)
            // A replace announces the new route only; the one through hr0 is gone all the same.
            try await NetworkNamespace.ip("route replace default via 10.201.0.2 dev hr1 metric 10")
            expected.append("reachable_via_ethernet(hr0)→reachable_via_ethernet(hr1)")
            #expect(try await changes.labels(count: 3) == expected)
            // A second default route through hr1 by another gateway: deleting the first leaves it (nothing to
            // post), so a preferred route through hr0 comes and goes over it.
            try await NetworkNamespace.ip(
                "route append default via 10.201.0.3 dev hr1 metric 10",
                "route del default via 10.201.0.2 dev hr1 metric 10",
                "route add default via 10.200.0.2 dev hr0 metric 5")
            expected.append("reachable_via_ethernet(hr1)→reachable_via_ethernet(hr0)")
            #expect(try await changes.labels(count: 4) == expected)
            try await NetworkNamespace.ip("route del default via 10.200.0.2 dev hr0 metric 5")
            expected.append("reachable_via_ethernet(hr0)→reachable_via_ethernet(hr1)")
            #expect(try await changes.labels(count: 5) == expected)
        }
    }

    @Test("a link flapping within the debounce delay posts once; a flap that ends where it began posts nothing")
    func flap() async throws {
        try await restoringNetwork {
            let (changes, reachability) = try await monitorDefaultRoute(debounceInterval: 0.5)
            defer { reachability.stopMonitoring() }

            // Down, up, down in one batch: well within the half-second delay.
            try await NetworkNamespace.ip("link set hr0p down", "link set hr0p up", "link set hr0p down")
            #expect(
                try await changes.labels(count: 2) == [
                    "unknown→reachable_via_ethernet(hr0)", "reachable_via_ethernet(hr0)→not_reachable",
                ])
            await changes.expectNoMore(than: 2, for: .milliseconds(1500))

            // Up and down again: back where it began when the delay ends.
            try await NetworkNamespace.ip("link set hr0p up", "link set hr0p down")
            await changes.expectNoMore(than: 2, for: .milliseconds(1500))
            #expect(reachability.status == .notReachable)
        }
    }

    /// A veth pair with a default route through it, watched by a monitor with `debounceInterval`, once its
    /// first status (reachable through `hr0`) is posted. The caller stops the monitor.
    func monitorDefaultRoute(debounceInterval: TimeInterval) async throws -> (Changes, NetworkReachability) {
        let changes = Changes()
        let reachability = NetworkReachability(notificationCenter: changes.center, debounceInterval: debounceInterval)
        try await NetworkNamespace.ip(
            contentsOf: vethPair("hr0", address: "10.200.0.1") + ["route add default via 10.200.0.2 dev hr0"])
        try reachability.startMonitoring()
        #expect(try await changes.labels(count: 1) == ["unknown→reachable_via_ethernet(hr0)"])
        return (changes, reachability)
    }

    @Test("a status is announced only once it has held for the delay: a route toggling faster than it posts nothing")
    func holdNotWindow() async throws {
        try await restoringNetwork {
            let (changes, reachability) = try await monitorDefaultRoute(debounceInterval: 0.5)
            defer { reachability.stopMonitoring() }

            // Twenty toggles 70 ms apart, ending reachable: 1.4 s of changes, none holding for 0.5 s. A delay
            // counted from the first change would announce whatever the status was when it ran out. The pauses
            // pace the fault; they wait for nothing.
            for toggle in 0..<20 {
                try await NetworkNamespace.ip(
                    toggle.isMultiple(of: 2) ? "route del default" : "route add default via 10.200.0.2 dev hr0")
                try await Task.sleep(for: .milliseconds(70))
            }
            await changes.expectNoMore(than: 1, for: .milliseconds(1500))
            #expect(Changes.label(reachability.status) == "reachable_via_ethernet(hr0)")

            // Nineteen toggles ending unreachable: the change that holds is posted once, a whole delay after
            // the last toggle, not after the first.
            var lastToggle = Date()
            for toggle in 0..<19 {
                // Read before the toggle starts: the change can't come before it, however late this task runs
                // again after `ip` exits.
                lastToggle = Date()
                try await NetworkNamespace.ip(
                    toggle.isMultiple(of: 2) ? "route del default" : "route add default via 10.200.0.2 dev hr0")
                try await Task.sleep(for: .milliseconds(70))
            }
            #expect(
                try await changes.labels(count: 2).last == "reachable_via_ethernet(hr0)→not_reachable")
            let posted = try #require(changes.log.values.last?.date)
            // The loop's timer counts from its cached time of the iteration that read the change, after the clock
            // read here before the last toggle began: allow 50 ms for libuv's whole milliseconds and the dates'
            // clock, far less than the train.
            #expect(posted.timeIntervalSince(lastToggle) >= 0.45)
            await changes.expectNoMore(than: 2, for: .milliseconds(1000))
        }
    }

    @Test("a host's route is followed: the interface the kernel picks for its address, as routes change")
    func hostRoute() async throws {
        try await restoringNetwork {
            let changes = Changes()
            let host = NetworkReachability(
                host: "10.210.0.7", notificationCenter: changes.center, debounceInterval: 0.05)
            let general = NetworkReachability(notificationCenter: NotificationHub(), debounceInterval: 0.05)
            try host.startMonitoring()
            try general.startMonitoring()
            defer {
                host.stopMonitoring()
                general.stopMonitoring()
            }
            var expected = ["unknown→not_reachable"]
            #expect(try await changes.labels(count: 1) == expected)

            // A link on the host's subnet: the host is reachable, the network in general (no default route) not.
            try await NetworkNamespace.ip(contentsOf: vethPair("hr2", address: "10.210.0.1"))
            expected.append("not_reachable→reachable_via_ethernet(hr2)")
            #expect(try await changes.labels(count: 2) == expected)
            #expect(general.status == .notReachable)
            #expect(try await changes.log.wait(forCount: 2).last?.host == "10.210.0.7")

            // A more specific route through another link.
            try await NetworkNamespace.ip(
                contentsOf: vethPair("hr3", address: "10.211.0.1") + ["route add 10.210.0.7/32 dev hr3"])
            expected.append("reachable_via_ethernet(hr2)→reachable_via_ethernet(hr3)")
            #expect(try await changes.labels(count: 3) == expected)
            try await NetworkNamespace.ip("route del 10.210.0.7/32 dev hr3")
            expected.append("reachable_via_ethernet(hr3)→reachable_via_ethernet(hr2)")
            #expect(try await changes.labels(count: 4) == expected)
            try await NetworkNamespace.ip("link del hr2")
            expected.append("reachable_via_ethernet(hr2)→not_reachable")
            #expect(try await changes.labels(count: 5) == expected)
        }
    }

    @Test("a policy rule alone, which announces no route, changes a host's status")
    func hostRule() async throws {
        try await restoringNetwork {
            let changes = Changes()
            // No IPv6 address on the links: its duplicate-address detection would announce an address a second
            // later, and a monitor deaf to rules would re-read the route then, passing without hearing the rule.
            try await NetworkNamespace.ip(contentsOf: [
                "link add hr2 type veth peer name hr2p", "link set hr2 addrgenmode none",
                "link set hr2p addrgenmode none", "link set hr2 up", "link set hr2p up",
                "addr add 10.212.0.1/24 dev hr2",
            ])
            let host = NetworkReachability(
                host: "10.212.0.7", notificationCenter: changes.center, debounceInterval: 0.05)
            try host.startMonitoring()
            defer { host.stopMonitoring() }
            var expected = ["unknown→reachable_via_ethernet(hr2)"]
            #expect(try await changes.labels(count: 1) == expected)
            // Before, the monitor heard no rule change: the host stayed reachable until some route or link moved.
            try await NetworkNamespace.ip("rule add prohibit to 10.212.0.7")
            expected.append("reachable_via_ethernet(hr2)→not_reachable")
            #expect(try await changes.labels(count: 2) == expected)
            try await NetworkNamespace.ip("rule del prohibit to 10.212.0.7")
            expected.append("not_reachable→reachable_via_ethernet(hr2)")
            #expect(try await changes.labels(count: 3) == expected)
        }
    }

    @Test("127.0.0.1 is reachable through loopback while lo is up")
    func loopbackHost() async throws {
        try await restoringNetwork {
            let changes = Changes()
            let host = NetworkReachability(
                host: "127.0.0.1", notificationCenter: changes.center, debounceInterval: 0.05)
            try host.startMonitoring()
            defer { host.stopMonitoring() }
            var expected = ["unknown→reachable_via_loopback(lo)"]
            #expect(try await changes.labels(count: 1) == expected)
            try await NetworkNamespace.ip("link set lo down")
            expected.append("reachable_via_loopback(lo)→not_reachable")
            #expect(try await changes.labels(count: 2) == expected)
            try await NetworkNamespace.ip("link set lo up")
            expected.append("not_reachable→reachable_via_loopback(lo)")
            #expect(try await changes.labels(count: 3) == expected)
        }
    }

    // MARK: - waitsForConnectivity

    /// Removes the kernel's local routes for 127.0.0.0/8: 127.0.0.1 then has no route, so connecting to the
    /// server (bound before) fails at once with "network unreachable", and nothing is sent anywhere. (Setting
    /// loopback down would not do: the local routes stay, and a connection attempt waits for a SYN that is
    /// dropped.)
    static let loopbackRoutesRemoved = [
        "route del local 127.0.0.0/8 dev lo table local", "route del local 127.0.0.1 dev lo table local",
    ]
    /// Adds them back as the kernel makes them.
    static let loopbackRoutesAdded = [
        "route add local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1",
        "route add local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1",
    ]

    @Test("without waitsForConnectivity a task started with no route fails at once with cannotConnect")
    func withoutWaiting() async throws {
        let fixture = try await SessionFixture.make()
        try await restoringNetwork {
            try await NetworkNamespace.ip(contentsOf: Self.loopbackRoutesRemoved)
            let task = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
            task.resume()
            // At once: well before any connect or resource timeout could end it.
            let events = try await fixture.recorder.waitForCompletions(1, timeout: .seconds(5))
            #expect(events.map(\.description) == ["resume#\(task.taskIdentifier)", "complete#\(task.taskIdentifier)"])
            #expect(task.error?.code == .cannotConnect)
        }
        try await fixture.tearDown()
    }

    @Test("with waitsForConnectivity a task started with no route waits, then completes once the route is back")
    func waitsForTheRoute() async throws {
        try await withTaskWithoutRoute { fixture, task in
            let id = task.taskIdentifier
            let waiting = try await fixture.recorder.waitUntil { $0.contains { $0.kind == .waiting } }
            #expect(waiting.map(\.description) == ["resume#\(id)", "waiting#\(id)"])
            #expect(waiting.last?.connectivityWait?.error.code == .cannotConnect)
            #expect(task.state == .running)
            try await NetworkNamespace.ip(contentsOf: Self.loopbackRoutesAdded)
            let events = try await fixture.recorder.waitForCompletions(1)
            // The wait's end is announced before the task transfers again.
            #expect(
                events.map(\.description) == ["resume#\(id)", "waiting#\(id)", "waitEnded#\(id)", "complete#\(id)"])
            #expect(task.error == nil)
            #expect(task.response?.statusCode == 200)
        }
    }

    @Test("a task waiting for connectivity fails with timedOut when the resource timeout ends first")
    func waitTimesOut() async throws {
        try await withTaskWithoutRoute(resourceTimeout: 1) { fixture, task in
            let id = task.taskIdentifier
            let events = try await fixture.recorder.waitForCompletions(1)
            #expect(events.map(\.description) == ["resume#\(id)", "waiting#\(id)", "complete#\(id)"])
            #expect(task.error?.code == .timedOut)
            #expect((task.error?.underlying as? HeraldError)?.code == .cannotConnect)
        }
    }

    @Test("cancelling a task that waits for connectivity completes it at once as cancelled")
    func cancelWhileWaiting() async throws {
        try await withTaskWithoutRoute { fixture, task in
            let id = task.taskIdentifier
            try await fixture.recorder.waitUntil { $0.contains { $0.kind == .waiting } }
            task.cancel()
            let events = try await fixture.recorder.waitForCompletions(1, timeout: .seconds(5))
            #expect(events.map(\.description) == ["resume#\(id)", "waiting#\(id)", "complete#\(id)"])
            #expect(task.error?.code == .cancelled)
            // The route coming back starts nothing of the cancelled task: a task started after it is the
            // server's only request.
            try await NetworkNamespace.ip(contentsOf: Self.loopbackRoutesAdded)
            let next = try fixture.session.dataTask(with: Request(url: fixture.server.url("/json")))
            next.resume()
            try await fixture.recorder.waitForCompletions(2)
            #expect(next.error == nil)
            #expect(fixture.server.requestCount == 1)
            #expect(fixture.recorder.timeline(ofTask: id) == [.resume, .waiting, .complete])
        }
    }

    @Test("a POST answered with a 303 whose GET finds no route fails at once instead of waiting to post again")
    func postNotMadeAgainAfterRedirect() async throws {
        var configuration = SessionConfiguration()
        configuration.waitsForConnectivity = true
        let fixture = try await SessionFixture.make(configuration: configuration)
        try await restoringNetwork {
            // 127.0.0.1 keeps its route, the server's; the rest of 127.0.0.0/8 loses it.
            try await NetworkNamespace.ip(contentsOf: ["route del local 127.0.0.0/8 dev lo table local"])
            let target = "http://127.0.0.2:\(fixture.server.port)/json"
            let location = try #require(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            let task = try fixture.session.dataTask(
                with: Request(
                    url: fixture.server.url("/status/303?location=\(location)"), method: "POST",
                    body: Data("order".utf8)))
            task.resume()
            let id = task.taskIdentifier
            let events = try await fixture.recorder.waitForCompletions(1, timeout: .seconds(5))
            #expect(events.map(\.description) == ["resume#\(id)", "complete#\(id)"])
            #expect(task.error?.code == .cannotConnect)
            #expect(fixture.server.requests(forPath: "/status/303").map(\.method) == ["POST"])
        }
        try await fixture.tearDown()
    }
}

extension ReachabilityNamespaceTests {
    @Test("announcements that overflow the monitor's socket while its loop is busy: it re-reads, and goes on hearing")
    func overflowedAnnouncements() async throws {
        try await restoringNetwork {
            let engine = Engine(name: "herald.engine.reachability-overflow")
            let changes = Changes()
            let reachability = NetworkReachability(
                host: nil, target: .anyNetwork, notificationCenter: changes.center, debounceInterval: 0.05,
                engine: engine)
            try reachability.startMonitoring()
            defer { reachability.stopMonitoring() }
            #expect(try await changes.labels(count: 1) == ["unknown→not_reachable"])
            // The loop held while 3,000 routes are added: their announcements overflow the socket's buffer, and
            // the kernel reports ENOBUFS on it, which libuv sees as an error on the descriptor.
            let loopHeld = DispatchSemaphore(value: 0)
            await withCheckedContinuation { continuation in
                engine.execute {
                    continuation.resume()
                    loopHeld.wait()
                }
            }
            let routes = (0..<3_000).map { "route add 10.\(100 + $0 / 250).\($0 % 250).0/24 dev lo" }
            do {
                try await NetworkNamespace.ip(contentsOf: routes)
            } catch {
                loopHeld.signal()
                throw error
            }
            loopHeld.signal()
            // Heard after the overflow: before, libuv had stopped watching the socket, and nothing was heard again.
            try await NetworkNamespace.ip(
                contentsOf: vethPair("hr0", address: "10.200.0.1") + ["route add default via 10.200.0.2 dev hr0"])
            #expect(
                try await changes.labels(count: 2) == [
                    "unknown→not_reachable", "not_reachable→reachable_via_ethernet(hr0)",
                ])
        }
    }
}

extension ReachabilityNamespaceTests {
    @Test("with an interceptor, a streamed upload waiting for connectivity sends a fresh stream whole once back")
    func streamedUploadAfterWaitWithInterceptor() async throws {
        var configuration = SessionConfiguration()
        configuration.waitsForConnectivity = true
        let fixture = try await SessionFixture.make(configuration: configuration)
        let body = Data(TestServer.expectedBytes(in: 0..<300_000))
        let renewed = Locked(0)
        fixture.session.taskNeedNewBodyStream = { _ in
            renewed.withLock { $0 += 1 }
            return BodyStream(data: body)
        }
        // An adapter that changes nothing: the attempt after the wait goes through it.
        fixture.session.interceptor = Interceptor(adapt: { request, _ in request })
        try await restoringNetwork {
            try await NetworkNamespace.ip(contentsOf: Self.loopbackRoutesRemoved)
            var request = Request(url: fixture.server.url("/echo"))
            request.method = "PUT"
            let task = try fixture.session.uploadTask(
                withStreamedRequest: request, bodyProvider: BodyStream(data: body))
            task.resume()
            _ = try await fixture.recorder.waitUntil { $0.contains { $0.kind == .waiting } }
            try await NetworkNamespace.ip(contentsOf: Self.loopbackRoutesAdded)
            try await fixture.recorder.waitForCompletions(1)
            #expect(task.error == nil, "\(String(describing: task.error))")
            // The failed attempt may have read some of the stream: the attempt after the wait asks for a new one,
            // as it does without an interceptor.
            #expect(renewed.withLock { $0 } == 1)
            #expect(fixture.server.requests(forPath: "/echo").last?.bodyByteCount == body.count)
        }
        try await fixture.tearDown()
    }
}
