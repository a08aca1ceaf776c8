// swift-tools-version:6.0
import PackageDescription

// An app that embeds guestmode's engine, depending on this repository by path
// the way an app would depend on a release by URL. `make test` builds and runs it.
let package = Package(
    name: "EmbeddingApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named, so the products below resolve whatever the clone's folder is called.
        .package(name: "guestmode", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "EmbeddingApp",
            dependencies: [
                .product(name: "GuestModeKit", package: "guestmode"),
                .product(name: "GuestModeSQLite", package: "guestmode"),
            ]
        )
    ]
)
