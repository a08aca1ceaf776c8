import Foundation
import GuestModeKit

/// Steps every area's transactions share: finding and locking users, moving
/// last-seen, queueing backups, the tier in force. Each takes the connection
/// of the transaction it runs in.
extension PostgresStore {
    func insert(_ user: User, _ connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO users (id, device, state, prompt_state, created_at, last_seen_at, linked_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """,
            [
                PostgresValue(user.id), user.device.map { PostgresValue($0) }, PostgresValue(user.state.rawValue),
                PostgresValue(user.promptState), PostgresValue(user.createdAt), PostgresValue(user.lastSeenAt),
                user.linkedAt.map { PostgresValue($0) },
            ])
    }

    func user(from row: PostgresRow) throws -> User {
        User(
            id: try row.string("id"), device: try row.optionalString("device"),
            state: try row.decode("state", as: UserState.self), promptState: try row.string("prompt_state"),
            createdAt: try row.date("created_at"), lastSeenAt: try row.date("last_seen_at"),
            linkedAt: try row.optionalDate("linked_at"))
    }

    /// The user, or nil. With `locking`, the row stays locked until the
    /// transaction ends: every decision about one user (a cap, a meter, a
    /// key, a link) is taken by one writer at a time across machines.
    func findUser(_ id: String, locking: Bool = false, _ connection: PostgresConnection) throws -> User? {
        try connection.execute("SELECT * FROM users WHERE id = $1\(locking ? " FOR UPDATE" : "")", [PostgresValue(id)])
            .first.map(user(from:))
    }

    func identities(of userID: String, _ connection: PostgresConnection) throws -> [Identity] {
        try connection.execute(
            "SELECT * FROM identities WHERE user_id = $1 ORDER BY linked_at, provider", [PostgresValue(userID)]
        ).map(identity(from:))
    }

    func identity(from row: PostgresRow) throws -> Identity {
        Identity(
            provider: try row.string("provider"), subject: try row.string("subject"),
            email: try row.optionalString("email"), linkedAt: try row.date("linked_at"))
    }

    func counters(of userID: String, _ connection: PostgresConnection) throws -> [String: Int] {
        var counters: [String: Int] = [:]
        for row in try connection.execute(
            "SELECT action, total FROM counters WHERE user_id = $1", [PostgresValue(userID)])
        {
            counters[try row.string("action")] = try row.int("total")
        }
        return counters
    }

    /// Activity moves last-seen forward only, so replaying old events never
    /// makes a user look less recent.
    func touch(_ userID: String, at time: Date, _ connection: PostgresConnection) throws {
        try connection.execute(
            "UPDATE users SET last_seen_at = greatest(last_seen_at, $1) WHERE id = $2",
            [PostgresValue(time), PostgresValue(userID)])
    }

    /// Rows that reference the user cascade; records and the outbox are keyed
    /// by owner without a foreign key (records may belong to the guest owner).
    func deleteEverything(of userID: String, _ connection: PostgresConnection) throws {
        for table in [
            "records WHERE owner_id", "conflict_archive WHERE owner_id", "outbox WHERE user_id",
            "user_flags WHERE user_id", "users WHERE id",
        ] {
            try connection.execute("DELETE FROM \(table) = $1", [PostgresValue(userID)])
        }
    }

    /// Every grant the user ever held, oldest first.
    func planGrants(of userID: String, _ connection: PostgresConnection) throws -> [PlanGrant] {
        try connection.execute(Self.planGrantsSQL, [PostgresValue(userID)]).map(Self.planGrant)
    }

    /// The user's (`$1`) plan grants, oldest first.
    static let planGrantsSQL = "SELECT * FROM plans WHERE user_id = $1 ORDER BY granted_at, id"

    /// The statement reading the grants that may be in force at `now` (`PlanRows.planGrants(of:mayBeInForceAt:)`),
    /// or every grant the user ever held when the user has grants of `meter`. A grant is left out only by a
    /// time in `Timestamp`'s fixed form, whose text order (byte order, `"C"`) is its time order; a trial's end
    /// decides before the term's, as in `PlanGrant.status`. `IS NOT TRUE`, since a missing time makes its
    /// comparison NULL, which must keep the grant.
    static func planGrantsMayBeInForce(
        of userID: String, at now: Date, orEveryOneWithGrantsOf meter: String? = nil
    ) -> (sql: String, parameters: [PostgresValue?]) {
        guard let meter else { return (planGrantsMayBeInForceSQL, [PostgresValue(userID), PostgresValue(now)]) }
        return (
            planGrantsMayBeInForceOrWithGrantsSQL, [PostgresValue(userID), PostgresValue(now), PostgresValue(meter)]
        )
    }

    private static let planGrantsSelect = "SELECT plan, granted_at, trial_ends_at, ends_at, revoked_at FROM plans"
    private static let planGrantsOrder = "ORDER BY granted_at, id"

    private static let planGrantsMayBeInForceSQL =
        "\(planGrantsSelect) WHERE user_id = $1 AND \(mayBeInForce) \(planGrantsOrder)"

    private static let planGrantsMayBeInForceOrWithGrantsSQL = """
        \(planGrantsSelect)
        WHERE user_id = $1
          AND (EXISTS (SELECT 1 FROM meter_grants WHERE user_id = $1 AND meter = $3) OR \(mayBeInForce))
        \(planGrantsOrder)
        """

    /// Whether a grant may be in force at `$2`.
    private static let mayBeInForce = """
        ((revoked_at COLLATE "C" <= $2 AND revoked_at ~ '\(timestampPattern)') IS NOT TRUE
          AND (coalesce(trial_ends_at, ends_at) COLLATE "C" <= $2
               AND coalesce(trial_ends_at, ends_at) ~ '\(timestampPattern)') IS NOT TRUE)
        """

    /// A time as `Timestamp.format` writes it, as a regular expression.
    private static let timestampPattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$"
}
