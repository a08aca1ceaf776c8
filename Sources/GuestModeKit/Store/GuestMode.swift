import Foundation

/// The engine: a store bound to a profile. Every decision it makes comes from
/// the profile; every write goes through the store; time is always passed in.
///
/// An app makes one engine over its store and shares it between all its tasks:
///
/// ```swift
/// import GuestModeKit
/// import GuestModeSQLite
///
/// let engine = try GuestMode(store: SQLiteStore.open(path: "app.guestmode"))
/// // The app's clock is an input: a request's time, or a test's fixed one.
/// let guest = try engine.createGuest(device: "phone-1", now: request.receivedAt)
/// ```
///
/// A new store is bound to a profile once, with
/// `GuestMode(store:profileText:origin:now:)`, which each store library declares.
public struct GuestMode: Sendable {
    /// The profile every decision of this engine comes from.
    public let profile: Profile
    package let store: any GuestStore
    /// Where a test makes this engine fail inside a transaction; nothing by default.
    package var faults = EngineFaults()
    /// Whether the store owed a build of kept grant draws when this engine
    /// was made over it (read with its profile, at no extra cost): an opening
    /// that migrates then finishes the migration with `buildOwedGrantDraws`.
    package let owedGrantDraws: Bool
    /// What the profile's prompt decisions read, worked out once for it and
    /// shared by the engines made over its transactions (`over(_:)`).
    package let promptReads: PromptReads

    package init(profile: Profile, store: any GuestStore, owedGrantDraws: Bool = false) {
        self.profile = profile
        self.store = store
        self.owedGrantDraws = owedGrantDraws
        promptReads = PromptReads()
    }

    /// This engine over `store`, a scope of one of its transactions: the
    /// same profile, faults and kept reads. A server makes one for every
    /// request, so what it keeps is kept across requests.
    package func over(_ store: any GuestStore) -> GuestMode {
        GuestMode(copying: self, store: store)
    }

    private init(copying engine: GuestMode, store: any GuestStore) {
        profile = engine.profile
        self.store = store
        faults = engine.faults
        owedGrantDraws = engine.owedGrantDraws
        promptReads = engine.promptReads
    }

    /// The engine over an existing store, bound to the profile the store keeps.
    /// `location` names the store in messages (a path or a URI without secrets).
    /// An app reaches this through its store's initialiser
    /// (`GuestMode(store: SQLiteStore)`, `GuestMode(store: PostgresStore)`).
    package init(store: any GuestStore, location: String) throws {
        guard let bound = try store.boundProfileWithCache() else {
            throw GuestModeError(
                .storeWithoutProfile, "the store '\(location)' is not bound to a profile")
        }
        // The validated form kept for exactly this text spares the YAML parse;
        // any mismatch or damage is a miss and the text is parsed as always.
        if let profile = ProfileCache.profile(from: bound.cache, text: bound.text) {
            self.init(profile: profile, store: store, owedGrantDraws: bound.owesGrantDraws)
            return
        }
        let profile = try ProfileLoader.parse(bound.text, file: bound.origin)
        GuestMode.keepCache(of: profile, text: bound.text, in: store)
        self.init(profile: profile, store: store, owedGrantDraws: bound.owesGrantDraws)
    }

    /// Binds an empty store to a profile's text and makes the engine over it.
    package init(store: any GuestStore, profileText text: String, origin: String, now: Date) throws {
        let profile = try ProfileLoader.parse(text, file: origin)
        try store.bindProfile(text: text, origin: origin, now: now)
        GuestMode.keepCache(of: profile, text: text, in: store)
        self.init(profile: profile, store: store)
    }

    /// Best effort: a store that cannot be written to (read-only file, busy)
    /// simply parses its profile next time too.
    private static func keepCache(of profile: Profile, text: String, in store: any GuestStore) {
        guard let entry = try? ProfileCache.entry(for: profile, text: text) else { return }
        try? store.saveProfileCache(entry)
    }
}

/// The writes that take an idempotency key and are counted once per key.
package enum IdempotentWrite: String, Sendable, CaseIterable {
    /// `track` with an idempotency key (`GuestMode.track`).
    case track
    /// `meter use` with an idempotency key (`GuestMode.useMeter`).
    case meterUse = "meter-use"
}

/// Points inside a transaction where a test makes the engine fail the way a
/// crash, a lost connection or a bug would, to show that nothing of the
/// transaction outlives the failure. The command line sets them only in a
/// build with fault hooks (`Sources/GuestModeCommandLine/FaultHooks.swift`).
package struct EngineFaults: Sendable {
    /// Called once the idempotency key of a write was checked and the write
    /// that stores the key with it was made, before the transaction
    /// commits: a throw rolls the key back with the write, so a retry is
    /// counted exactly once.
    package var afterKeyCheck: @Sendable (IdempotentWrite) throws -> Void
    /// Called once each batch of `GuestMode.buildOwedGrantDraws` has
    /// committed, but the last: a throw (or a kill) leaves a store part
    /// built, which the next migration finishes.
    package var afterGrantDrawsBatch: @Sendable () throws -> Void

    package init(
        afterKeyCheck: @escaping @Sendable (IdempotentWrite) throws -> Void = { _ in },
        afterGrantDrawsBatch: @escaping @Sendable () throws -> Void = {}
    ) {
        self.afterKeyCheck = afterKeyCheck
        self.afterGrantDrawsBatch = afterGrantDrawsBatch
    }
}

extension GuestMode {
    /// Runs `body` with the engine on a thread of its own and returns its result, for async code: every
    /// engine call blocks on its store (a SQLite lock, a PostgreSQL round trip), which Swift
    /// concurrency's cooperative threads must never do. This is the engine's async form, as GRDB's
    /// async `read` and `write` are its database's: an app or a server embedding the engine needs no
    /// thread pool of its own. Several calls in one `body` run one after another on that thread.
    ///
    /// ```swift
    /// let result = try await engine.perform { engine in
    ///     try engine.putRecord(user: id, collection: "subscriptions", key: "netflix", json: "{}", now: now)
    /// }
    /// ```
    public func perform<T: Sendable>(_ body: @escaping @Sendable (GuestMode) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try body(self) })
            }
        }
    }
}
