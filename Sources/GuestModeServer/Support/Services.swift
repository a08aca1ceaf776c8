import Foundation
import GuestModeArchive
import GuestModeKit
import NIOPosix

/// What every route shares: the engine, the bounded pool its blocking calls
/// run on, the clock, the access-token signer and the sign-in limits.
final class Services: Sendable {
    let engine: GuestMode
    let pool: NIOThreadPool
    let clock: @Sendable () throws -> Date
    let tokens: AccessTokens
    let bodyLimit: Int
    let storeWait: Duration
    let signInLimit: SignInLimit
    let trustedProxies: Set<String>
    let backupKey: BackupKey?
    let toolVersion: String
    /// Where pushed backups are kept; nil when the server keeps none.
    let backupShelf: BackupShelf?
    /// The providers whose ID tokens link identities (`--oidc`).
    let identityTokens: IdentityTokens
    /// Request and store-pool metrics.
    let metrics: ServerMetrics
    /// The metrics in Prometheus's text format, for `/metrics`; nil when the process exposes none.
    let metricsExposition: (@Sendable () -> String)?

    init(
        engine: GuestMode, pool: NIOThreadPool, clock: @escaping @Sendable () throws -> Date, tokens: AccessTokens,
        identityTokens: IdentityTokens, configuration: ServerConfiguration
    ) {
        self.identityTokens = identityTokens
        self.engine = engine
        self.pool = pool
        self.clock = clock
        self.tokens = tokens
        bodyLimit = configuration.bodyLimit
        storeWait = configuration.storeWait
        signInLimit = configuration.signInLimit
        trustedProxies = configuration.trustedProxies
        backupKey = configuration.backupKey
        toolVersion = configuration.toolVersion
        backupShelf = configuration.backupsDirectory.map {
            BackupShelf(directory: $0, keep: configuration.keptBackups, sizeLimit: configuration.backupSizeLimit)
        }
        metrics = ServerMetrics(threads: configuration.threads)
        metricsExposition = configuration.metricsExposition
    }

    /// Runs a blocking engine call on the pool, never on an event loop; at
    /// most the pool's size (the store's connections) run at once and the
    /// rest wait their turn. A call that waited longer than `storeWait` is
    /// `pool_exhausted` (503) without touching the store. The store-pool
    /// gauges count the calls waiting and running.
    func perform<T: Sendable>(_ body: @escaping @Sendable (GuestMode, Date) throws -> T) async throws -> T {
        let engine = self.engine
        let clock = self.clock
        let wait = storeWait
        let metrics = self.metrics
        let queued = ContinuousClock.now
        metrics.storeWaiting.increment()
        do {
            return try await pool.runIfActive {
                metrics.storeWaiting.decrement()
                guard ContinuousClock.now - queued <= wait else {
                    throw GuestModeError(
                        .tryAgainLater, code: .poolExhausted,
                        "no store connection was free within \(wait); try again shortly")
                }
                metrics.storeInUse.increment()
                defer { metrics.storeInUse.decrement() }
                return try body(engine, try clock())
            }
        } catch let error as NIOThreadPoolError.ThreadPoolInactive {
            // Shutting down: the call never ran, so it no longer waits.
            metrics.storeWaiting.decrement()
            throw error
        }
    }

    func now() throws -> Date { try clock() }
}
