import ArgumentParser
import Dispatch
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit
import GuestModePostgres
import GuestModePurchases
import GuestModeSQLite
import GuestModeServer
import Metrics
import Prometheus

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        // The root of guestmode-serve, named as people run it (guestmode's ServeLauncher execs it).
        commandName: "guestmode serve",
        abstract: "Serve the engine over HTTP to apps and their backends.",
        discussion: """
            The routes under /v1 answer the documents the commands print with --json; errors are \
            {"error":{"code","message"}} with one HTTP status per code. POST /v1/guests signs a guest in and \
            returns an access token (a JWT signed ES256 with the store's current signing key, which anyone \
            can verify with GET /.well-known/jwks.json; see 'guestmode serve signing-key') and a refresh \
            token; app backends use server keys ('guestmode serve key create'). The line on standard \
            output says where the server listens. SIGTERM or SIGINT stops accepting connections, lets requests \
            in flight finish and closes the store. See guestmode-serve(1).
            """,
        version: GuestModeVersion.current,
        subcommands: [Key.self, Session.self, SigningKeys.self]
    )

    @OptionGroup var global: GlobalOptions

    @Option(
        help: ArgumentHelp(
            "Where to listen, HOST:PORT; port 0 picks a free port (default: 127.0.0.1:8080).", valueName: "host:port"))
    var listen = "127.0.0.1:8080"

    @Option(
        help: ArgumentHelp(
            "How many engine calls may run at once, each on a store connection of its own; the others wait (default: the processor cores, at least 2, for a SQLite store; 4 for PostgreSQL).",
            valueName: "n"))
    var threads: Int?

    @Option(
        help: ArgumentHelp(
            "Seconds a request may wait on the store (a free connection, a lock, an answer) before it is 503, decimals allowed (default: 10).",
            valueName: "seconds"))
    var storeWait: Double = 10

    @Option(
        help: ArgumentHelp(
            "Requests answered at once; one more is 503 server_busy at once, before it waits for anything (default: 512).",
            valueName: "n"))
    var maxRequests = 512

    @Option(
        help: ArgumentHelp(
            "Bytes of request bodies held at once, every request's together, from 1048576 (one largest body) up; a request whose body would pass it is 503 server_busy before its body is read (default: 33554432, 32 MiB).",
            valueName: "bytes"))
    var bodyMemory = 32 << 20

    @Option(
        help: ArgumentHelp(
            "Seconds a connection may stay silent, or leave an archive sent to it untaken, before the server closes it (default: 30).",
            valueName: "seconds"))
    var idleTimeout = 30

    @Option(
        help: ArgumentHelp(
            "Seconds a request's head may take in all, from the connection's opening or the previous answer; past it the connection is closed, a head half sent answered 408 (default: 10).",
            valueName: "seconds"))
    var headTimeout = 10

    @Option(
        help: ArgumentHelp(
            "Seconds a request's body may take in all, from its head; past it the request is 408 and the connection closed (default: 60).",
            valueName: "seconds"))
    var bodyTimeout = 60

    @Option(
        help: ArgumentHelp(
            "Bytes a second a request body must average once it has had 5 seconds; a slower one is 408 and its connection closed, 0 for no minimum (default: 1024).",
            valueName: "bytes"))
    var minBodyRate = 1024

    @Option(
        help: ArgumentHelp(
            "Connections one client address may hold open at once; one more is closed at once, 0 for no limit. A --trusted-proxy's are not capped (default: 128).",
            valueName: "n"))
    var connectionsPerAddress = 128

    @Option(
        help: ArgumentHelp(
            "Requests of one client address answered at once; one more is 429 rate_limited, 0 for no limit (default: 64).",
            valueName: "n"))
    var requestsPerAddress = 64

    @Option(
        help: ArgumentHelp(
            "Guests one client address may create an hour, 0 for no limit (default: 30).", valueName: "n"))
    var guestsPerHour = 30

    @Option(
        help: ArgumentHelp(
            "A proxy whose X-Forwarded-For names the client; repeat for several.", valueName: "address"))
    var trustedProxy: [String] = []

    @Option(
        help: ArgumentHelp(
            "Take pushed backups (backup push --to) into this folder and serve them back; without it the backup push routes are not served.",
            valueName: "dir"))
    var backupsDir: String?

    @Option(
        help: ArgumentHelp(
            "Pushed archives kept per user, the oldest removed first, and uploads waiting for their MOVE (default: 5).",
            valueName: "n"))
    var keepBackups = 5

    @Option(
        help: ArgumentHelp(
            "Bytes of pushed archives being received at once, every upload's together, on disk until each is checked, from 268435456 (one largest archive) up; an upload that would pass it is 503 server_busy (default: 1073741824, 1 GiB).",
            valueName: "bytes"))
    var uploadSpace = 1 << 30

    @Option(
        help: ArgumentHelp(
            "Let a guest's session link an identity with PROVIDER's OpenID Connect ID token, checked against ISSUER, AUDIENCE (the app's client id) and the key set JWKS (a file, or an https URL); repeat for several providers.",
            valueName: "provider=issuer,audience,jwks"))
    var oidc: [String] = []

    @Option(
        help: ArgumentHelp(
            "The access tokens' iss claim, checked on every token: the URL apps and verifiers know this server by, e.g. https://api.example.com (default: guestmode).",
            valueName: "url"))
    var issuer = "guestmode"

    @Option(
        help: ArgumentHelp(
            "The access tokens' aud claim, checked on every token: whom the tokens are for (default: authenticated).",
            valueName: "name"))
    var audience = "authenticated"

    @OptionGroup(title: "RevenueCat") var revenueCat: ServeRevenueCatOptions
    @Option(
        name: .customLong("app-store-root-ca"),
        help: ArgumentHelp(
            "Take App Store purchases (POST /v1/users/{user}/purchases) and App Store Server Notifications V2 (POST /v1/integrations/app-store) signed by a chain leading to this root certificate, PEM or DER: Apple Root CA - G3 (AppleRootCA-G3.cer) for the App Store; needs --app-store-bundle-id.",
            valueName: "file"))
    var appStoreRootCA: String?

    @Option(
        name: .customLong("app-store-bundle-id"),
        help: ArgumentHelp(
            "The app's bundle id: a purchase or notification of another app is refused (needs --app-store-root-ca).",
            valueName: "id"))
    var appStoreBundleID: String?

    @Flag(
        name: .customLong("app-store-sandbox"),
        help:
            "Take purchases and notifications of the App Store's Sandbox (and Xcode) environment too; without it they are refused (403)."
    )
    var appStoreSandbox = false

    func validate() throws {
        _ = try address
        if (appStoreRootCA == nil) != (appStoreBundleID == nil) {
            throw ValidationError("--app-store-root-ca and --app-store-bundle-id go together; give both, or neither")
        }
        if appStoreSandbox && appStoreRootCA == nil {
            throw ValidationError("--app-store-sandbox needs --app-store-root-ca and --app-store-bundle-id")
        }
        try Self.requireClaim(issuer, "--issuer")
        try Self.requireClaim(audience, "--audience")
        if let threads { try requireInRange(threads, 1...256, "--threads") }
        try requireInRange(maxRequests, 1...65536, "--max-requests")
        guard (0...3600).contains(storeWait) else {
            throw ValidationError("--store-wait must be from 0 to 3600 seconds, not \(storeWait)")
        }
        try requireInRange(bodyMemory, 1 << 20...1 << 40, "--body-memory")
        try requireInRange(uploadSpace, 256 << 20...1 << 50, "--upload-space")
        try requireInRange(idleTimeout, 1...3600, "--idle-timeout")
        try requireInRange(headTimeout, 1...3600, "--head-timeout")
        try requireInRange(bodyTimeout, 1...86400, "--body-timeout")
        try requireInRange(minBodyRate, 0...1 << 30, "--min-body-rate")
        try requireInRange(connectionsPerAddress, 0...65536, "--connections-per-address")
        try requireInRange(requestsPerAddress, 0...65536, "--requests-per-address")
        try requireInRange(guestsPerHour, 0...1_000_000, "--guests-per-hour")
        try requireInRange(keepBackups, 1...10_000, "--keep-backups")
    }

    /// A claim's text: 1 to 256 printable ASCII characters, no spaces, so every verifier compares it
    /// byte for byte as this server does.
    private static func requireClaim(_ value: String, _ option: String) throws {
        guard (1...256).contains(value.utf8.count), value.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            throw ValidationError("\(option) must be 1 to 256 printable ASCII characters without spaces")
        }
    }

    /// Read in `run`, not `validate`, so a bad setting is reported with its own code, not as a usage error.
    private var identityProviders: [IdentityProviderSetting] {
        get throws {
            let settings = try oidc.map(IdentityProviderSetting.init(parsing:))
            if let twice = Dictionary(grouping: settings, by: \.provider).first(where: { $0.value.count > 1 })?.key {
                throw GuestModeError(
                    .invalidIdentityProvider, "--oidc names provider '\(twice)' twice; give each provider once")
            }
            return settings
        }
    }

    /// Read in `run`, as the identity providers: an unreadable certificate is its own failure.
    private var appStore: AppStoreVerifier? {
        get throws {
            guard let appStoreRootCA, let appStoreBundleID else { return nil }
            guard let bytes = FileManager.default.contents(atPath: appStoreRootCA) else {
                throw GuestModeError(
                    .fileNotFound,
                    "--app-store-root-ca '\(appStoreRootCA)' cannot be read; give the root certificate's file")
            }
            return try AppStoreVerifier(
                rootCertificate: bytes, bundleID: appStoreBundleID, acceptsSandbox: appStoreSandbox)
        }
    }

    private var address: (host: String, port: Int) {
        get throws {
            guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
                (0...65535).contains(port), colon != listen.startIndex
            else { throw ValidationError("--listen '\(listen)' must be HOST:PORT, e.g. 127.0.0.1:8080") }
            var host = String(listen[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return (host, port)
        }
    }

    func run() throws {
        // A client that hangs up mid-answer is that connection's end, never the server's (main.swift
        // restores SIGPIPE's default for the one-shot commands).
        signal(SIGPIPE, SIG_IGN)
        // One store connection per engine thread: a call never waits for a connection once it runs.
        let providers = try identityProviders
        let revenueCatSettings = try revenueCat.settings()
        let appStore = try self.appStore
        // The store gives up waiting when a request would: its locks, connections and statements are
        // bounded by --store-wait as well as the queue in front of them.
        let wait = Duration.milliseconds(Int((storeWait * 1000).rounded()))
        let threads = try self.threads ?? Self.defaultThreads(for: global.storeLocation)
        let engine = try global.openEngine(connections: threads, wait: wait)
        let key = try global.backupKeyCreatingIfMissing()
        let (host, port) = try address
        var configuration = ServerConfiguration(
            host: host, port: port, threads: threads, signingKeySeal: key.signingKeySeal)
        configuration.issuer = issuer
        configuration.audience = audience
        configuration.storeWait = wait
        configuration.idleTimeout = .seconds(idleTimeout)
        configuration.maximumRequests = maxRequests
        configuration.bodyMemory = bodyMemory
        configuration.headTimeout = .seconds(headTimeout)
        configuration.bodyTimeout = .seconds(bodyTimeout)
        configuration.minimumBodyRate = minBodyRate
        configuration.connectionsPerAddress = connectionsPerAddress
        configuration.requestsPerAddress = requestsPerAddress
        configuration.signInLimit = SignInLimit(perHour: guestsPerHour, burst: guestsPerHour)
        configuration.trustedProxies = Set(trustedProxy)
        configuration.backupKey = key
        configuration.toolVersion = GuestModeVersion.current
        configuration.backupsDirectory = backupsDir
        configuration.keptBackups = keepBackups
        configuration.uploadSpace = uploadSpace
        configuration.identityProviders = providers
        configuration.revenueCat = revenueCatSettings
        configuration.appStore = appStore
        configuration.metricsExposition = Self.bootstrapMetrics()
        let server = GuestModeServer(engine: engine, configuration: configuration, clock: global.clock)
        let output = global.output
        let listen = self.listen
        let outcome = ServerOutcome()
        let finished = DispatchSemaphore(value: 0)
        Task {
            do {
                try await server.run { address in
                    if output.isJSON {
                        output.line(#"{"listening":"\#(address)"}"#)
                    } else {
                        output.line("listening on http://\(address)")
                    }
                }
            } catch let error as GuestModeError {
                outcome.fail(error)
            } catch {
                // What NIO reports when it cannot bind: the port is taken, or the address is not this machine's.
                outcome.fail(
                    GuestModeError(.ioError, "cannot serve on \(listen): \(error)"))
            }
            finished.signal()
        }
        finished.wait()
        try (engine.store as? SQLiteStore)?.close()
        // PostgreSQL sessions end with a goodbye, not with the process: none stays behind on the server.
        (engine.store as? PostgresStore)?.close()
        if let error = outcome.error { throw error }
    }

    /// `--threads` when not given. A SQLite store's calls keep a processor busy from start to end, so
    /// more of them than cores only take turns: at 64 connections on two cores, 4 threads answered
    /// 11,700–11,800 `meter check`s a second where 2 answered 15,600–17,000, with a quarter of the
    /// context switches a request (bench/results.md, "Serving, round 10"). Two at least, so one call
    /// waiting for a lock leaves the others a thread. A PostgreSQL store's calls mostly wait for the
    /// server, so more of them than cores overlap.
    static func defaultThreads(for location: StoreLocation) -> Int {
        switch location {
        case .sqlite: return max(2, ProcessInfo.processInfo.activeProcessorCount)
        case .postgres: return 4
        }
    }

    /// Points swift-metrics at a Prometheus registry, once for the process (only `serve` records
    /// metrics), and answers how to render it for `/metrics`. Latency buckets run from 1 ms, a cached
    /// read, to 10 s, the default --store-wait.
    private static func bootstrapMetrics() -> @Sendable () -> String {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[GuestModeServer.durationMetricLabel] = [
            .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        MetricsSystem.bootstrap(factory)
        return { registry.emitToString() }
    }
}

/// How the server's task ended, read once the main thread stops waiting for it.
private final class ServerOutcome: @unchecked Sendable {
    private let lock = NSLock()
    private var failure: (any Error)?

    func fail(_ error: any Error) {
        lock.withLock { failure = error }
    }

    var error: (any Error)? { lock.withLock { failure } }
}
