import Foundation

/// How the engine reaches a backend: it opens a transaction and, inside it,
/// drives primitive row operations that decide nothing. Every rule (a cap,
/// a meter gate, an identity conflict, a merge) is written once, in the
/// engine, over these operations; a backend holds only SQL, row decoding,
/// pooling and retries.
///
/// ```swift
/// let limit = try store.write(durable: false) { transaction in
///     let user = try transaction.requireUser(id, locking: true)
///     return try transaction.countRecords(owner: user.id, collection: "notes")
/// }
/// ```
package protocol TransactionalStore: Sendable {
    /// Runs `body` in one write transaction and commits it when `body`
    /// returns. A throw rolls everything back. A backend may run `body` again
    /// from the start after a serialization failure, so `body` must have no
    /// effect outside the transaction. `durable` asks for a commit that
    /// survives a power cut (migrations, merges, imports), not only a crash.
    func write<T>(durable: Bool, _ body: (any StoreTransaction) throws -> T) throws -> T

    /// Runs `body` as `write(durable:_:)` does and then rolls everything
    /// back: a dry run sees exactly what the real run would.
    func rehearse<T>(_ body: (any StoreTransaction) throws -> T) throws -> T

    /// Runs `body` in one read-only transaction, so every value it reads
    /// comes from the same snapshot.
    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
}

extension TransactionalStore {
    /// A write whose commit survives a crash of the process.
    package func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try write(durable: false, body)
    }
}

/// The primitive operations of one transaction, one protocol per area. Each
/// operation reads or writes rows and reports what it found; none applies a
/// profile or a policy. `locking:` asks to hold the row until the end of the
/// transaction (PostgreSQL's `FOR UPDATE`; SQLite's single writer already
/// holds everything), and backends take row locks in a fixed order.
package protocol StoreTransaction:
    UserRows, IdentityRows, EventRows, RecordRows, MeterRows, PlanRows, PromptRows, ExperimentRows, OutboxRows,
    MigrationRows, ReportRows, ProfileRows, ServerRows, WebhookRows, StorePurchaseRows, TransactionNesting
{
    /// What judging one meter at `now` reads of one user: the user's grants
    /// of `meter` (`meterGrants`); the plan grants that may be in force then
    /// (`planGrants(of:mayBeInForceAt:)`), or every plan grant the user ever
    /// held (`planGrants(of:)`) when those grants are not empty, since their
    /// draws depend on the tier at each use; and the kept usage totals of
    /// `meter` from `start` on (`forEachMeterUsageTotal`, in the buckets
    /// `meterUsage` adds up). A backend may make the reads together
    /// (PostgreSQL: in one round trip, the grants first, so that the plans
    /// read after them see every grant they saw); the default makes each.
    func meterFacts(of userID: String, meter: Meter, since start: Date?, at now: Date) throws -> MeterFacts

    /// The user (`user(_:locking:)`) and, for a user it finds, its
    /// `meterFacts`: nil when there is no such user. The facts need nothing
    /// of the user's row, so a backend may read both together (PostgreSQL:
    /// in one round trip, the user's row, locked with `locking`, first); the
    /// default reads the user, then the facts.
    func userAndMeterFacts(
        of userID: String, locking: Bool, meter: Meter, since start: Date?, at now: Date
    ) throws -> (user: User, facts: MeterFacts)?

    /// What a prompt decision reads of one user beside its facts
    /// (`promptFacts`): when `collections` or `meters` is not empty, the
    /// plan grants that may be in force at `now`
    /// (`planGrants(of:mayBeInForceAt:)`), the user's records in
    /// each of `collections` (`countRecords`), and for each meter the kept
    /// totals from its `since` on (added up as `meterUsage` adds them) and
    /// its grants (`meterGrants`); the user's flags that start with
    /// `flagPrefix` (`userFlags`); and when `action` is given, the time of
    /// the user's latest event of it (`lastEventTime`). The reads need
    /// nothing of each other, so a backend may make them together
    /// (PostgreSQL: in one round trip); the default makes each.
    func promptInputs(
        of userID: String, collections: [String], meters: [(meter: Meter, since: Date?)], flagPrefix: String,
        lastEventOf action: String?, at now: Date
    ) throws -> PromptInputs

    /// `promptFacts(of:reading:)` and, for a user it finds, `promptInputs`
    /// with the rest of the arguments: nil when there is no such user. The
    /// inputs need nothing of the facts, so a backend may read both together
    /// (PostgreSQL: in one round trip, the inputs' answers dropped when the
    /// user is not found); the default reads the facts, then the inputs.
    func promptFactsAndInputs(
        of userID: String, reading history: PromptHistoryRead, collections: [String],
        meters: [(meter: Meter, since: Date?)], flagPrefix: String, lastEventOf action: String?, at now: Date
    ) throws -> (facts: PromptFacts, user: User, inputs: PromptInputs)?
}

extension StoreTransaction {
    package func meterFacts(of userID: String, meter: Meter, since start: Date?, at now: Date) throws -> MeterFacts {
        let grants = try meterGrants(of: userID, meter: meter.name)
        return MeterFacts(
            plans: try grants.isEmpty ? planGrants(of: userID, mayBeInForceAt: now) : planGrants(of: userID),
            used: try meterUsage(of: userID, meter: meter, since: start), grants: grants)
    }

    package func userAndMeterFacts(
        of userID: String, locking: Bool, meter: Meter, since start: Date?, at now: Date
    ) throws -> (user: User, facts: MeterFacts)? {
        guard let user = try user(userID, locking: locking) else { return nil }
        return (user, try meterFacts(of: userID, meter: meter, since: start, at: now))
    }
}

extension StoreTransaction {
    package func promptFactsAndInputs(
        of userID: String, reading history: PromptHistoryRead, collections: [String],
        meters: [(meter: Meter, since: Date?)], flagPrefix: String, lastEventOf action: String?, at now: Date
    ) throws -> (facts: PromptFacts, user: User, inputs: PromptInputs)? {
        guard let found = try promptFacts(of: userID, reading: history) else { return nil }
        let inputs = try promptInputs(
            of: userID, collections: collections, meters: meters, flagPrefix: flagPrefix, lastEventOf: action, at: now)
        return (found.facts, found.user, inputs)
    }

    package func promptInputs(
        of userID: String, collections: [String], meters: [(meter: Meter, since: Date?)], flagPrefix: String,
        lastEventOf action: String?, at now: Date
    ) throws -> PromptInputs {
        var inputs = PromptInputs(
            plans: collections.isEmpty && meters.isEmpty ? [] : try planGrants(of: userID, mayBeInForceAt: now),
            flags: try userFlags(of: userID, prefix: flagPrefix),
            lastEventTime: try action.flatMap { try lastEventTime(of: userID, action: $0) })
        for collection in collections {
            inputs.recordCounts[collection] = try countRecords(owner: userID, collection: collection)
        }
        for (meter, since) in meters {
            inputs.meterUsage[meter.name] = try meterUsage(of: userID, meter: meter, since: since)
            inputs.meterGrants[meter.name] = try meterGrants(of: userID, meter: meter.name)
        }
        return inputs
    }
}

/// What a prompt decision reads of one user beside its facts (`StoreTransaction.promptInputs`).
package struct PromptInputs: Sendable, Equatable {
    /// The plan grants that may be in force then, oldest first; empty when no collection or meter was asked for.
    package var plans: [PlanGrant]
    /// How many records the user holds, by collection asked for.
    package var recordCounts: [String: Int] = [:]
    /// The usage of each meter asked for in its period, by meter.
    package var meterUsage: [String: MeterAmount] = [:]
    /// The user's grants of each meter asked for, oldest first, by meter.
    package var meterGrants: [String: [MeterGrantRow]] = [:]
    /// The user's flags with the prefix asked for, with when each was set.
    package var flags: [String: Date]
    /// The time of the user's latest event of the action asked for; nil when none was asked for or it has none.
    package var lastEventTime: Date?

    package init(plans: [PlanGrant], flags: [String: Date], lastEventTime: Date?) {
        self.plans = plans
        self.flags = flags
        self.lastEventTime = lastEventTime
    }
}

/// What a meter's decision reads of one user (`StoreTransaction.meterFacts`).
package struct MeterFacts: Sendable, Equatable {
    /// The plan grants that may be in force then, oldest first, or every plan grant the user ever held when
    /// `grants` is not empty.
    package var plans: [PlanGrant]
    /// The usage of the period, as `MeterRows.meterUsage` adds it up.
    package var used: MeterAmount
    /// The user's grants of the meter, oldest first.
    package var grants: [MeterGrantRow]

    package init(plans: [PlanGrant], used: MeterAmount, grants: [MeterGrantRow]) {
        self.plans = plans
        self.used = used
        self.grants = grants
    }
}

/// A transaction inside a transaction.
public protocol TransactionNesting {
    /// Runs `body` in a savepoint: when it throws, everything it wrote is
    /// undone and the transaction goes on as it was before `body`.
    func savepoint<T>(_ body: () throws -> T) throws -> T
}
