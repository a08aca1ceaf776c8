import Foundation

/// A record as the store holds it.
public struct StoredRecord: Codable, Sendable, Equatable {
    /// The id of the user who owns it (the profile's guest owner for an ownerless record).
    public var owner: String
    /// The record's collection.
    public var collection: String
    /// The record's key, unique per owner and collection.
    public var key: String
    /// The JSON document, exactly as stored; every document guestmode writes holds it as an object.
    @RecordJSON public var data: String
    /// When the record was first written.
    public var createdAt: Date
    /// When it was last written.
    public var updatedAt: Date

    package init(owner: String, collection: String, key: String, data: String, createdAt: Date, updatedAt: Date) {
        self.owner = owner
        self.collection = collection
        self.key = key
        self.data = data
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// What a write of a record did: stored, or refused by the cap.
public struct PutResult: Codable, Sendable, Equatable {
    /// `allowed` when stored; otherwise what to ask the user for, and nothing was written.
    public var outcome: CapOutcome
    /// True when the write replaced a record under the same key, which never counts against the cap.
    public var isReplacement: Bool
    /// Where the user stands against the collection's cap after the write.
    public var limit: CollectionLimit
    /// Why the put was refused, worded once, with the prompt it raised; nil when stored. Not part of
    /// the document the command line and the server print (they answer it as the refusal itself).
    public var refusal: Refusal?

    enum CodingKeys: String, CodingKey { case outcome, isReplacement, limit }

    package init(outcome: CapOutcome, isReplacement: Bool, limit: CollectionLimit) {
        self.outcome = outcome
        self.isReplacement = isReplacement
        self.limit = limit
    }
}

/// Where a user stands against one collection's cap.
public struct CollectionLimit: Codable, Sendable, Equatable {
    /// The collection.
    public var collection: String
    /// The user's tier, which sets the cap.
    public var tier: TierLevel
    /// How many records the user holds in the collection; nil when not
    /// counted: a put to a collection the tier does not cap skips the count,
    /// so its cost does not grow with the user's records.
    public var used: Int?
    /// nil: unlimited for this tier.
    public var cap: Int?
    /// What a new record would get now.
    public var outcome: CapOutcome

    package init(collection: String, tier: TierLevel, used: Int?, cap: Int?, outcome: CapOutcome) {
        self.collection = collection
        self.tier = tier
        self.used = used
        self.cap = cap
        self.outcome = outcome
    }
}

extension GuestMode {
    /// Writes a record unless it would exceed the user's tier cap; replacing
    /// an existing key never counts against the cap. Refused writes change
    /// nothing and report what the app should ask for.
    ///
    /// ```swift
    /// let result = try engine.putRecord(
    ///     user: guest.id, collection: "subscriptions", key: "sub-1", json: #"{"price": 4.99}"#, now: now)
    /// switch result.outcome {
    /// case .allowed: break  // stored; result.limit says how many remain
    /// case .needsAccount, .needsPremium: break  // refused, nothing written: ask for what the outcome names
    /// }
    /// ```
    public func putRecord(
        user userID: String, collection: String, key: String, json: String, now: Date
    ) throws -> PutResult {
        try TextRule.check(["the user id": userID, "the collection": collection, "the record key": key])
        try requireCollection(collection)
        guard !key.isEmpty else { throw GuestModeError(.emptyKey, "the record key must not be empty") }
        let canonical = try canonicalJSON(json)
        let result = try store.write { transaction in
            try put(canonical, owner: userID, collection: collection, key: key, now: now, in: transaction)
        }
        guard result.outcome != .allowed else { return result }
        try raisePromptTriggers(
            for: .recordRefused(collection: collection, outcome: result.outcome), userID: userID, now: now)
        var refused = result
        refused.refusal = Refusal.cap(
            result.limit, outcome: result.outcome,
            prompt: try promptRaised(byRefusalIn: collection, outcome: result.outcome, user: userID, now: now))
        return refused
    }

    /// Writes a record owned by the profile's guest owner, as an app does
    /// before any user exists; `migrate adopt` later gives it to a user.
    /// In a collection with unique fields the key starts with the guest
    /// owner and a `/` (`/habit/day` for the owner `""`), so adoption can
    /// rewrite it. Caps do not apply: they are per user.
    public func putOwnerlessRecord(
        collection: String, key: String, json: String, now: Date
    ) throws -> PutResult {
        try TextRule.check(["the collection": collection, "the record key": key])
        try requireCollection(collection)
        guard !key.isEmpty else { throw GuestModeError(.emptyKey, "the record key must not be empty") }
        if profile.collection(named: collection)?.uniqueFields.isEmpty == false,
            !key.hasPrefix(profile.guestOwner + "/")
        {
            throw GuestModeError(
                .ownerlessKeyWithoutOwner,
                "the collection \(collection) has unique fields, so an ownerless key starts with the guest owner '\(profile.guestOwner)' and a '/', e.g. '\(profile.guestOwner)/\(key)'"
            )
        }
        let canonical = try canonicalJSON(json)
        // No user, no cap, no last-seen, no backup: the data waits for `migrate adopt`.
        let replaced = try store.write { transaction in
            let exists = try transaction.recordExists(owner: profile.guestOwner, collection: collection, key: key)
            try transaction.upsertRecord(
                owner: profile.guestOwner, collection: collection, key: key, data: canonical, at: now)
            return exists
        }
        return PutResult(
            outcome: .allowed, isReplacement: replaced,
            limit: CollectionLimit(collection: collection, tier: .guest, used: 0, cap: nil, outcome: .allowed))
    }

    /// The user's record under `key`.
    ///
    /// ```swift
    /// let record = try engine.record(user: guest.id, collection: "subscriptions", key: "sub-1")
    /// // record.data is the JSON as stored
    /// ```
    ///
    /// - Throws: ``GuestModeError`` `record_not_found` when there is none.
    public func record(user userID: String, collection: String, key: String) throws -> StoredRecord {
        try TextRule.check(["the user id": userID, "the collection": collection])
        try requireCollection(collection)
        let found = try store.read { try $0.record(ofUser: userID, collection: collection, key: key) }
        guard found.userExists else { throw GuestMode.missingUser(userID) }
        guard let record = found.record else {
            throw recordNotFound(user: userID, collection: collection, key: key)
        }
        return record
    }

    /// The user's records in a collection, by key (in byte order): with `after`, only those whose key
    /// comes after it, and with `limit`, at most that many, so a long collection is read a page at a time,
    /// each page starting after the last key of the one before.
    ///
    /// ```swift
    /// let kept = try engine.records(user: guest.id, collection: "subscriptions")
    /// let next = try engine.records(user: guest.id, collection: "subscriptions", after: kept.last?.key, limit: 100)
    /// ```
    ///
    /// - Throws: ``GuestModeError`` `invalid_limit` for a limit outside 1 to ``EventQuery/largestLimit``.
    public func records(
        user userID: String, collection: String, after: String? = nil, limit: Int? = nil
    ) throws -> [StoredRecord] {
        try TextRule.check(["the user id": userID, "the collection": collection])
        if let after { try TextRule.check(after, what: "the key to list after") }
        try EventQuery.check(limit: limit)
        try requireCollection(collection)
        return try store.read { transaction in
            _ = try transaction.requireUser(userID)
            return try transaction.records(owner: userID, collection: collection, after: after, limit: limit)
        }
    }

    /// Deletes the user's record under `key`, freeing its place under the cap.
    ///
    /// ```swift
    /// try engine.deleteRecord(user: guest.id, collection: "subscriptions", key: "sub-1", now: now)
    /// ```
    ///
    /// - Throws: ``GuestModeError`` `record_not_found` when there is none.
    public func deleteRecord(user userID: String, collection: String, key: String, now: Date) throws {
        try TextRule.check(["the user id": userID, "the collection": collection, "the record key": key])
        try requireCollection(collection)
        let deleted = try store.write { transaction in
            _ = try transaction.requireUser(userID, locking: true)
            guard try transaction.deleteRecord(owner: userID, collection: collection, key: key) else { return false }
            try transaction.noteActivity(of: userID, profile: profile, now: now)
            return true
        }
        guard deleted else {
            throw recordNotFound(user: userID, collection: collection, key: key)
        }
    }

    /// Limits of the named collection, or of every collection some tier caps.
    ///
    /// ```swift
    /// let limits = try engine.limits(user: guest.id, collection: "subscriptions", now: now)
    /// // limits[0].used, limits[0].cap
    /// ```
    public func limits(user userID: String, collection: String?, now: Date) throws -> [CollectionLimit] {
        try TextRule.check(userID, what: "the user id")
        if let collection { try requireCollection(collection) }
        let names =
            collection.map { [$0] }
            ?? profile.collections.map(\.name).filter { name in profile.tiers.contains { $0.cap(for: name) != nil } }
        return try store.read { transaction in
            let user = try transaction.requireUser(userID)
            guard !names.isEmpty else { return [] }
            let level = try transaction.tier(of: user, profile: profile, now: now)
            return try names.map {
                try transaction.collectionLimit(of: user, collection: $0, tier: level, profile: profile)
            }
        }
    }

    /// One put under the cap, inside the caller's transaction: the tier in
    /// force and the records held give the limit; unless it admits the write,
    /// nothing is written and the refusal is returned. The result carries the
    /// limit after the write.
    private func put(
        _ data: String, owner userID: String, collection: String, key: String, now: Date,
        in transaction: any StoreTransaction
    ) throws -> PutResult {
        let user = try transaction.requireUser(userID, locking: true)
        let exists = try transaction.recordExists(owner: userID, collection: collection, key: key)
        // Counted only when a cap applies: a put costs the same whatever the user holds.
        let level = try transaction.tier(of: user, profile: profile, now: now)
        let used: Int? =
            profile.tier(level).cap(for: collection) == nil
            ? nil : try transaction.countRecords(owner: userID, collection: collection)
        let before = profile.collectionLimit(collection, tier: level, used: used)
        guard before.admits(isReplacement: exists) else {
            return PutResult(outcome: before.outcome, isReplacement: false, limit: before)
        }
        try transaction.upsertRecord(owner: userID, collection: collection, key: key, data: data, at: now)
        try transaction.noteActivity(of: userID, profile: profile, now: now)
        let after =
            exists ? before : used.map { profile.collectionLimit(collection, tier: level, used: $0 + 1) } ?? before
        return PutResult(outcome: .allowed, isReplacement: exists, limit: after)
    }

    func requireCollection(_ name: String) throws {
        guard profile.collection(named: name) != nil else {
            throw GuestModeError(
                .unknownCollection,
                "unknown collection '\(name)'; this profile's collections are: \(profile.collections.map(\.name).joined(separator: ", "))"
            )
        }
    }

    private func recordNotFound(user userID: String, collection: String, key: String) -> GuestModeError {
        GuestModeError(.recordNotFound, "user '\(userID)' has no record '\(key)' in \(collection)")
    }

    /// Writes a record given as bytes (a file or standard input): they must be
    /// valid UTF-8, never silently repaired.
    public func putRecord(
        user userID: String, collection: String, key: String, jsonBytes: Data, now: Date
    ) throws
        -> PutResult
    {
        try requireCollection(collection)
        let text = try Self.recordText(jsonBytes)
        return try putRecord(user: userID, collection: collection, key: key, json: text, now: now)
    }

    private static func recordText(_ jsonBytes: Data) throws -> String {
        try TextRule.decode(jsonBytes, what: "the record data")
    }

    /// `putOwnerlessRecord(collection:key:json:now:)` for bytes, which must
    /// be valid UTF-8.
    public func putOwnerlessRecord(collection: String, key: String, jsonBytes: Data, now: Date) throws -> PutResult {
        try requireCollection(collection)
        let text = try Self.recordText(jsonBytes)
        return try putOwnerlessRecord(collection: collection, key: key, json: text, now: now)
    }

    /// Records are stored as compact JSON so equal documents compare equal.
    /// The text is checked by the strict parser first (Foundation's accepts
    /// trailing commas) and must be a JSON object.
    func canonicalJSON(_ text: String) throws -> String {
        let parsed: JSONValue
        do {
            parsed = try StrictJSON.parse(text)
        } catch {
            throw GuestModeError(
                .invalidJson, "the record data is not valid JSON: \(error) in \(text.prefix(80).debugDescription)")
        }
        // A "\u0000" escape is valid JSON, but the rule holds for the text it stands for.
        try TextRule.check(parsed, what: "the record data")
        guard case .object = parsed else {
            throw GuestModeError(
                .recordNotObject,
                "the record data is \(parsed.kindDescription), not a JSON object; wrap it, e.g. {\"value\": \(text.prefix(40))}"
            )
        }
        return parsed.canonicalText
    }
}
