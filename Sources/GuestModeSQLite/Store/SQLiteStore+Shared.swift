import Foundation
internal import GRDB
import GuestModeKit

/// Steps every area's transactions share: finding users, moving last-seen,
/// queueing backups, the tier in force.
extension SQLiteStore {
    func insert(_ user: User, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO users (id, device, state, prompt_state, created_at, last_seen_at, linked_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                user.id, user.device, user.state.rawValue, user.promptState, Timestamp.format(user.createdAt),
                Timestamp.format(user.lastSeenAt), user.linkedAt.map(Timestamp.format),
            ])
    }

    func findUser(_ id: String, _ db: Database) throws -> User? {
        try readOne(db.statement("SELECT * FROM users WHERE id = ?"), arguments: [id], Self.user)
    }

    /// A row of `SELECT * FROM users` as the engine's user.
    static func user(from row: any StoredRow) throws -> User {
        User(
            id: try row.decode(forColumn: "id"), device: try row.decode(forColumn: "device"),
            state: try row.decode("state", as: UserState.self),
            promptState: try row.decode(forColumn: "prompt_state"),
            createdAt: try row.time("created_at"),
            lastSeenAt: try row.time("last_seen_at"),
            linkedAt: try row.optionalTime("linked_at"))
    }

    func identities(of userID: String, _ db: Database) throws -> [Identity] {
        try Row.fetchAll(
            db.statement("SELECT * FROM identities WHERE user_id = ? ORDER BY linked_at, provider"),
            arguments: [userID]
        ).map { row in
            Identity(
                provider: try row.decode(forColumn: "provider"), subject: try row.decode(forColumn: "subject"),
                email: try row.decode(forColumn: "email"),
                linkedAt: try row.time("linked_at"))
        }
    }

    func counters(of userID: String, _ db: Database) throws -> [String: Int] {
        var counters: [String: Int] = [:]
        for row in try Row.fetchAll(
            db.statement("SELECT action, total FROM counters WHERE user_id = ?"), arguments: [userID])
        {
            counters[try row.decode(forColumn: "action")] = try row.decode(forColumn: "total")
        }
        return counters
    }

    /// Activity moves last-seen forward only, so replaying old events never
    /// makes a user look less recent.
    func touch(_ userID: String, at time: Date, _ db: Database) throws {
        // Only a later time writes: an earlier one leaves the row and its index entry alone.
        let at = Timestamp.format(time)
        try db.statement("UPDATE users SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?")
            .execute(arguments: [at, userID, at])
    }

    /// Rows that reference the user cascade; records and the outbox are keyed
    /// by owner without a foreign key (records may belong to the guest owner).
    func deleteEverything(of userID: String, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM records WHERE owner_id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM conflict_archive WHERE owner_id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM outbox WHERE user_id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM user_flags WHERE user_id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM users WHERE id = ?", arguments: [userID])
    }

    /// Every grant the user ever held, oldest first.
    func planGrants(of userID: String, _ db: Database) throws -> [PlanGrant] {
        try readAll(db.statement(Self.planGrantsSQL), arguments: [userID], Self.planGrant)
    }

    /// The grants that may be in force at `now` (`PlanRows.planGrants(of:mayBeInForceAt:)`). A grant is passed
    /// over when the time that ends it is at or before `now` in text order, which is time order for the times
    /// guestmode writes, and is a date and time SQLite reads; any other value keeps the grant, whose strict
    /// decoding names it. A trial's end decides before the term's, as in `PlanGrant.status`; `IS NOT TRUE`
    /// since a missing time makes its comparison NULL, which keeps the grant. Decoding every grant cost 11 k
    /// instructions one, stepping past it in Swift 4.8 k, a GLOB of the fixed form 2.6 k for the GLOB alone
    /// (bench/results.md, "Serving, round 14").
    ///
    /// Put in order here, as `ORDER BY granted_at, id` orders them: the
    /// plans' index gives a user's rows in another order, and SQLite's sorter
    /// for the few grants in force was 4–9 k instructions of every served
    /// read that reads a limit or a meter (bench/results.md, "Serving, round 15").
    func planGrants(of userID: String, mayBeInForceAt now: Date, _ db: Database) throws -> [PlanGrant] {
        try grantsInForce(of: userID, at: Timestamp.format(now), db).grants
    }

    /// `planGrants(of:mayBeInForceAt:)` at the time whose text is `time`, with the times it answers for too.
    func grantsInForce(of userID: String, at time: String, _ db: Database) throws -> GrantsInForce {
        let grants = try readAll(db.statement(Self.planGrantsMayBeInForceSQL), arguments: [userID, time]) { row in
            // The grant first: a value it cannot read is named as it names it.
            let grant = try Self.planGrant(row)
            let grantedAt: String = try row.decode(forColumn: "granted_at")
            let id: Int64 = try row.decode(forColumn: "id")
            let bounds: [String?] = [
                try row.decode(forColumn: "revoked_bound"), try row.decode(forColumn: "end_bound"),
            ]
            return (grant: grant, grantedAt: grantedAt, id: id, bounds: bounds.compactMap { $0 })
        }
        // A grant passed over stays passed over later; one kept is passed over from the first of its times.
        let until = grants.flatMap(\.bounds).min { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        guard grants.count > 1 else { return GrantsInForce(grants: grants.map(\.grant), from: time, until: until) }
        // As SQLite compares text: byte by byte.
        let ordered = grants.sorted { left, right in
            left.grantedAt == right.grantedAt
                ? left.id < right.id : left.grantedAt.utf8.lexicographicallyPrecedes(right.grantedAt.utf8)
        }
        return GrantsInForce(grants: ordered.map(\.grant), from: time, until: until)
    }

    private static let planGrantsMayBeInForceSQL = SQLText(
        """
        SELECT id, plan, granted_at, trial_ends_at, ends_at, revoked_at,
            CASE WHEN \(isTime("revoked_at")) THEN revoked_at END AS revoked_bound,
            CASE WHEN \(isTime("coalesce(trial_ends_at, ends_at)")) THEN coalesce(trial_ends_at, ends_at) END AS end_bound
        FROM plans
        WHERE user_id = ?1
          AND (revoked_at <= ?2 AND \(isTime("revoked_at"))) IS NOT TRUE
          AND (coalesce(trial_ends_at, ends_at) <= ?2 AND \(isTime("coalesce(trial_ends_at, ends_at)"))) IS NOT TRUE
        """)

    /// Whether `value` is a date and time SQLite reads: its `T` where `Timestamp.format` writes it, since
    /// `julianday` also reads a bare number as a day.
    private static func isTime(_ value: String) -> String {
        "substr(\(value), 11, 1) = 'T' AND julianday(\(value)) IS NOT NULL"
    }

    private static let planGrantsSQL: StaticString = """
        SELECT plan, granted_at, trial_ends_at, ends_at, revoked_at FROM plans WHERE user_id = ?
        ORDER BY granted_at, id
        """

    private static func planGrant(_ row: any StoredRow) throws -> PlanGrant {
        PlanGrant(
            plan: try row.decode(forColumn: "plan"),
            grantedAt: try row.time("granted_at"),
            trialEndsAt: try row.optionalTime("trial_ends_at"),
            endsAt: try row.optionalTime("ends_at"),
            revokedAt: try row.optionalTime("revoked_at"))
    }
}

/// The plan grants that may be in force at the time whose text is `from` (`SQLiteStore.grantsInForce`), and the
/// span of times they are the answer for: from `from` (a grant passed over then is passed over at any later time)
/// up to `until`, the first time that passes over one of them (text order, as the query compares times); nil when
/// none of them ends.
struct GrantsInForce: Sendable {
    var grants: [PlanGrant]
    var from: String
    var until: String?

    /// Whether the grants that may be in force at the time whose text is `time` are these.
    func answers(at time: String) -> Bool {
        guard !time.utf8.lexicographicallyPrecedes(from.utf8) else { return false }
        guard let until else { return true }
        return time.utf8.lexicographicallyPrecedes(until.utf8)
    }
}
