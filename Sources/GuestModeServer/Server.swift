import Foundation
import GuestModeArchive
import GuestModeKit
import GuestModePurchases
import GuestModeRemote
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// How a server listens and what it allows.
package struct ServerConfiguration: Sendable {
    package var host: String
    /// 0 picks a free port; `GuestModeServer.run` reports the one bound.
    package var port: Int
    /// The size of the pool blocking engine calls run on.
    package var threads: Int
    /// How many requests may be answered at once; one more is 503 `server_busy` at once.
    package var maximumRequests = 512
    /// The largest request body, in bytes (1 MiB: the command line's longest input line).
    package var bodyLimit = 1 << 20
    /// The bytes of request bodies held at once, every request's together; a request whose body
    /// would pass it is 503 `server_busy` before it is read. At least `bodyLimit`.
    package var bodyMemory = 32 << 20
    /// How long an access token lives.
    package var accessTokenLifetime: TimeInterval = 3600
    /// Opens the store's signing keys (the deployment key derives it); the server makes the store's
    /// first key with it when there is none.
    package var signingKeySeal: SigningKeySeal
    /// The access tokens' `iss`: who issued them, checked on verification.
    package var issuer = "guestmode"
    /// The access tokens' `aud`: whom they are for, checked on verification.
    package var audience = "authenticated"
    /// How long the server uses the store's signing keys as it read them before reading them again:
    /// a rotation or retirement reaches every server on the store within this time.
    package var signingKeyRefresh: Duration = .seconds(5)
    /// How long in-flight requests get to finish once shutdown starts.
    package var shutdownDeadline: Duration = .seconds(30)
    /// How long a request may wait on the store before it is 503: for a thread of the pool, then (as
    /// `StoreDeadline`) for a connection, a lock and the first answer. The store's own timeouts are the
    /// opener's: `guestmode serve` opens it with `--store-wait` as well.
    package var storeWait: Duration = .seconds(10)
    /// How long a connection may stay silent (a request half sent, or none)
    /// before the server closes it.
    package var idleTimeout: Duration = .seconds(30)
    /// How long a request's head may take in all, from the connection's opening or the previous
    /// answer: unlike `idleTimeout`, a byte now and then does not extend it.
    package var headTimeout: Duration = .seconds(10)
    /// How long a request's body may take in all, from its head.
    package var bodyTimeout: Duration = .seconds(60)
    /// The slowest request body, in bytes a second on average, once `bodyRateGrace` has passed; 0 for none.
    package var minimumBodyRate = 1024
    /// How long a body may come at any pace before `minimumBodyRate` applies.
    package var bodyRateGrace: Duration = .seconds(5)
    /// Connections one client address may hold open at once, 0 for no limit; a trusted proxy's are not capped.
    package var connectionsPerAddress = 128
    /// Requests of one client address answered at once, 0 for no limit; one more is 429 `rate_limited`.
    package var requestsPerAddress = 64
    /// Guests one client address may create.
    package var signInLimit = SignInLimit.standard
    /// The addresses of proxies whose `X-Forwarded-For` names the client.
    package var trustedProxies: Set<String> = []
    /// The deployment's backup key: it signs the backups the server exports
    /// and opens the ones it imports.
    package var backupKey: BackupKey?
    /// The version backups name as the tool that wrote them.
    package var toolVersion = ""
    /// How long a webhook delivery may wait for its answer, connecting included.
    package var webhookTimeout: Double = 10
    /// How often the webhook outbox is looked at for due deliveries.
    package var webhookInterval: Duration = .seconds(1)
    /// The folder pushed backups are kept in; nil for a server that takes none.
    package var backupsDirectory: String?
    /// How many pushed archives each user keeps.
    package var keptBackups = 5
    /// The largest pushed archive, in bytes: the largest entry an archive may hold.
    package var backupSizeLimit = Int(ArchiveLimits.standard.maximumEntrySize)
    /// The bytes of pushed archives being received at once, every upload's together, on disk until each
    /// is checked; one that would pass it is 503 `server_busy`. At least `backupSizeLimit`.
    package var uploadSpace = 1 << 30
    /// How much of an archive an answer holds in memory at once: it is read and sent this many bytes at a time.
    package var fileChunkSize = 256 * 1024
    /// The providers whose OpenID Connect ID tokens may link identities.
    package var identityProviders: [IdentityProviderSetting] = []
    /// How RevenueCat's webhooks are taken; nil answers them `revenuecat_not_configured`.
    package var revenueCat: RevenueCatSettings?
    /// What verifies App Store purchases and notifications; nil answers their routes
    /// `app_store_not_configured` (404).
    package var appStore: AppStoreVerifier?
    /// The process's metrics in Prometheus's text format, served on `/metrics`; nil serves no `/metrics`.
    /// The process that bootstraps swift-metrics gives it: the server only records.
    package var metricsExposition: (@Sendable () -> String)?
    /// Where the server's log lines go (access lines at info, warnings and errors); JSON lines on
    /// standard error by default.
    package var makeLogHandler: @Sendable (String) -> any LogHandler = { JSONLineLogHandler(label: $0) }

    package init(host: String, port: Int, threads: Int, signingKeySeal: SigningKeySeal) {
        self.host = host
        self.port = port
        self.threads = threads
        self.signingKeySeal = signingKeySeal
    }
}

/// The engine over HTTP (`/v1`, guestmode-serve(1)): the same documents as
/// the command line's --json, errors as `{"error":{"code","message"}}` with
/// one HTTP status per code, sessions for guests and keys for app backends.
/// It calls the engine exactly as an embedding app does, through `GuestMode`.
package struct GuestModeServer: Sendable {
    let engine: GuestMode
    let configuration: ServerConfiguration
    let clock: @Sendable () throws -> Date

    /// The label of the request-latency histogram: the process that exposes the metrics picks its buckets.
    package static let durationMetricLabel = ServerMetrics.durationLabel

    /// `clock` is read once per request: every decision the request leads to uses that time.
    package init(engine: GuestMode, configuration: ServerConfiguration, clock: @escaping @Sendable () throws -> Date) {
        self.engine = engine
        self.configuration = configuration
        self.clock = clock
    }

    /// Serves until SIGTERM or SIGINT: then it stops accepting connections,
    /// lets requests in flight finish (up to `shutdownDeadline`), and
    /// returns; the caller closes the store. `onListening` gets the address
    /// bound, `host:port`.
    package func run(onListening: @escaping @Sendable (String) -> Void) async throws {
        let pool = NIOThreadPool(numberOfThreads: max(1, configuration.threads))
        pool.start()
        let services: Services
        do {
            services = try await makeServices(pool: pool)
        } catch {
            try? await pool.shutdownGracefully()
            throw error
        }
        // Standard output carries only the startup line; log lines, JSON, go to standard error: one
        // access line per request, and the framework's and the webhook deliveries' warnings.
        var logger = Logger(label: "guestmode", factory: configuration.makeLogHandler)
        logger.logLevel = .warning
        var accessLogger = Logger(label: "guestmode.access", factory: configuration.makeLogHandler)
        accessLogger.logLevel = .info
        let router = Self.buildRouter(services: services, configuration: configuration, accessLogger: accessLogger)
        let host = configuration.host
        let limits = ClientLimits(
            headTimeout: Self.timeAmount(configuration.headTimeout),
            bodyTimeout: Self.timeAmount(configuration.bodyTimeout),
            minimumBodyRate: configuration.minimumBodyRate,
            bodyRateGrace: Self.timeAmount(configuration.bodyRateGrace),
            connectionsPerAddress: configuration.connectionsPerAddress,
            trustedProxies: configuration.trustedProxies)
        let connections = AddressCounts()
        let metrics = services.metrics
        let connectionLog = AccessLog(accessLogger)
        // What the connection layer answers itself gets its access line and its count as a routed request does.
        let report: @Sendable (ConnectionRefusal) -> Void = { refusal in
            let status = Int(refusal.status.code)
            metrics.record(
                route: "none", method: refusal.method ?? "other", status: status, nanoseconds: refusal.nanoseconds)
            // "-" for a head that never arrived whole: every access line has a method, as log readers expect.
            var line = AccessLine(
                method: refusal.method ?? "-", route: "none", status: status, nanoseconds: refusal.nanoseconds,
                client: refusal.client)
            line.error = refusal.code.rawValue
            connectionLog.write(line)
        }
        let idleTimeout = configuration.idleTimeout
        let application = Application(
            router: router,
            server: HTTPServerBuilder { responder in
                GuardedHTTP1Channel(
                    responder: responder, idleTimeout: idleTimeout,
                    makeGuard: { ConnectionGuard(limits: limits, connections: connections, report: report) })
            },
            configuration: ApplicationConfiguration(address: .hostname(host, port: configuration.port)),
            onServerRunning: { channel in
                onListening("\(host):\(channel.localAddress?.port ?? 0)")
            },
            logger: logger)
        var running: [any Service] = [application]
        if !engine.profile.webhooks.endpoints.isEmpty {
            let sender = WebhookSender(
                engine: engine,
                transport: HTTPTransport(
                    userAgent: "guestmode/\(configuration.toolVersion)", timeout: configuration.webhookTimeout),
                secrets: WebhookSecrets(environment: ProcessInfo.processInfo.environment))
            running.append(
                WebhookDeliveryService(
                    sender: sender, clock: clock, interval: configuration.webhookInterval, logger: logger))
        }
        var group = ServiceGroupConfiguration(
            services: running, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        group.maximumGracefulShutdownDuration = configuration.shutdownDeadline
        do {
            try await ServiceGroup(configuration: group).run()
        } catch {
            try? await pool.shutdownGracefully()
            throw error
        }
        // Calls still queued finish before the store is closed.
        try await pool.shutdownGracefully()
    }

    /// What every route shares, over `pool` (started by the caller, which shuts it down). Key set
    /// files and the store's signing keys are read here, before anything listens: a bad one, or a
    /// signing key this deployment key does not open, stops the server before it serves. A store
    /// with no signing key yet gets its first here.
    func makeServices(pool: NIOThreadPool) async throws -> Services {
        let engine = self.engine
        let seal = configuration.signingKeySeal
        let clock = self.clock
        _ = try await pool.runIfActive { try engine.ensureSigningKey(seal: seal, now: try clock()) }
        @Sendable func ring(_ engine: GuestMode) throws -> SigningKeyRing {
            guard let ring = try engine.signingKeyRing(seal: seal) else {
                throw GuestModeError(.internalFailure, "the store has no signing key in force")
            }
            return ring
        }
        // Before anything listens the keys are read as start-up reads; once serving, through
        // `Services.perform`, so a read behind a busy or frozen store gives up within --store-wait.
        let loader = SigningKeyLoader { try await pool.runIfActive { try ring(engine) } }
        let tokens = AccessTokens(
            lifetime: configuration.accessTokenLifetime, issuer: configuration.issuer,
            audience: configuration.audience, refresh: configuration.signingKeyRefresh,
            load: { try await loader.load() })
        _ = try await tokens.published()
        let identityTokens = try await IdentityTokens(
            settings: configuration.identityProviders,
            transport: HTTPTransport(
                userAgent: "guestmode/\(configuration.toolVersion)", timeout: 10, responseLimit: 256 * 1024))
        let services = Services(
            engine: engine, pool: pool, clock: clock,
            tokens: tokens,
            identityTokens: identityTokens, configuration: configuration)
        loader.replace { try await services.perform { engine, _ in try ring(engine) } }
        return services
    }

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        let parts = duration.components
        return .nanoseconds(parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000)
    }
}
