import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The client an app embeds to reach `guestmode serve`: sessions kept and refreshed once, every write
/// idempotent and retried, fire-and-forget work queued durably while offline, refusals as outcomes.
///
/// Built on the code swift-openapi-generator makes from the server's OpenAPI document (the `Client`
/// and the types in `Operations` and `Components`), so a route or a field the document loses breaks
/// this package's build, not an app at run time.
public actor GuestModeClient {
    /// What the client was made with.
    public struct Configuration: Sendable {
        /// The server, e.g. `http://127.0.0.1:8080` (the routes are under its `/v1`).
        public var serverURL: URL
        /// Where the session is kept across launches.
        public var sessionStore: any SessionStore
        /// The offline queue's file; nil for none (`trackLater` and `useMeterLater` then throw).
        public var queueURL: URL?
        /// Items the offline queue holds at most.
        public var queueCapacity: Int
        public var retry: RetryPolicy
        /// A session is refreshed before a call when it expires within this many seconds.
        public var refreshLeeway: TimeInterval
        /// nil for URLSession's (swift-openapi-urlsession).
        public var transport: (any ClientTransport)?
        /// Run on every attempt, after the client's own (a test's counter, a log).
        public var middlewares: [any ClientMiddleware]
        /// Whether queuing an item starts a drain in the background (else only `flush()` drains).
        public var flushesWhenQueuing: Bool

        public init(
            serverURL: URL, sessionStore: any SessionStore = InMemorySessionStore(), queueURL: URL? = nil,
            queueCapacity: Int = 1000, retry: RetryPolicy = RetryPolicy(), refreshLeeway: TimeInterval = 30,
            transport: (any ClientTransport)? = nil, middlewares: [any ClientMiddleware] = [],
            flushesWhenQueuing: Bool = true
        ) {
            self.serverURL = serverURL
            self.sessionStore = sessionStore
            self.queueURL = queueURL
            self.queueCapacity = queueCapacity
            self.retry = retry
            self.refreshLeeway = refreshLeeway
            self.transport = transport
            self.middlewares = middlewares
            self.flushesWhenQueuing = flushesWhenQueuing
        }
    }

    public nonisolated let configuration: Configuration
    private let client: Client
    private let store: any SessionStore
    private var session: Session?
    private var loaded = false
    private var refreshing: Task<Session, any Error>?
    private var queue: OfflineQueue?
    private var draining: Task<QueueDrain, Never>?
    private var flushScheduled = false

    public init(_ configuration: Configuration) throws {
        self.configuration = configuration
        store = configuration.sessionStore
        client = Client(
            serverURL: configuration.serverURL,
            // The server writes times as ISO 8601 with milliseconds (…:06.000Z).
            configuration: .init(dateTranscoder: .iso8601WithFractionalSeconds),
            transport: configuration.transport ?? URLSessionTransport(),
            middlewares: [CallMiddleware(), RetryMiddleware(policy: configuration.retry)] + configuration.middlewares)
        if let url = configuration.queueURL {
            queue = try OfflineQueue(url: url, capacity: configuration.queueCapacity)
        }
    }

    public init(serverURL: URL, sessionStore: any SessionStore = InMemorySessionStore(), queueURL: URL? = nil) throws {
        try self.init(Configuration(serverURL: serverURL, sessionStore: sessionStore, queueURL: queueURL))
    }

    // MARK: Sessions

    /// The session kept, if any (read from the store the first time).
    public func currentSession() async throws -> Session? {
        if !loaded {
            session = try await store.load()
            loaded = true
        }
        return session
    }

    /// The kept session, or a new guest's (`POST /v1/guests`): what an app calls at launch.
    @discardableResult
    public func signInAsGuest(device: String? = nil) async throws -> Session {
        if let session = try await currentSession() { return session }
        let output = try await unauthenticated {
            try await client.createGuest(body: .json(.init(device: device)))
        }
        let document: Components.Schemas.Session
        switch output {
        case let .created(created): document = try created.body.json
        case let .ok(ok): document = try ok.body.json
        default: throw GuestModeClientError.unexpectedAnswer(operation: "createGuest", status: nil)
        }
        return try await keep(Session(document))
    }

    /// Signs in with a provider's OpenID Connect ID token (`POST /v1/sessions`): the session of the user
    /// holding the identity, or of a new account user. It replaces the kept session; keep the guest's
    /// (`currentSession()` before) to merge or migrate it into the account afterwards.
    @discardableResult
    public func signIn(provider: String, idToken: String, nonce: String? = nil) async throws -> Session {
        let output = try await unauthenticated {
            try await client.signIn(body: .json(.init(provider: provider, idToken: idToken, nonce: nonce)))
        }
        let document: Components.Schemas.Session
        switch output {
        case let .created(created): document = try created.body.json
        case let .ok(ok): document = try ok.body.json
        default: throw GuestModeClientError.unexpectedAnswer(operation: "signIn", status: nil)
        }
        return try await keep(Session(document))
    }

    /// Links a provider's identity to the signed-in user (`POST /v1/users/{user}/identities`): the
    /// guest becomes an account and keeps its data and its session.
    @discardableResult
    public func linkIdentity(provider: String, idToken: String, nonce: String? = nil) async throws -> IdentityLink {
        let change = try await authorized(write: true) { client, session in
            let output = try await client.linkIdentity(
                path: .init(user: session.userID),
                body: .json(.init(provider: provider, idToken: idToken, nonce: nonce)))
            switch output {
            case let .created(created): return try created.body.json
            case let .ok(ok): return try ok.body.json
            case let .forbidden(forbidden): throw GuestModeClientError(status: 403, try forbidden.body.json)
            default: throw GuestModeClientError.unexpectedAnswer(operation: "linkIdentity", status: nil)
            }
        }
        if var session, session.userID == change.userId {
            session.state = change.state
            try await keep(session)
        }
        return IdentityLink(
            provider: change.provider, subject: change.subject, changed: change.changed, state: change.state)
    }

    /// Merges a guest (its session, e.g. the one kept before `signIn`) into the signed-in account
    /// (`POST /v1/users/{account}/merges` with the guest's token); `dryRun` answers what it would do.
    public func merge(guest: Session, policy: MergePolicy = .union, dryRun: Bool = false) async throws -> MergeResult {
        let merge = try await authorized(write: true) { client, session in
            let output = try await client.mergeGuest(
                path: .init(user: session.userID),
                body: .json(
                    .init(guestToken: guest.accessToken, policy: .init(rawValue: policy.rawValue)!, dryRun: dryRun)))
            switch output {
            case let .ok(ok): return try ok.body.json
            case let .forbidden(forbidden): throw GuestModeClientError(status: 403, try forbidden.body.json)
            default: throw GuestModeClientError.unexpectedAnswer(operation: "mergeGuest", status: nil)
            }
        }
        return MergeResult(
            accountUserID: merge.accountUserId, guestUserID: merge.guestUserId, dryRun: merge.dryRun,
            recordsMoved: merge.recordsMoved, activityMoved: merge.activityMoved, conflicts: merge.conflicts.count)
    }

    /// Migrates a guest into the signed-in account, journaled (`POST /v1/users/{account}/migrations`);
    /// `dryRun` answers the plan.
    public func migrate(guest: Session, dryRun: Bool = false) async throws -> MigrationResult {
        let migration = try await authorized(write: true) { client, session in
            let output = try await client.migrateGuest(
                path: .init(user: session.userID),
                body: .json(.init(guestToken: guest.accessToken, dryRun: dryRun)))
            switch output {
            case let .ok(ok): return try ok.body.json
            case let .forbidden(forbidden): throw GuestModeClientError(status: 403, try forbidden.body.json)
            default: throw GuestModeClientError.unexpectedAnswer(operation: "migrateGuest", status: nil)
            }
        }
        if let run = migration.value1 {
            return MigrationResult(
                sourceUserID: run.journal.sourceUserId, dryRun: false, status: run.journal.status,
                steps: run.journal.steps.map { $0.name })
        }
        if let plan = migration.value2 {
            return MigrationResult(
                sourceUserID: plan.sourceUserId, dryRun: true, status: nil, steps: plan.steps.map { $0.name })
        }
        throw GuestModeClientError.unexpectedAnswer(operation: "migrateGuest", status: 200)
    }

    /// Signs out (`POST /v1/sessions/revoke` with the refresh token) and forgets the session.
    public func signOut() async throws {
        guard let session = try await currentSession() else { return }
        do {
            _ = try await unauthenticated(retriesUnsure: true) {
                try await client.signOut(body: .json(.init(refreshToken: session.refreshToken)))
            }
        } catch let error as GuestModeClientError {
            // 401: the refresh token is revoked already (a retry whose first answer was lost, or a
            // sign-out elsewhere): signed out all the same.
            guard case .server(401, _, _, _) = error else { throw error }
        }
        try await forget()
    }

    /// Deletes the signed-in user and everything of theirs (`DELETE /v1/users/{user}`), and forgets
    /// the session.
    public func deleteAccount() async throws {
        do {
            _ = try await authorized(write: true) { client, session in
                switch try await client.deleteUser(path: .init(user: session.userID)) {
                case let .ok(ok): return try ok.body.json
                default: throw GuestModeClientError.unexpectedAnswer(operation: "deleteUser", status: nil)
                }
            }
        } catch let error as GuestModeClientError {
            // A retry whose first answer was lost finds the user gone (404), or its session with it.
            switch error {
            case .server(404, .userNotFound, _, _), .sessionRevoked: break
            default: throw error
            }
        }
        try await forget()
    }

    // MARK: Everyday calls

    /// Writes a record: any JSON object (`PUT /v1/users/{user}/records/{collection}/{key}`). A guest
    /// past its cap is `.needsAccount`, a tier past its own `.needsPremium`.
    public func putRecord(
        _ value: some Encodable & Sendable, collection: String, key: String
    ) async throws
        -> Outcome<RecordWrite>
    {
        let object = try JSONDecoder().decode(
            OpenAPIObjectContainer.self, from: JSONEncoder().encode(value))
        return try await authorized(write: true) { client, session in
            let output = try await client.putRecord(
                path: .init(user: session.userID, collection: collection, key: key), body: .json(object))
            switch output {
            case let .ok(ok):
                let put = try ok.body.json
                return .done(RecordWrite(outcome: put.outcome, replacement: put.replacement))
            case let .created(created):
                let put = try created.body.json
                return .done(RecordWrite(outcome: put.outcome, replacement: put.replacement))
            case let .code402(refused): return try Self.outcome(402, try refused.body.json.error, status: nil)
            case let .forbidden(refused): return try Self.outcome(403, try refused.body.json.error, status: nil)
            default: throw GuestModeClientError.unexpectedAnswer(operation: "putRecord", status: nil)
            }
        }
    }

    /// Reads a record as `type`, or nil when there is none.
    public func record<Value: Decodable>(_ type: Value.Type, collection: String, key: String) async throws -> Value? {
        do {
            let data: Data = try await authorized(write: false) { client, session in
                let output = try await client.getRecord(
                    path: .init(user: session.userID, collection: collection, key: key))
                switch output {
                case let .ok(ok): return try Self.jsonData(ok.body.json.data)
                default: throw GuestModeClientError.unexpectedAnswer(operation: "getRecord", status: nil)
                }
            }
            return try JSONDecoder().decode(Value.self, from: data)
        } catch let error as GuestModeClientError where error.code == .recordNotFound {
            return nil
        }
    }

    /// Whether `amount` of `meter` may be used now (`GET /v1/users/{user}/meters/{meter}/check`).
    public func checkMeter(_ meter: String, amount: Double = 1) async throws -> Outcome<MeterStatus> {
        try await authorized(write: false) { client, session in
            let output = try await client.checkMeter(
                path: .init(user: session.userID, meter: meter), query: .init(amount: Self.decimal(amount)))
            switch output {
            case let .ok(ok): return .done(try Reencode.convert(ok.body.json.status))
            case let .code402(refused):
                let body = try refused.body.json
                return try Self.outcome(402, body.error, status: try Reencode.convert(body.result.status))
            default: throw GuestModeClientError.unexpectedAnswer(operation: "checkMeter", status: nil)
            }
        }
    }

    /// Uses `amount` of `meter` now (`POST /v1/users/{user}/meters/{meter}/use`): refused when too
    /// little is left. (A use that already happened goes through `useMeterLater`.)
    public func useMeter(_ meter: String, amount: Double = 1) async throws -> Outcome<MeterUse> {
        try await authorized(write: true) { client, session in
            try await Self.useMeter(client, user: session.userID, meter: meter, amount: amount, overage: nil)
        }
    }

    /// Tracks an event now (`POST /v1/users/{user}/events`). (One the app does not wait on goes through
    /// `trackLater`.)
    @discardableResult
    public func track(
        _ action: String, count: Int? = nil, props: [String: String]? = nil
    ) async throws
        -> TrackedEvent
    {
        try await authorized(write: true) { client, session in
            try await Self.track(client, user: session.userID, action: action, count: count, props: props)
        }
    }

    /// The prompt due now for the user, or nil (`GET /v1/users/{user}/prompts/next`).
    public func nextPrompt(trigger: String? = nil) async throws -> Prompt? {
        try await authorized(write: false) { client, session in
            let output = try await client.nextPrompt(path: .init(user: session.userID), query: .init(trigger: trigger))
            switch output {
            case let .ok(ok):
                return try ok.body.json.value1.map { try Reencode.convert($0) }
            default: throw GuestModeClientError.unexpectedAnswer(operation: "nextPrompt", status: nil)
            }
        }
    }

    /// Records what the user did with a prompt (`POST /v1/users/{user}/prompts`): `shown`,
    /// `dismissed`, `later`, `never` or `completed`.
    public func recordPrompt(context: String, outcome: String) async throws {
        guard let outcome = Components.Schemas.RecordPromptRequest.OutcomePayload(rawValue: outcome) else {
            throw GuestModeClientError.usage("unknown prompt outcome \(outcome)")
        }
        _ = try await authorized(write: true) { client, session in
            let output = try await client.recordPrompt(
                path: .init(user: session.userID), body: .json(.init(context: context, outcome: outcome)))
            switch output {
            case let .ok(ok): return try ok.body.json
            default: throw GuestModeClientError.unexpectedAnswer(operation: "recordPrompt", status: nil)
            }
        }
    }

    /// Has the server back the user up now and keep the archive (`POST /v1/users/{user}/backups`, on a
    /// server run with `--backups-dir`). Retries carry the call's Idempotency-Key, so a lost answer
    /// never keeps a second backup; `backUpLater()` queues it instead.
    public func backUp() async throws -> KeptBackup {
        try await authorized(write: true) { client, session in
            try await Self.backUp(client, user: session.userID)
        }
    }

    /// The user's counters, one total per action (`GET /v1/users/{user}/counters`).
    public func counters() async throws -> [String: Double] {
        try await authorized(write: false) { client, session in
            switch try await client.getCounters(path: .init(user: session.userID)) {
            case let .ok(ok): return try ok.body.json.counters.additionalProperties
            default: throw GuestModeClientError.unexpectedAnswer(operation: "getCounters", status: nil)
            }
        }
    }

    // MARK: The offline queue

    /// Queues an event durably (fsynced before this returns) and tries to deliver the queue; the server
    /// counts it once, whenever it gets it.
    public func trackLater(_ action: String, count: Int? = nil, props: [String: String]? = nil) async throws {
        try await enqueue(.event(action: action, count: count, props: props))
    }

    /// Queues a meter use that already happened (recorded with `overage: allow`, so never refused for
    /// the allowance) and tries to deliver the queue.
    public func useMeterLater(_ meter: String, amount: Double = 1) async throws {
        try await enqueue(.meterUse(meter: meter, amount: amount))
    }

    /// Queues a backup of the user (the habits app backs up without waiting) and tries to deliver the
    /// queue; the server keeps one backup for it, however often a lost answer makes the client send it.
    public func backUpLater() async throws {
        try await enqueue(.backup)
    }

    /// Items waiting in the offline queue.
    public var pendingCount: Int { queue?.items.count ?? 0 }

    /// What a drain of the queue did.
    public struct QueueDrain: Sendable, Equatable {
        /// Items the server now has.
        public var delivered: Int
        /// Items the server refused for good (a 4xx other than 401, 408, 429), removed.
        public var dropped: Int
        /// Items still waiting (the server did not answer).
        public var pending: Int
    }

    /// Sends the queue in order, each item with its own Idempotency-Key, until it is empty or the
    /// server does not answer; one drain at a time (a caller waits for the one in flight, then drains
    /// what is left), and the counts are this drain's.
    @discardableResult
    public func flush() async -> QueueDrain {
        // A drain in flight may have ended before the last items came: wait for it, then drain anew.
        while let current = draining {
            _ = await current.value
            if draining == current { draining = nil }
        }
        let task = Task { await self.drain() }
        draining = task
        let result = await task.value
        if draining == task { draining = nil }
        return result
    }

    private func enqueue(_ kind: QueuedWork.Kind) async throws {
        guard queue != nil else {
            throw GuestModeClientError.usage("the client was made without a queueURL")
        }
        guard let session = try await currentSession() else { throw GuestModeClientError.signedOut }
        let work = QueuedWork(id: UUID().uuidString, userID: session.userID, kind: kind, queuedAt: Date())
        try queue!.append(work)
        // One background drain at a time: a drain in flight takes the new item too.
        if configuration.flushesWhenQueuing, !flushScheduled, draining == nil {
            flushScheduled = true
            Task {
                await self.flush()
                self.flushScheduled = false
            }
        }
    }

    private func drain() async -> QueueDrain {
        var result = QueueDrain(delivered: 0, dropped: 0, pending: 0)
        while let work = queue?.items.first {
            do {
                try await deliver(work)
                result.delivered += 1
            } catch let error as GuestModeClientError {
                if case let .server(status, _, _, _) = error, (400..<500).contains(status),
                    ![401, 408, 429].contains(status)
                {
                    result.dropped += 1
                } else {
                    break
                }
            } catch {
                break
            }
            do { try queue?.removeFirst(work.id) } catch { break }
        }
        result.pending = queue?.items.count ?? 0
        return result
    }

    private func deliver(_ work: QueuedWork) async throws {
        _ = try await authorized(write: true, idempotencyKey: work.id) { client, session in
            switch work.kind {
            case let .event(action, count, props):
                _ = try await Self.track(client, user: work.userID, action: action, count: count, props: props)
            case let .meterUse(meter, amount):
                _ = try await Self.useMeter(client, user: work.userID, meter: meter, amount: amount, overage: .allow)
            case .backup:
                _ = try await Self.backUp(client, user: work.userID)
            }
        }
    }

    // MARK: Calls, sessions and refresh

    /// Runs `call` with the session's access token and, for a write, one Idempotency-Key for all its
    /// attempts. A 401 refreshes the session (once, whoever else is waiting) and calls again, once.
    private func authorized<T: Sendable>(
        write: Bool, idempotencyKey: String? = nil,
        _ call: @Sendable (Client, Session) async throws -> T
    ) async throws -> T {
        guard var session = try await currentSession() else { throw GuestModeClientError.signedOut }
        if session.expiresAt.timeIntervalSinceNow < configuration.refreshLeeway {
            session = try await refreshed(replacing: session)
        }
        let context = CallContext(
            accessToken: nil, idempotencyKey: write ? idempotencyKey ?? UUID().uuidString : nil)
        var refreshedOnce = false
        while true {
            var attempt = context
            attempt.accessToken = session.accessToken
            do {
                let client = self.client
                let current = session
                return try await CallContext.$current.withValue(attempt) { try await call(client, current) }
            } catch {
                let error = Self.unwrap(error)
                guard let refused = error as? AccessTokenRefused, !refreshedOnce else { throw error }
                refreshedOnce = true
                _ = refused
                session = try await refreshed(replacing: session)
            }
        }
    }

    /// A call with no session's token (sign-in, refresh, sign-out).
    private func unauthenticated<T: Sendable>(
        retriesUnsure: Bool = false, _ call: @Sendable () async throws -> T
    ) async throws -> T {
        do {
            return try await CallContext.$current.withValue(CallContext(retriesUnsure: retriesUnsure)) {
                try await call()
            }
        } catch {
            throw Self.unwrap(error)
        }
    }

    /// The session after `stale`: the one already kept if another call refreshed it meanwhile, the
    /// refresh in flight if there is one, else a new refresh that every later caller waits on. One
    /// refresh token is spent once: guestmode revokes the family when a spent one comes back.
    private func refreshed(replacing stale: Session) async throws -> Session {
        if let refreshing { return try await refreshing.value }
        // Signed out, or refused and forgotten meanwhile: the stale refresh token is spent or revoked.
        guard let session else { throw GuestModeClientError.signedOut }
        if session.accessToken != stale.accessToken { return session }
        let task = Task { try await self.refresh(stale) }
        refreshing = task
        defer { if refreshing == task { refreshing = nil } }
        return try await task.value
    }

    private func refresh(_ stale: Session) async throws -> Session {
        let output: Operations.RefreshSession.Output
        do {
            output = try await unauthenticated {
                try await client.refreshSession(body: .json(.init(refreshToken: stale.refreshToken)))
            }
        } catch let error as GuestModeClientError {
            if case let .server(status, code, _, _) = error, status == 401 {
                try await forget()
                throw GuestModeClientError.sessionRevoked(code)
            }
            throw error
        }
        switch output {
        case let .ok(ok): return try await keep(Session(try ok.body.json))
        default: throw GuestModeClientError.unexpectedAnswer(operation: "refreshSession", status: nil)
        }
    }

    @discardableResult
    private func keep(_ new: Session) async throws -> Session {
        // In memory first: if the store fails, this process still holds the one refresh token that works.
        session = new
        loaded = true
        try await store.save(new)
        return new
    }

    private func forget() async throws {
        try await store.save(nil)
        session = nil
        loaded = true
    }

    // MARK: Helpers

    private static func track(
        _ client: Client, user: String, action: String, count: Int?, props: [String: String]?
    ) async throws -> TrackedEvent {
        let body = Components.Schemas.TrackEventRequest(
            action: action, count: count,
            props: props.map { .init(additionalProperties: $0.mapValues { .init(value1: $0) }) })
        switch try await client.trackEvent(path: .init(user: user), body: .json(body)) {
        case let .ok(ok):
            let tracked = try ok.body.json
            return TrackedEvent(action: tracked.action, counted: tracked.counted, total: tracked.total)
        default: throw GuestModeClientError.unexpectedAnswer(operation: "trackEvent", status: nil)
        }
    }

    private static func backUp(_ client: Client, user: String) async throws -> KeptBackup {
        let kept: Components.Schemas.PushedBackup
        switch try await client.backUpUser(path: .init(user: user)) {
        case let .created(created): kept = try created.body.json
        case let .ok(ok): kept = try ok.body.json
        default: throw GuestModeClientError.unexpectedAnswer(operation: "backUpUser", status: nil)
        }
        return KeptBackup(name: kept.name, sequence: kept.sequence, size: kept.size)
    }

    private static func useMeter(
        _ client: Client, user: String, meter: String, amount: Double,
        overage: Components.Schemas.UseMeterRequest.OveragePayload?
    ) async throws -> Outcome<MeterUse> {
        let output = try await client.useMeter(
            path: .init(user: user, meter: meter),
            body: .json(.init(amount: .init(value1: amount), overage: overage)))
        switch output {
        case let .ok(ok):
            let use = try ok.body.json
            return .done(
                MeterUse(
                    recorded: use.recorded, duplicate: use.duplicate, overage: use.overage,
                    status: try Reencode.convert(use.status)))
        case let .code402(refused):
            let body = try refused.body.json
            return try outcome(402, body.error, status: try Reencode.convert(body.result.status))
        default: throw GuestModeClientError.unexpectedAnswer(operation: "useMeter", status: nil)
        }
    }

    /// A refusal as an outcome; a code that is no refusal as an error.
    private static func outcome<T>(
        _ status: Int, _ refusal: Components.Schemas.Refusal, status meter: MeterStatus?
    )
        throws -> Outcome<T>
    {
        let prompt: Prompt? = try refusal.prompt.map { try Reencode.convert($0) }
        switch ErrorCode(rawValue: refusal.code.rawValue) {
        case .needsAccount: return .needsAccount(prompt)
        case .needsPremium: return .needsPremium(prompt)
        case .meterExhausted:
            if let meter { return .meterExhausted(meter, prompt) }
            return .needsPremium(prompt)
        case let code:
            throw GuestModeClientError.server(status: status, code: code, message: refusal.message, prompt: prompt)
        }
    }

    /// A record's data (the JSON object the server answers) as bytes for the app's `Decodable` type.
    private static func jsonData(_ data: OpenAPIObjectContainer) throws -> Data { try JSONEncoder().encode(data) }

    private static func decimal(_ amount: Double) -> String {
        amount == amount.rounded() && abs(amount) < 1e15 ? String(Int64(amount)) : String(amount)
    }

    /// The error under the generated client's `ClientError`.
    private static func unwrap(_ error: any Error) -> any Error {
        if let error = error as? ClientError { return unwrap(error.underlyingError) }
        return error
    }
}

extension Session {
    /// `expiresAt` is this device's clock plus `expires_in`, so a device whose clock is off (or a
    /// server run with `--now`) neither refreshes at every call nor waits for a 401.
    init(_ document: Components.Schemas.Session, receivedAt: Date = Date()) {
        self.init(
            userID: document.userId, accessToken: document.accessToken, refreshToken: document.refreshToken,
            // Whole seconds, as the stores write them (floored: never later than the server's).
            expiresAt: Date(
                timeIntervalSince1970: (receivedAt.timeIntervalSince1970 + Double(document.expiresIn)).rounded(.down)),
            state: document.state)
    }
}

extension GuestModeClientError {
    init(status: Int, _ error: Components.Schemas.ErrorDocument) {
        self = .server(
            status: status, code: ErrorCode(rawValue: error.error.code.rawValue), message: error.error.message,
            prompt: nil)
    }
}
