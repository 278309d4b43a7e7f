// swift-tools-version: 6.2
// The fleet sample lives in a package of its own, depending on Herald by path, so that neither Herald's
// users nor the other samples resolve Hummingbird, swift-otel or swift-prometheus.
import PackageDescription

let package = Package(
    name: "HeraldFleet",
    products: [
        .executable(name: "fleet-service", targets: ["FleetService"]),
        .executable(name: "fleet-demo", targets: ["FleetDemo"]),
        .library(name: "HeraldPrometheus", targets: ["HeraldPrometheus"]),
    ],
    dependencies: [
        .package(name: "Herald", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        // OTLP/HTTP only: the default traits add the OTLP/gRPC exporter and with it three grpc-swift
        // packages, which this sample never uses (measured here: about a quarter more build CPU time).
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        // swift-prometheus's factory with Herald's metrics under Prometheus's names, with HELP text and the
        // advised buckets: a file of its own, for applications to copy.
        .target(
            name: "HeraldPrometheus",
            dependencies: [
                .product(name: "HeraldObservers", package: "Herald"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .executableTarget(
            name: "FleetService",
            dependencies: [
                "HeraldPrometheus",
                .product(name: "Herald", package: "Herald"),
                .product(name: "HeraldNotifications", package: "Herald"),
                .product(name: "HeraldObservers", package: "Herald"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "FleetHarness",
            dependencies: [
                .product(name: "Herald", package: "Herald")
            ]
        ),
        .executableTarget(name: "FleetDemo", dependencies: ["FleetHarness"]),
        .testTarget(
            name: "FleetTests",
            dependencies: [
                "FleetHarness",
                "HeraldPrometheus",
                .product(name: "Herald", package: "Herald"),
                .product(name: "HeraldObservers", package: "Herald"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
