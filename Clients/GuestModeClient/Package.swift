// swift-tools-version:6.2
// GuestModeClient: the Swift package an app embeds to reach `guestmode serve`. A package of its own,
// so that the server's build (and `swift build` at the repository's root) never compiles the OpenAPI
// generator, OpenAPIKit and Yams that this one's build plugin needs.
import PackageDescription

// As in the repository's root package: a warning is an error in debug builds.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error, .when(configuration: .debug))]

let package = Package(
    name: "GuestModeClient",
    platforms: [.iOS(.v16), .macOS(.v13)],
    products: [.library(name: "GuestModeClient", targets: ["GuestModeClient"])],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", exact: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", exact: "1.4.0"),
    ],
    targets: [
        .target(
            name: "GuestModeClient",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
            ],
            swiftSettings: strict,
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        // Examples/AppJourney: the four apps' first minutes through the client (`make client-test` runs it).
        .executableTarget(
            name: "AppJourney", dependencies: ["GuestModeClient"], path: "Examples/AppJourney", swiftSettings: strict),
        .testTarget(name: "GuestModeClientTests", dependencies: ["GuestModeClient"], swiftSettings: strict),
    ]
)
