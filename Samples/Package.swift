// swift-tools-version: 6.1
// The samples live in a package of their own, depending on Herald by path, so that users of Herald never
// inherit what only the samples need (swift-argument-parser).
import PackageDescription

let package = Package(
    name: "HeraldSamples",
    products: [
        .executable(name: "activity-counter", targets: ["ActivityCounter"]),
        .executable(name: "notification-basics", targets: ["NotificationBasics"]),
        .executable(name: "custom-observer", targets: ["CustomObserver"]),
    ],
    dependencies: [
        .package(name: "Herald", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "ActivityCounter",
            dependencies: [
                .product(name: "HeraldObservers", package: "Herald"),
                .product(name: "HeraldTesting", package: "Herald"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                "SignalStop",
            ],
            path: "ActivityCounter"
        ),
        .executableTarget(
            name: "CustomObserver",
            dependencies: [
                .product(name: "Herald", package: "Herald"),
                .product(name: "HeraldObservers", package: "Herald"),
                .product(name: "HeraldTesting", package: "Herald"),
                "SignalStop",
            ],
            path: "CustomObserver"
        ),
        // SIGHUP, SIGINT and SIGTERM as a cancellation both command-line samples clean up after.
        .target(name: "SignalStop", path: "SignalStop"),
        .executableTarget(
            name: "NotificationBasics",
            dependencies: [.product(name: "HeraldNotifications", package: "Herald")],
            path: "NotificationBasics"
        ),
        .testTarget(
            name: "ActivityCounterTests",
            dependencies: [
                "ActivityCounter",
                .product(name: "Herald", package: "Herald"),
                .product(name: "HeraldObservers", package: "Herald"),
                .product(name: "HeraldTesting", package: "Herald"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/ActivityCounterTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
