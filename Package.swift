// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    // Linux only (README.md, "Supported platforms"): no Apple platform is declared because none is built
    // or tested; the system libraries below name the Debian/Ubuntu and RHEL/Fedora packages.
    name: "Herald",
    products: [
        .library(name: "HeraldNotifications", targets: ["HeraldNotifications"]),
        .library(name: "Herald", targets: ["Herald"]),
        .library(name: "HeraldTesting", targets: ["HeraldTesting"]),
        .library(name: "HeraldObservers", targets: ["HeraldObservers"]),
        .executable(name: "herald-test-server", targets: ["HeraldTestServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-w3c-trace-context", from: "1.0.0"),
        .package(url: "https://github.com/vapor/multipart-kit", from: "4.7.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .yum(["libcurl-devel"])]
        ),
        .systemLibrary(
            name: "CUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"]), .yum(["libuv-devel"])]
        ),
        // Internationalized domain names to ASCII: the public suffix list's Unicode rules against punycode hosts.
        .systemLibrary(
            name: "CIDN2",
            pkgConfig: "libidn2",
            providers: [.apt(["libidn2-dev"]), .yum(["libidn2-devel"])]
        ),
        // Debian's SQLite: the index of the on-disk response cache (DiskResponseCache).
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .yum(["sqlite-devel"])]
        ),
        // The notification center's per-thread state as a C thread-local (Swift has no thread-local storage).
        .target(name: "CHeraldThread"),
        // The kernel's routing netlink headers, and the socket calls Swift can't spell, for reachability.
        .target(name: "CNetlink"),
        // RFC 6265's parsing and matching rules, the public suffix algorithm and internationalized names (the one
        // user of libidn2): the rules the public cookie store and public suffix list apply.
        .target(name: "HeraldCookies", dependencies: ["CIDN2"]),
        // The routing-netlink decoder: datagrams to link, address and route events. No socket, no state.
        .target(name: "HeraldNetlink", dependencies: ["CNetlink"]),
        .target(name: "HeraldNotifications", dependencies: ["CHeraldThread"]),
        // libcurl's multi interface on a libuv loop: transfers, their bodies and their outcomes. It names no
        // session, task or notification of Herald's: the public types it needs have package-level mirrors here.
        .target(name: "HeraldEngine", dependencies: ["HeraldNotifications", "CCurl", "CUV"]),
        .target(
            name: "Herald",
            dependencies: [
                "HeraldNotifications", "HeraldEngine", "HeraldCookies", "HeraldNetlink", "CNetlink", "CSQLite",
                // ServiceContext and the bootstrapped instrument only: never a tracing backend.
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "HeraldTesting",
            dependencies: [
                "Herald",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "HeraldObservers",
            dependencies: [
                "Herald",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .executableTarget(name: "HeraldTestServer", dependencies: ["HeraldTesting"]),
        // A loopback forwarding proxy through one cached Herald session, for the public cache-tests suite
        // (`make cache-tests`). One small file, so it costs the main build a compile and a link, no more.
        .executableTarget(
            name: "HeraldCacheProxy",
            dependencies: [
                "Herald",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "HeraldNotificationsTests", dependencies: ["HeraldNotifications", "HeraldTesting"]),
        .testTarget(
            name: "HeraldTests",
            dependencies: [
                "Herald", "HeraldEngine", "HeraldCookies", "HeraldNetlink", "HeraldTesting", "CNetlink",
                // The observers end to end over HTTP/2, against the nginx these tests start.
                "HeraldObservers",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "HeraldTestingTests",
            dependencies: ["HeraldTesting", .product(name: "MultipartKit", package: "multipart-kit")]
        ),
        .testTarget(
            name: "HeraldObserversTests",
            dependencies: [
                "HeraldObservers",
                "HeraldTesting",
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "W3CTraceContext", package: "swift-w3c-trace-context"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
