import Foundation
import GuestModeArchive
import GuestModeKit
import GuestModePurchases
import NIOCore
import NIOPosix
import Synchronization

/// What every route shares: the engine, the bounded pool its blocking calls
/// run on, the clock, the access-token signer and the sign-in limits.
final class Services: Sendable {
    let engine: GuestMode
    let pool: NIOThreadPool
    let clock: @Sendable () throws -> Date
    let tokens: AccessTokens
    let storeWait: Duration
    let signInLimit: SignInLimit
    let trustedProxies: Set<String>
    let backupKey: BackupKey?
    let toolVersion: String
    /// Where pushed backups are kept; nil when the server keeps none.
    let backupShelf: BackupShelf?
    /// The providers whose ID tokens link identities (`--oidc`).
    let identityTokens: IdentityTokens
    /// What verifies App Store purchases (`--app-store-root-ca`); nil when the server takes none.
    let appStore: AppStoreVerifier?
    /// Request and store-pool metrics.
    let metrics: ServerMetrics
    /// The pool's size: how many engine calls run at once.
    let threads: Int
    /// How many bytes of a file an answer reads and sends at a time (`OpenedFile`).
    let fileChunkSize: Int
    /// How long one write of an answer may wait for the client to take it (`--idle-timeout`).
    let idleTimeout: Duration
    /// The bytes of request bodies held at once (`--body-memory`).
    let bodyBudget: BodyBudget
    /// The calls waiting for a pool thread and running on one, as `isSaturated` reads them.
    private let load = PoolLoad()
    /// The deadlines of the calls not yet answered.
    private let deadlines = QueueDeadlines()
    /// The metrics in Prometheus's text format, for `/metrics`; nil when the process exposes none.
    let metricsExposition: (@Sendable () -> String)?
    /// RevenueCat's webhook settings; nil when the server takes none.
    let revenueCat: RevenueCatSettings?

    init(
        engine: GuestMode, pool: NIOThreadPool, clock: @escaping @Sendable () throws -> Date, tokens: AccessTokens,
        identityTokens: IdentityTokens, configuration: ServerConfiguration
    ) {
        self.identityTokens = identityTokens
        self.engine = engine
        self.pool = pool
        self.clock = clock
        self.tokens = tokens
        storeWait = configuration.storeWait
        signInLimit = configuration.signInLimit
        trustedProxies = configuration.trustedProxies
        backupKey = configuration.backupKey
        toolVersion = configuration.toolVersion
        backupShelf = configuration.backupsDirectory.map {
            BackupShelf(
                directory: $0, keep: configuration.keptBackups, sizeLimit: configuration.backupSizeLimit,
                space: BodyBudget(
                    capacity: max(configuration.uploadSpace, configuration.backupSizeLimit), option: "--upload-space"))
        }
        metrics = ServerMetrics(threads: configuration.threads)
        threads = max(1, configuration.threads)
        fileChunkSize = max(1, configuration.fileChunkSize)
        idleTimeout = configuration.idleTimeout
        bodyBudget = BodyBudget(
            capacity: max(configuration.bodyMemory, configuration.bodyLimit), option: "--body-memory")
        metricsExposition = configuration.metricsExposition
        revenueCat = configuration.revenueCat
        appStore = configuration.appStore
    }

    /// Runs a blocking engine call on the pool, never on an event loop; at
    /// most the pool's size (the store's connections) run at once and the
    /// rest wait their turn. A call still queued when `storeWait` (or `wait`)
    /// is over is answered `pool_exhausted` (503) then and there, not when a
    /// thread frees up, and the thread that later picks it up skips it: it
    /// never touched the store. A call that started runs with the same
    /// deadline set as `StoreDeadline` (or `startMargin` from its start, if
    /// later), so the store gives up waiting for a connection or a lock then
    /// too. The store-pool gauges count the calls waiting and running.
    ///
    /// The deadline is kept in `QueueDeadlines`, whose one callback on an
    /// event loop serves every call, and let go as soon as the call is
    /// answered. Not a `Task` sleeping until it: a cancelled `Task.sleep`
    /// keeps its task and its dispatch timer until the deadline passes, so
    /// every request would leave about 0.5 KB behind for `--store-wait`
    /// (10 s): 50,000 timers at 5,000 requests a second, and a heap fragmented
    /// by them (bench/results.md, "Serving, round 3"). Nor a callback of its
    /// own: arming and cancelling one from another thread cost the event loop
    /// a wake-up a request (bench/results.md, "Serving, round 8").
    func perform<T: Sendable>(
        waitingAtMost wait: Duration? = nil, _ body: @escaping @Sendable (GuestMode, Date) throws -> T
    ) async throws -> T {
        let engine = self.engine
        let clock = self.clock
        let wait = max(.zero, wait ?? storeWait)
        let metrics = self.metrics
        let load = self.load
        let deadline = ContinuousClock.now + wait
        let call = QueuedCall<T>()
        metrics.storeWaiting.increment()
        load.waiting.add(1, ordering: .relaxed)
        // Whichever of the pool thread and this deadline claims the call first decides it.
        let deadlineKey: QueueDeadlines.Key
        do {
            deadlineKey = try deadlines.add(at: .now() + TimeAmount(wait)) {
                guard call.abandon() else { return }
                metrics.storeWaiting.decrement()
                load.waiting.subtract(1, ordering: .relaxed)
                call.finish(
                    .failure(
                        GuestModeError(
                            .poolExhausted,
                            "no store connection was free within \(wait); nothing was done, try again shortly")))
            }
        } catch {
            // Only an event loop shutting down refuses it: the call was never queued.
            load.waiting.subtract(1, ordering: .relaxed)
            metrics.storeWaiting.decrement()
            throw error
        }
        defer { deadlines.remove(deadlineKey) }
        pool.submit { state in
            guard state == .active else {
                // Shutting down: the call never ran, so it no longer waits.
                guard call.abandon() else { return }
                metrics.storeWaiting.decrement()
                load.waiting.subtract(1, ordering: .relaxed)
                call.finish(.failure(NIOThreadPoolError.ThreadPoolInactive()))
                return
            }
            guard call.start() else { return }
            metrics.storeWaiting.decrement()
            load.waiting.subtract(1, ordering: .relaxed)
            metrics.storeInUse.increment()
            load.running.add(1, ordering: .relaxed)
            defer {
                load.running.subtract(1, ordering: .relaxed)
                metrics.storeInUse.decrement()
            }
            // A call that got its thread at the last moment still gets a moment to reach the store.
            let storeDeadline = max(deadline, ContinuousClock.now + Self.startMargin)
            call.finish(
                Result {
                    try StoreDeadline.$current.withValue(storeDeadline) { try body(engine, try clock()) }
                })
        }
        do {
            return try await call.value()
        } catch let error as GuestModeError {
            throw Self.answerable(error, wait: wait)
        }
    }

    /// The deadlines of calls still armed on an event loop: as many as the
    /// calls waiting or running, none once every call is answered.
    var armedDeadlines: Int { deadlines.count }

    /// How long a call that started just before its deadline may still wait
    /// for the store: enough for a healthy store's connection and lock, short
    /// enough to stay the "small margin" past `--store-wait`.
    static let startMargin = Duration.milliseconds(250)

    /// Whether every pool thread is busy and calls are queued behind them:
    /// a new request would wait, so a load balancer should send it elsewhere.
    var isSaturated: Bool {
        load.running.load(ordering: .relaxed) >= threads && load.waiting.load(ordering: .relaxed) > 0
    }

    /// The store's own words for "busy" and "unreachable" name its file, host
    /// or database: a client hears what happened and what to do, and nothing inside.
    private static func answerable(_ error: GuestModeError, wait: Duration) -> GuestModeError {
        switch error.code {
        case .storeBusy:
            return GuestModeError(
                .storeBusy,
                "the store was busy or did not answer within \(wait); nothing was changed, try again shortly")
        case .storeUnreachable:
            return GuestModeError(
                .storeUnreachable,
                "the store cannot be reached; nothing was changed, try again shortly")
        case .commitUnknown:
            return GuestModeError(
                .commitUnknown,
                "the store stopped answering while the change was being committed; it may or may not have been made: look before repeating it"
            )
        default:
            return error
        }
    }

    func now() throws -> Date { try clock() }
}

/// The counts behind `Services.isSaturated`; the metrics' gauges cannot be read back.
private final class PoolLoad: Sendable {
    let waiting = Atomic<Int>(0)
    let running = Atomic<Int>(0)
}

/// The deadlines of the calls not yet answered, served by one callback on an event loop, armed for the
/// earliest of them. A call's deadline is let go when the call is answered; the callback is not cancelled
/// then, and finds nothing to do when it comes. It is armed again only for a deadline earlier than the one
/// it waits for (the one it replaces is cancelled): with one `--store-wait` for every call, about once a
/// `--store-wait` under any load, and once for each readiness probe, whose wait is shorter.
private final class QueueDeadlines: Sendable {
    struct Key: Hashable, Sendable {
        fileprivate let value: Int
    }

    private struct Entry {
        let deadline: NIODeadline
        let expire: @Sendable () -> Void
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var nextKey = 0
        /// When the callback armed last comes, nil when none is armed.
        var armedFor: NIODeadline?
        /// Which callback is the one armed last: one armed before it does nothing when it comes.
        var generation = 0
        /// The callback armed last, once it is; cancelled when an earlier deadline replaces it.
        var callback: NIOScheduledCallback?
    }

    private let state = Mutex(State())
    private let loop = MultiThreadedEventLoopGroup.singleton.any()

    /// The deadlines not yet let go (`Services.armedDeadlines`).
    var count: Int { state.withLock { $0.entries.count } }

    /// Keeps `expire` to run on the event loop at `deadline` unless let go before. Throws only when the
    /// event loop is shutting down, and then keeps nothing.
    func add(at deadline: NIODeadline, expire: @escaping @Sendable () -> Void) throws -> Key {
        let (key, arming) = state.withLock { state -> (Key, (NIODeadline, Int)?) in
            let key = Key(value: state.nextKey)
            state.nextKey &+= 1
            state.entries[key] = Entry(deadline: deadline, expire: expire)
            if let armed = state.armedFor, armed <= deadline { return (key, nil) }
            state.armedFor = deadline
            state.generation &+= 1
            return (key, (deadline, state.generation))
        }
        if let (time, generation) = arming {
            do {
                try arm(at: time, generation: generation)
            } catch {
                state.withLock { state in
                    state.entries[key] = nil
                    // Nothing was armed: the next deadline arms it.
                    if state.generation == generation { state.armedFor = nil }
                }
                throw error
            }
        }
        return key
    }

    /// Lets a deadline go: its call was answered.
    func remove(_ key: Key) {
        _ = state.withLock { $0.entries.removeValue(forKey: key) }
    }

    /// Schedules the callback of `generation`, and cancels the one it replaces: the replaced one would come
    /// to nothing, but until then it would be kept on the event loop, one for each readiness probe.
    private func arm(at time: NIODeadline, generation: Int) throws {
        let callback = try loop.scheduleCallback(at: time, handler: Sweep(deadlines: self, generation: generation))
        let replaced = state.withLock { state -> NIOScheduledCallback? in
            // Replaced already, before it was kept: it is the one to cancel.
            guard state.generation == generation else { return callback }
            defer { state.callback = callback }
            return state.callback
        }
        replaced?.cancel()
    }

    /// Runs on the event loop: every deadline passed expires, and the callback is armed again for the
    /// earliest one left.
    fileprivate func sweep(generation: Int) {
        let now = NIODeadline.now()
        let (expired, next) = state.withLock { state -> ([Entry], (NIODeadline, Int)?) in
            guard state.generation == generation else { return ([], nil) }
            // This callback has come: nothing is left to cancel.
            state.callback = nil
            let passed = state.entries.filter { $0.value.deadline <= now }
            for key in passed.keys { state.entries[key] = nil }
            guard let earliest = state.entries.values.map(\.deadline).min() else {
                state.armedFor = nil
                return (Array(passed.values), nil)
            }
            state.armedFor = earliest
            state.generation &+= 1
            return (Array(passed.values), (earliest, state.generation))
        }
        for entry in expired { entry.expire() }
        if let (time, generation) = next {
            // Only an event loop shutting down refuses it, and its pool takes no more calls either.
            try? arm(at: time, generation: generation)
        }
    }

    private struct Sweep: NIOScheduledCallbackHandler, Sendable {
        let deadlines: QueueDeadlines
        let generation: Int

        func handleScheduledCallback(eventLoop: some EventLoop) {
            deadlines.sweep(generation: generation)
        }
    }
}

/// One engine call on its way through the pool: queued, then either started
/// by a pool thread or abandoned by its deadline, never both, and its caller
/// resumed exactly once with the outcome.
private final class QueuedCall<T: Sendable>: Sendable {
    private enum Phase { case queued, started, abandoned }

    private struct State {
        var phase = Phase.queued
        var continuation: CheckedContinuation<T, any Error>?
        var outcome: Result<T, any Error>?
    }

    private let state = Mutex(State())

    /// Claims the call for a pool thread; false when its deadline already answered it.
    func start() -> Bool {
        state.withLock { state in
            guard state.phase == .queued else { return false }
            state.phase = .started
            return true
        }
    }

    /// Claims the call for its deadline; false when a thread already runs it.
    func abandon() -> Bool {
        state.withLock { state in
            guard state.phase == .queued else { return false }
            state.phase = .abandoned
            return true
        }
    }

    /// Hands the outcome to the caller, now or as soon as it waits.
    func finish(_ outcome: Result<T, any Error>) {
        let waiting = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard case .none = state.outcome else { return nil }
            state.outcome = outcome
            defer { state.continuation = nil }
            return state.continuation
        }
        waiting?.resume(with: outcome)
    }

    /// The outcome, once there is one.
    func value() async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<T, any Error>? in
                if let outcome = state.outcome { return outcome }
                state.continuation = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}
