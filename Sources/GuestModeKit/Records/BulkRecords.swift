import Crypto
import Foundation

/// What a bulk load does with a key the user already holds.
public enum RecordConflictPolicy: String, CaseIterable, Codable, Sendable {
    /// Refuse the whole load.
    case fail
    /// Keep the stored record.
    case skip
    /// Overwrite it, as `record put` does.
    case replace
}

/// One record of a bulk load, its data already canonical JSON.
package struct BulkRecord: Sendable, Equatable {
    package var user: String
    package var collection: String
    package var key: String
    package var data: String
    /// The line of the file it came from, for messages; 0 when none.
    package var line: Int

    package init(user: String, collection: String, key: String, data: String, line: Int = 0) {
        self.user = user
        self.collection = collection
        self.key = key
        self.data = data
        self.line = line
    }
}

/// What became of one record of a bulk load.
package enum BulkPutOutcome: Sendable, Equatable {
    case added
    case replaced
    /// The key existed and the policy is `skip`.
    case skipped
    /// The key existed and the policy is `fail`.
    case exists
    /// The user is at the collection's cap: nothing written.
    case refused(CollectionLimit)
    /// The key holds this very data already (stored before the load, or put
    /// by an earlier line of it): nothing written, whatever the policy.
    case unchanged
    /// An earlier line of the load (`firstLine`) gave the same user,
    /// collection and key other data: the load is refused.
    case keyReused(firstLine: Int)
}

/// What loading records from a file did, or with `isDryRun` would do.
public struct BulkPutReport: Codable, Sendable, Equatable {
    /// Lines read.
    public var lines: Int
    /// Records added.
    public var added: Int
    /// Records that replaced one under the same key.
    public var replaced: Int
    /// Records skipped because their key was taken.
    public var skipped: Int
    /// Lines whose key already held the same data (a retried load, or a
    /// line repeated in the file): nothing written for them.
    public var unchanged: Int
    /// True when nothing was written: the report says what a load would do.
    public var isDryRun: Bool
}

extension GuestMode {
    /// Loads NDJSON records, one `{"user_id","collection","key","data"}`
    /// object a line (`user` is accepted for `user_id`; blank lines are
    /// ignored), in one transaction: every line is checked as `record put`
    /// checks it, caps are enforced per user and collection, and one bad
    /// line, capped user or (with `.fail`) existing key means nothing is
    /// stored. The error names the first bad lines.
    public func putRecords(
        from url: URL, label: String? = nil, onConflict: RecordConflictPolicy, dryRun: Bool = false, now: Date
    ) throws -> BulkPutReport {
        var report = BulkPutReport(lines: 0, added: 0, replaced: 0, skipped: 0, unchanged: 0, isDryRun: dryRun)
        struct Rollback: Error {}
        var problems: [(line: Int, error: GuestModeError)] = []
        var problemCount = 0
        func note(_ line: Int, _ error: GuestModeError) {
            problemCount += 1
            if problems.count < 5 { problems.append((line, error)) }
        }
        do {
            try putRecords(onConflict: onConflict, now: now) { put in
                // A store may run the transaction again (a serialization retry): start afresh.
                report = BulkPutReport(lines: 0, added: 0, replaced: 0, skipped: 0, unchanged: 0, isDryRun: dryRun)
                problems = []
                problemCount = 0
                try EventLog.forEachLine(
                    in: url, maximumLineLength: EventLog.maximumLineLength,
                    invalidText: { number, error in
                        report.lines = number
                        note(number, error)
                    }
                ) { number, line in
                    report.lines = number
                    var record: BulkRecord?
                    do {
                        record = try bulkRecord(line)
                        record?.line = number
                    } catch let error as GuestModeError {
                        note(number, error)
                        return
                    }
                    guard let record, problems.isEmpty else { return }
                    do {
                        switch try put(record) {
                        case .added: report.added += 1
                        case .replaced: report.replaced += 1
                        case .skipped: report.skipped += 1
                        case .unchanged: report.unchanged += 1
                        case .keyReused(let firstLine):
                            note(
                                number,
                                GuestModeError(
                                    .idempotencyKeyReused,
                                    "user '\(record.user)', collection \(record.collection), key '\(record.key)' was given other data on line \(firstLine); a load names each record once, or repeats it with the same data"
                                ))
                        case .exists:
                            note(
                                number,
                                GuestModeError(
                                    .recordExists,
                                    "user '\(record.user)' already has '\(record.key)' in \(record.collection)"))
                        case .refused(let limit):
                            note(
                                number,
                                GuestModeError(
                                    limit.outcome == .needsPremium ? .recordCapNeedsPremium : .recordCapReached,
                                    "user '\(record.user)' is at the cap of \(limit.cap ?? 0) \(limit.collection) for tier \(limit.tier.rawValue) (\(limit.outcome.rawValue))"
                                ))
                        }
                    } catch let error as GuestModeError {
                        note(number, error)
                    }
                }
                if !problems.isEmpty || dryRun { throw Rollback() }
            }
        } catch is Rollback {
            guard let first = problems.first else { return report }
            let more = problemCount > 1 ? " (and \(problemCount - 1) more problem lines)" : ""
            throw GuestModeError(
                first.error.code,
                "\(label ?? url.path):\(first.line): \(first.error.message)\(more); nothing was stored")
        }
        return report
    }

    /// Many puts in one transaction: `feed` calls `put` once per record, and
    /// each is decided as `putRecord` decides it (see `BulkRecordWriter`).
    /// A record's key in a load is its user, collection and key: the same
    /// data again is `unchanged`, other data than an earlier record of the
    /// load is `keyReused`.
    /// Everything is rolled back when `feed` throws, so a load is all or
    /// nothing; `put` throws `user_not_found` for a missing user.
    func putRecords(
        onConflict: RecordConflictPolicy, now: Date,
        _ feed: (_ put: (BulkRecord) throws -> BulkPutOutcome) throws -> Void
    ) throws {
        try store.write { transaction in
            let writer = BulkRecordWriter(profile: profile, now: now, onConflict: onConflict, transaction: transaction)
            try feed(writer.put)
            try writer.finish()
        }
    }

    /// One NDJSON line as a record, nil for a blank line.
    func bulkRecord(_ line: Substring) throws -> BulkRecord? {
        if line.allSatisfy(\.isWhitespace) { return nil }
        guard case .object(let object) = try? StrictJSON.parse(line) else {
            throw GuestModeError(
                .invalidJson, "not a JSON object; expected {\"user_id\",\"collection\",\"key\",\"data\"}")
        }
        let known: Set<String> = ["user_id", "user", "collection", "key", "data"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw GuestModeError(
                .invalidJson, "unknown field '\(unknown)'; expected user_id, collection, key, data")
        }
        guard object["user_id"] == nil || object["user"] == nil else {
            throw GuestModeError(.invalidJson, "give 'user_id' or 'user', not both")
        }
        guard case .string(let user)? = object["user_id"] ?? object["user"], !user.isEmpty else {
            throw GuestModeError(.invalidJson, "'user_id' must be a non-empty string")
        }
        guard case .string(let collection)? = object["collection"] else {
            throw GuestModeError(.invalidJson, "'collection' must be a string")
        }
        try TextRule.check(collection, what: "the collection")
        try requireCollection(collection)
        guard case .string(let key)? = object["key"], !key.isEmpty else {
            throw GuestModeError(.emptyKey, "'key' must be a non-empty string")
        }
        guard let data = object["data"] else {
            throw GuestModeError(.invalidJson, "'data' is missing: the record as a JSON object")
        }
        guard case .object = data else {
            throw GuestModeError(
                .recordNotObject, "'data' is \(data.kindDescription), not a JSON object")
        }
        try TextRule.check(["the user id": user, "the record key": key])
        return BulkRecord(user: user, collection: collection, key: key, data: try canonicalJSON(data.canonicalText))
    }
}

/// The decisions of one bulk load inside its transaction: each record is
/// decided as `putRecord` decides it (the tier's cap counted once per user
/// and collection, only where a cap applies), `onConflict` says what an
/// existing key gets, and last-seen and the backup queue move once per user
/// at the end. A key that already holds the very data given is left as it is
/// (`unchanged`, under every policy: a retried load answers as the first
/// did); a key an earlier record of the load named is `keyReused` when the
/// data differs. The load keeps, per key it named, the first line and a
/// SHA-256 of its data (about 100 bytes a record).
private final class BulkRecordWriter {
    private struct Pair: Hashable {
        var user: String
        var collection: String
    }

    let profile: Profile
    let now: Date
    let onConflict: RecordConflictPolicy
    let transaction: any StoreTransaction
    private var tiers: [String: TierLevel] = [:]
    /// Records held per capped user and collection, counted once each.
    private var used: [Pair: Int] = [:]
    /// Every key the load named: the first line that named it and the digest of its data.
    private var named: [String: (line: Int, data: SHA256.Digest)] = [:]
    /// Users the load stored a record for.
    private var written: Set<String> = []

    init(profile: Profile, now: Date, onConflict: RecordConflictPolicy, transaction: any StoreTransaction) {
        self.profile = profile
        self.now = now
        self.onConflict = onConflict
        self.transaction = transaction
    }

    /// Throws `user_not_found` for a missing user.
    func put(_ record: BulkRecord) throws -> BulkPutOutcome {
        let level: TierLevel
        if let known = tiers[record.user] {
            level = known
        } else {
            let user = try transaction.requireUser(record.user, locking: true)
            level = try transaction.tier(of: user, profile: profile, now: now)
            tiers[record.user] = level
        }
        // No text of a record holds U+0000 (TextRule), so the joined key is unambiguous.
        let place = "\(record.user)\u{0}\(record.collection)\u{0}\(record.key)"
        let digest = SHA256.hash(data: Data(record.data.utf8))
        if let first = named[place] {
            return first.data == digest ? .unchanged : .keyReused(firstLine: first.line)
        }
        named[place] = (record.line, digest)
        let stored = try transaction.record(owner: record.user, collection: record.collection, key: record.key)
        if stored?.data == record.data { return .unchanged }
        let isReplacement = stored != nil
        if isReplacement {
            switch onConflict {
            case .fail: return .exists
            case .skip: return .skipped
            case .replace: break
            }
        } else if profile.tier(level).cap(for: record.collection) != nil {
            let pair = Pair(user: record.user, collection: record.collection)
            let held = try used[pair] ?? transaction.countRecords(owner: record.user, collection: record.collection)
            let limit = profile.collectionLimit(record.collection, tier: level, used: held)
            guard limit.admits(isReplacement: false) else { return .refused(limit) }
            used[pair] = held + 1
        }
        try transaction.upsertRecord(
            owner: record.user, collection: record.collection, key: record.key, data: record.data, at: now)
        written.insert(record.user)
        return isReplacement ? .replaced : .added
    }

    /// Users in a fixed order, so concurrent loads take their locks alike;
    /// only those the load wrote for: a retried load that finds every record
    /// unchanged writes nothing at all.
    func finish() throws {
        for user in written.sorted() {
            try transaction.noteActivity(of: user, profile: profile, now: now)
        }
    }
}
