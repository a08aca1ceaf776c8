// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "guestmode",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "guestmode", targets: ["guestmode"]),
        .library(name: "GuestModeKit", targets: ["GuestModeKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "3.12.3"),
    ],
    targets: [
        .systemLibrary(
            name: "CArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"])]
        ),
        .target(
            name: "GuestModeKit",
            dependencies: [
                "CArchive",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "guestmode",
            dependencies: [
                "GuestModeKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "GuestModeKitTests",
            dependencies: ["GuestModeKit"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "CommandLineTests",
            dependencies: [
                "guestmode",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["guestmode"]
        ),
    ]
)
