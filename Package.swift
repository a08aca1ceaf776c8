// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "guestmode",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "guestmode", targets: ["guestmode"]),
        .library(name: "GuestModeKit", targets: ["GuestModeKit"]),
        .library(name: "GuestModeSQLite", targets: ["GuestModeSQLite"]),
        .library(name: "GuestModePostgres", targets: ["GuestModePostgres"]),
        .library(name: "GuestModeArchive", targets: ["GuestModeArchive"]),
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
            providers: [.apt(["libarchive-dev", "zlib1g-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The engine: domain, pure policies, store protocols, use cases. No database, no C library.
        .target(
            name: "GuestModeKit",
            dependencies: [
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // The embedded backend: the only place SQLite SQL lives.
        .target(
            name: "GuestModeSQLite",
            dependencies: [
                "GuestModeKit",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The shared backend: PostgreSQL through libpq, the only place its SQL lives.
        .target(
            name: "GuestModePostgres",
            dependencies: ["GuestModeKit", "CLibPQ"]
        ),
        // Backup archives: libarchive, hashing and signing, atomic files.
        .target(
            name: "GuestModeArchive",
            dependencies: [
                "GuestModeKit",
                "CArchive",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "guestmode",
            dependencies: [
                "GuestModeKit",
                "GuestModeSQLite",
                "GuestModePostgres",
                "GuestModeArchive",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // libFuzzer target (`make fuzz`): built only with -sanitize=fuzzer, which supplies its main.
        .executableTarget(
            name: "ArchiveFuzzer",
            dependencies: ["GuestModeKit", "GuestModeSQLite", "GuestModeArchive"],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .testTarget(
            name: "GuestModeKitTests",
            dependencies: [
                "GuestModeKit",
                "GuestModeSQLite",
                "GuestModePostgres",
                "GuestModeArchive",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
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
            dependencies: ["guestmode", "GuestModeKit"]
        ),
    ]
)
