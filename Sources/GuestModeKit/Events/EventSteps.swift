import Foundation

/// What one batch of an ingested log did.
struct EventBatchResult: Sendable, Equatable {
    /// Events that counted.
    var counted: Int
    /// Events whose idempotency key had already counted.
    var duplicates: Int
    var usersCreated: Int
}

extension GuestMode {
    /// Whether the user exists; ingestion checks every line before writing.
    func containsUser(_ userID: String) throws -> Bool {
        try store.read { transaction in try transaction.user(userID, locking: false) != nil }
    }
}

/// The steps of `track` and of ingestion, inside their transaction.
extension StoreTransaction {
    /// Counts one validated event of a user already locked (`count(_:profile:now:)`);
    /// the result carries the counter's total either way.
    func track(_ event: TrackedEvent, profile: Profile, now: Date) throws -> TrackResult {
        let isCounted = try count(event, profile: profile, now: now)
        let total = try counterTotal(of: event.user, action: event.action)
        return TrackResult(user: event.user, action: event.action, isCounted: isCounted, total: total)
    }

    /// Appends one validated event of a user already locked unless its
    /// idempotency key was counted; when it counts (true), the counter grows
    /// by its count, last-seen moves forward to the event and a backup is
    /// queued when the profile asks for it. A key counted for another
    /// action, count or properties throws `idempotency_key_reused`. A
    /// replay, which runs a whole log in one transaction, takes this step
    /// once per event.
    func count(_ event: TrackedEvent, profile: Profile, now: Date) throws -> Bool {
        let row = EventRow(event)
        if let counted = try appendEvents([row])[0] {
            guard counted == row.payload else {
                throw GuestModeError.keyReused(
                    event.idempotencyKey ?? "", user: event.user, counted: counted, given: row.payload)
            }
            return false
        }
        try addToCounter(user: event.user, action: event.action, count: event.count)
        try advanceLastSeen(of: event.user, to: event.at)
        try noteChange(of: event.user, profile: profile, now: now)
        return true
    }

    /// One batch of a log in a transaction of its own (`EventIngestion`,
    /// finished at once).
    func applyBatch(
        _ events: [TrackedEvent], creatingUsers: Bool, profile: Profile, now: Date
    ) throws -> EventBatchResult {
        var ingestion = EventIngestion(creatingUsers: creatingUsers, profile: profile, now: now)
        let result = try ingestion.apply(events, in: self)
        try ingestion.finish(in: self)
        return result
    }
}

/// The batches of one log, applied in the log's one transaction. With
/// `creatingUsers`, users not in the store are first created as anonymous
/// guests first seen at their first event of the batch; otherwise a user not
/// in the store fails the batch. Each event then counts unless its idempotency
/// key was counted, by an earlier batch or an earlier event of this one (a
/// repeated log counts nothing); a key counted for another action, count or
/// properties fails the batch, named at its first such event.
///
/// Counters, last-seen and the backup outbox are written once per user (and
/// action) for many batches, not once per batch, and a user is created, found
/// and locked once per transaction: a log's users are read and written about
/// once whatever the log's length, so the work stays proportional to the
/// events. What is pending is bounded (`pendingLimit`), so memory stays flat
/// with millions of users; the transaction makes the deferral invisible.
/// `ingest` hands the batches over user by user (`EventSpool`), so what is
/// pending covers about one batch's users, written in order.
struct EventIngestion {
    let creatingUsers: Bool
    let profile: Profile
    let now: Date
    /// Distinct counters, or users, held before they are written (or
    /// forgotten): about one batch's worth, since the users come in order
    /// (20,000 took 3 MB more at the same speed).
    var pendingLimit = 5_000
    /// Users created or found, and locked, earlier in this transaction.
    private var settledUsers = Set<String>()
    /// Users whose backup this transaction queued already: queued once, not once per write.
    private var queuedUsers = Set<String>()
    private var increments: [CounterKey: Int] = [:]
    private var lastSeen: [String: Date] = [:]
    /// Users created since the pending rows were last written, with the last-seen they were created with.
    private var createdLastSeen: [String: Date] = [:]

    init(creatingUsers: Bool, profile: Profile, now: Date) {
        self.creatingUsers = creatingUsers
        self.profile = profile
        self.now = now
    }

    mutating func apply(_ events: [TrackedEvent], in transaction: some StoreTransaction) throws -> EventBatchResult {
        guard !events.isEmpty else { return EventBatchResult(counted: 0, duplicates: 0, usersCreated: 0) }
        // A key repeated within the batch: its first event is the one that
        // may count, and the repeats are checked against what it finds.
        var firstOfKey: [UserKey: Int] = [:]
        var repeats: [(index: Int, first: Int)] = []
        var rows: [EventRow] = []
        var rowEvents: [Int] = []
        rows.reserveCapacity(events.count)
        rowEvents.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            if let key = event.idempotencyKey {
                let userKey = UserKey(user: event.user, key: key)
                if let first = firstOfKey[userKey] {
                    repeats.append((index, first))
                    continue
                }
                firstOfKey[userKey] = index
            }
            rows.append(EventRow(event))
            rowEvents.append(index)
        }

        // A user the store does not have has no events yet: all its rows
        // count, so it is created last seen at the latest of them, and its
        // last-seen needs no second write.
        var newUsers: [(user: String, firstSeen: Date, lastSeen: Date)] = []
        var newUserIndex: [String: Int] = [:]
        for index in rowEvents {
            let event = events[index]
            guard !settledUsers.contains(event.user) else { continue }
            if let known = newUserIndex[event.user] {
                newUsers[known].lastSeen = max(newUsers[known].lastSeen, event.at)
            } else {
                newUserIndex[event.user] = newUsers.count
                newUsers.append((event.user, event.at, event.at))
            }
        }
        let created =
            creatingUsers
            ? try transaction.createMissingGuests(
                newUsers, state: .anonymous, promptState: User.newGuestPromptState) : []
        // The batch decides the keys of all its users: they are locked first
        // (those just created are locked by their creation).
        let present = try transaction.lockUsers(newUsers.map(\.user).filter { !created.contains($0) }.sorted())
            .union(created)
        if let missing = events.first(where: { !settledUsers.contains($0.user) && !present.contains($0.user) }) {
            throw GuestModeError(
                .userNotFound, "no user '\(missing.user)' in this store; nothing of the batch was written")
        }
        if settledUsers.count + present.count > pendingLimit { settledUsers.removeAll(keepingCapacity: true) }
        settledUsers.formUnion(present)
        for user in created { createdLastSeen[user] = newUsers[newUserIndex[user]!].lastSeen }

        let skipped = try transaction.appendEvents(rows)

        var storedPayloads: [Int: EventPayload] = [:]
        for (row, payload) in skipped { storedPayloads[rowEvents[row]] = payload }
        var reused: (index: Int, counted: EventPayload)?
        func check(_ index: Int, against counted: EventPayload) {
            guard counted != EventRow(events[index]).payload, index < reused?.index ?? .max else { return }
            reused = (index, counted)
        }
        for (index, counted) in storedPayloads { check(index, against: counted) }
        for (index, first) in repeats {
            check(index, against: storedPayloads[first] ?? EventRow(events[first]).payload)
        }
        if let reused {
            let event = events[reused.index]
            throw GuestModeError.keyReused(
                event.idempotencyKey ?? "", user: event.user, counted: reused.counted,
                given: EventRow(event).payload)
        }

        for (row, index) in rowEvents.enumerated() where skipped[row] == nil {
            let event = events[index]
            let key = CounterKey(user: event.user, action: event.action)
            increments[key] = Int(
                try Bounds.addingToCounter(
                    Int64(increments[key, default: 0]), Int64(event.count), action: event.action, user: event.user))
            lastSeen[event.user] = max(lastSeen[event.user] ?? event.at, event.at)
        }
        if increments.count >= pendingLimit || lastSeen.count >= pendingLimit { try finish(in: transaction) }
        let counted = rows.count - skipped.count
        return EventBatchResult(counted: counted, duplicates: events.count - counted, usersCreated: created.count)
    }

    /// Writes what is pending: counters, last-seen and the outbox. Called
    /// after the last batch, before the transaction commits.
    mutating func finish(in transaction: some StoreTransaction) throws {
        try transaction.addToCounters(
            increments.sorted { $0.key < $1.key }.map {
                CounterIncrement(user: $0.key.user, action: $0.key.action, count: $0.value)
            })
        // Users created at their latest time already are not written again.
        try transaction.advanceLastSeen(lastSeen.filter { $0.value > createdLastSeen[$0.key] ?? .distantPast })
        try noteChanges(of: lastSeen.keys.filter { !queuedUsers.contains($0) }.sorted(), in: transaction)
        increments.removeAll(keepingCapacity: true)
        lastSeen.removeAll(keepingCapacity: true)
        createdLastSeen.removeAll(keepingCapacity: true)
    }

    /// `noteChange(of:profile:now:)` for many users, reading and writing the
    /// outbox once for all of them.
    private mutating func noteChanges(of userIDs: [String], in transaction: some StoreTransaction) throws {
        guard profile.backup.queuesOnChange, !userIDs.isEmpty else { return }
        if queuedUsers.count + userIDs.count > pendingLimit { queuedUsers.removeAll(keepingCapacity: true) }
        queuedUsers.formUnion(userIDs)
        let previous = try transaction.backupQueueTimes(of: userIDs)
        var times: [String: Date] = [:]
        for userID in userIDs { times[userID] = backupQueueTime(after: previous[userID], now: now) }
        try transaction.queueBackups(times)
    }
}

/// An idempotency key of one user.
private struct UserKey: Hashable {
    var user: String
    var key: String
}

/// One counter of one user.
private struct CounterKey: Hashable, Comparable {
    var user: String
    var action: String

    static func < (left: CounterKey, right: CounterKey) -> Bool {
        (left.user, left.action) < (right.user, right.action)
    }
}

extension EventRow {
    init(_ event: TrackedEvent) {
        self.init(
            user: event.user, action: event.action, at: event.at, count: event.count,
            idempotencyKey: event.idempotencyKey,
            properties: event.properties.isEmpty ? nil : EventLog.encodeProperties(event.properties))
    }
}

extension GuestModeError {
    /// A key seen before with another action, count or properties is a client bug.
    static func keyReused(_ key: String, user: String, counted: EventPayload, given: EventPayload) -> GuestModeError {
        let difference =
            if counted.action != given.action {
                "'\(counted.action)', not '\(given.action)'"
            } else if counted.count != given.count {
                "'\(counted.action)' with count \(counted.count), not \(given.count)"
            } else {
                "'\(counted.action)' with properties \(counted.properties ?? "{}"), not \(given.properties ?? "{}")"
            }
        return GuestModeError(
            .idempotencyKeyReused,
            "idempotency key '\(key)' of user '\(user)' was already used for \(difference); keys identify one report")
    }
}
