// swift-tools-version:6.2
import PackageDescription

/// Settings for every target of this package. The debug configuration (what
/// `make test` builds) refuses a compiler warning in these sources; a release
/// build from a newer toolchain that warns about something new still installs.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error, .when(configuration: .debug))]

let package = Package(
    name: "guestmode",
    // The library products are what an app embeds: every Apple platform with Synchronization.Mutex (the
    // PostgreSQL connection pool, the server's limits) and Swift 6's concurrency. scripts/check-layout.sh
    // keeps GuestModeKit to what all of them and Linux have.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "guestmode", targets: ["guestmode"]),
        .executable(name: "guestmode-serve", targets: ["guestmode-serve"]),
        .library(name: "GuestModeKit", targets: ["GuestModeKit"]),
        .library(name: "GuestModeSQLite", targets: ["GuestModeSQLite"]),
        .library(name: "GuestModePostgres", targets: ["GuestModePostgres"]),
        .library(name: "GuestModeArchive", targets: ["GuestModeArchive"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // Minor versions only: the archive target and secret hashing use _CryptoExtras, which
        // swift-crypto's README leaves outside semantic versioning (an underscored product).
        .package(url: "https://github.com/apple/swift-crypto", .upToNextMinor(from: "4.5.2")),
        // The HTTP server: without Hummingbird's swift-configuration support, which guestmode does not use.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        // App Store JWS chains (GuestModePurchases); already resolved through jwt-kit.
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The HTTP/1 pipeline `guestmode serve` builds itself (its ConnectionGuard sits below Hummingbird's).
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // `guestmode serve`'s /metrics: the server records through swift-metrics, guestmode-serve exposes
        // them in Prometheus's text format.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // libarchive, libpq and libcurl are headers only at build time: each is opened on its first use (dlopen,
        // in its shim.h) and never linked, so no pkg-config, whose flags would link it (bench/results.md,
        // "Start-up"). CArchive still links zlib and zstd (its module map), which guestmode calls directly.
        .systemLibrary(
            name: "CArchive",
            providers: [.apt(["libarchive-dev", "zlib1g-dev", "libzstd-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The engine: domain, pure policies, store protocols, use cases. No database, no C library.
        .target(
            name: "GuestModeKit",
            dependencies: [
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // The embedded backend: the only place SQLite SQL lives.
        .target(
            name: "GuestModeSQLite",
            dependencies: [
                "GuestModeKit",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        // The shared backend: PostgreSQL through libpq, the only place its SQL lives.
        .target(
            name: "GuestModePostgres",
            dependencies: ["GuestModeKit", "CLibPQ"],
            swiftSettings: strict
        ),
        // Backup archives: libarchive, hashing and signing, atomic files.
        .target(
            name: "GuestModeArchive",
            dependencies: [
                "GuestModeKit",
                "CArchive",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // Outgoing HTTP: webhook deliveries and backups pushed to or pulled from a server, through libcurl
        // (TLS from the system's OpenSSL and its certificate store; no TLS stack to compile).
        .target(
            name: "GuestModeRemote",
            dependencies: ["GuestModeKit", "GuestModeArchive", "CCurl"],
            swiftSettings: strict
        ),
        // What the App Store signs, verified as Apple specifies (x5c to a configured root, ES256,
        // bundle id, environment) and read as plan changes: the server's routes and `plan import` use it.
        .target(
            name: "GuestModePurchases",
            dependencies: [
                "GuestModeKit",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        // `guestmode serve`: the engine over HTTP, calling it only through the `GuestMode` façade.
        .target(
            name: "GuestModeServer",
            dependencies: [
                "GuestModeKit",
                "GuestModeArchive",
                "GuestModeRemote",
                "GuestModePurchases",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // What both executables share: the global options, output, error reports and the run of a
        // command line. Fault hooks (Sources/GuestModeCommandLine/FaultHooks.swift) exist only in debug
        // builds, the ones `make test`, `make crash` and `make fuzz` run; `make install` builds release.
        .target(
            name: "GuestModeCommandLine",
            dependencies: [
                "GuestModeKit",
                "GuestModeSQLite",
                "GuestModePostgres",
                "GuestModeArchive",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict + [.define("GUESTMODE_FAULT_HOOKS", .when(configuration: .debug))]
        ),
        // The command line. Without the server (NIO, Hummingbird): `guestmode serve` runs guestmode-serve.
        .executableTarget(
            name: "guestmode",
            dependencies: [
                "GuestModeKit",
                "GuestModeSQLite",
                "GuestModePostgres",
                "GuestModeArchive",
                "GuestModeRemote",
                "GuestModeCommandLine",
                // Not GuestModePurchases: `plan import` runs in guestmode-serve, so guestmode links neither
                // jwt-kit nor swift-certificates (bench/results.md, "Start-up").
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // `guestmode serve` and its key, session and signing-key commands, installed beside guestmode.
        .executableTarget(
            name: "guestmode-serve",
            dependencies: [
                "GuestModeKit",
                "GuestModeSQLite",
                "GuestModePostgres",
                "GuestModeArchive",
                "GuestModeServer",
                "GuestModeCommandLine",
                "GuestModePurchases",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict
        ),
        // Hummingbird's minimal route, the floor `make bench` measures `guestmode serve` against.
        .executableTarget(
            name: "ServeFloor",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird")],
            path: "Sources/ServeFloor",
            swiftSettings: strict
        ),
        // libFuzzer target (`make fuzz`): built only with -sanitize=fuzzer, which supplies its main.
        .executableTarget(
            name: "ArchiveFuzzer",
            dependencies: ["GuestModeKit", "GuestModeSQLite", "GuestModeArchive"],
            swiftSettings: strict + [.unsafeFlags(["-parse-as-library"])]
        ),
        .testTarget(
            name: "GuestModeKitTests",
            dependencies: [
                "GuestModeKit",
                "GuestModeSQLite",
                "GuestModePostgres",
                "GuestModeArchive",
                "GuestModeRemote",
                "GuestModeCommandLine",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
        // The server's routes answered in process (RouteTester): route logic in milliseconds.
        .testTarget(
            name: "GuestModeServerTests",
            dependencies: [
                "GuestModeServer",
                "GuestModeKit",
                "GuestModePurchases",
                "GuestModeSQLite",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CommandLineTests",
            dependencies: [
                "guestmode",
                "GuestModeCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "guestmode", "guestmode-serve", "GuestModeKit", "GuestModeCommandLine",
                // The tests' own App Store chain: a root, an intermediate and a leaf made at test time.
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
    ]
)
