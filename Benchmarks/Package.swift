// swift-tools-version: 6.1
// Benchmarks live in their own package so users of Herald never inherit their dependencies.
import PackageDescription

let package = Package(
    name: "HeraldBenchmarks",
    dependencies: [
        .package(name: "Herald", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        .executableTarget(
            name: "NotificationBench",
            dependencies: [.product(name: "HeraldNotifications", package: "Herald")]
        ),
        .executableTarget(
            name: "JSONBench",
            dependencies: [.product(name: "Herald", package: "Herald")]
        ),
        .executableTarget(
            name: "Soak",
            dependencies: [
                .product(name: "Herald", package: "Herald"),
                .product(name: "HeraldTesting", package: "Herald"),
            ]
        ),
        // TransferBench's command line, load generator and output, shared by its two binaries.
        .target(name: "TransferBenchKit"),
        // Herald's clients only: a process that measures Herald loads no other HTTP client.
        .executableTarget(
            name: "TransferBench",
            dependencies: [
                "TransferBenchKit",
                .product(name: "Herald", package: "Herald"),
                .product(name: "HeraldNotifications", package: "Herald"),
                .product(name: "HeraldObservers", package: "Herald"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // URLSession and AsyncHTTPClient, which `TransferBench --client urlsession|ahc` runs.
        .executableTarget(
            name: "TransferBenchPeers",
            dependencies: [
                "TransferBenchKit",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // StreamBench's command line, event stream and output, shared by its two binaries.
        .target(name: "StreamBenchKit"),
        // Streamed bodies and server-sent events through Herald, against HeraldTesting's loopback server.
        .executableTarget(
            name: "StreamBench",
            dependencies: [
                "StreamBenchKit",
                .product(name: "Herald", package: "Herald"),
                .product(name: "HeraldTesting", package: "Herald"),
            ]
        ),
        // AsyncHTTPClient's streamed body and mattt/EventSource's parser, which StreamBench runs.
        .executableTarget(
            name: "StreamBenchPeers",
            dependencies: [
                "StreamBenchKit",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
