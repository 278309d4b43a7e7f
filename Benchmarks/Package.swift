// swift-tools-version: 6.1
// Benchmarks live in their own package so users of Herald never inherit their dependencies.
import PackageDescription

let package = Package(
    name: "HeraldBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Herald", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "NotificationBench",
            dependencies: [.product(name: "HeraldNotifications", package: "Herald")]
        ),
        .executableTarget(
            name: "Soak",
            dependencies: [
                .product(name: "Herald", package: "Herald"),
                .product(name: "HeraldTesting", package: "Herald"),
            ]
        ),
        .executableTarget(
            name: "TransferBench",
            dependencies: [.product(name: "Herald", package: "Herald")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
