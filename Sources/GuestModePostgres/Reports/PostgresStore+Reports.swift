import Foundation
import GuestModeKit

/// Report counts on PostgreSQL, with the results of SQLiteStore's. Rows
/// come back in byte order of their text keys (`COLLATE "C"`), the order
/// SQLite's GROUP BY gives, whatever the database's collation.
extension PostgresStore: ReportStore {
    public func funnelCounts(in period: ReportPeriod) throws -> FunnelCounts {
        try read { connection in
            let (filter, parameters) = ReportFilter.clause("created_at", period)
            // Hours to link from the stored ISO times; the session's time zone
            // is UTC (PostgresConnection), and the times carry their own 'Z'.
            // percentile_cont(0.5) is the middle value, or the mean of the two
            // middle values, as SQLite's median query computes it.
            guard
                let row = try connection.execute(
                    """
                    WITH cohort AS (
                        SELECT id, state, created_at, linked_at FROM users WHERE \(filter)
                    ), linked AS (
                        SELECT extract(epoch FROM linked_at::timestamptz - created_at::timestamptz)::double precision / 3600
                            AS hours
                        FROM cohort WHERE state = 'linked'
                    )
                    SELECT (SELECT count(*) FROM cohort) AS guests,
                           (SELECT count(*) FROM cohort
                            WHERE EXISTS (SELECT 1 FROM prompt_outcomes o WHERE o.user_id = cohort.id)) AS prompted,
                           (SELECT count(*) FROM linked) AS linked,
                           (SELECT avg(hours) FROM linked) AS average_hours,
                           (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY hours) FROM linked) AS median_hours
                    """,
                    parameters
                ).first
            else { throw GuestModeError(.internalFailure, code: .internalFailure, "the funnel query returned no row") }
            let linked = try row.int("linked")
            let average = try row.optionalString("average_hours") == nil ? nil : try row.double("average_hours")
            let median = try row.optionalString("median_hours") == nil ? nil : try row.double("median_hours")
            return FunnelCounts(
                guests: try row.int("guests"), prompted: try row.int("prompted"), linked: linked,
                averageHoursToLink: average, medianHoursToLink: linked == 0 ? nil : median)
        }
    }

    public func promptOutcomeCounts(in period: ReportPeriod) throws -> [PromptContextReport] {
        try read { connection in
            let (filter, parameters) = ReportFilter.clause("at", period)
            return try connection.execute(
                """
                SELECT context,
                       count(*) FILTER (WHERE outcome = 'shown') AS shown,
                       count(*) FILTER (WHERE outcome = 'dismissed') AS dismissed,
                       count(*) FILTER (WHERE outcome = 'later') AS later,
                       count(*) FILTER (WHERE outcome = 'never') AS never,
                       count(*) FILTER (WHERE outcome = 'completed') AS completed
                FROM prompt_outcomes WHERE \(filter)
                GROUP BY context
                ORDER BY context COLLATE "C"
                """,
                parameters
            ).map { row in
                PromptContextReport(
                    context: try row.string("context"), shown: try row.int("shown"),
                    dismissed: try row.int("dismissed"),
                    later: try row.int("later"), never: try row.int("never"), completed: try row.int("completed"))
            }
        }
    }

    public func variantConversionCounts(in period: ReportPeriod) throws -> [VariantCounts] {
        try read { connection in
            let (filter, parameters) = ReportFilter.clause("a.assigned_at", period)
            return try connection.execute(
                """
                SELECT a.experiment, a.variant, count(*) AS users,
                       count(*) FILTER (WHERE u.state = 'linked' OR u.prompt_state = 'authenticated') AS conversions
                FROM experiment_assignments a JOIN users u ON u.id = a.user_id
                WHERE \(filter)
                GROUP BY a.experiment, a.variant
                ORDER BY a.experiment COLLATE "C", a.variant COLLATE "C"
                """,
                parameters
            ).map { row in
                VariantCounts(
                    experiment: try row.string("experiment"), variant: try row.string("variant"),
                    users: try row.int("users"), conversions: try row.int("conversions"))
            }
        }
    }

    /// The amount is added up exactly in millionths, as the meters themselves
    /// are, so a report never shows 59.99999999999999.
    public func meterUsageCounts(of meters: [String], in period: ReportPeriod) throws -> [String: MeterUsageCounts] {
        try read { connection in
            let (usageFilter, usageParameters) = ReportFilter.clause("at", period, after: 1)
            let (warningFilter, warningParameters) = ReportFilter.clause("fired_at", period, after: 1)
            var counts: [String: MeterUsageCounts] = [:]
            for meter in meters {
                guard
                    let row = try connection.execute(
                        // Added up as SQLiteStore does, units and millionths apart, so the
                        // sum never leaves bigint.
                        """
                        SELECT count(DISTINCT user_id) AS users, count(*) AS uses,
                            coalesce(sum(m / 1000000), 0) AS units, coalesce(sum(m % 1000000), 0) AS millionths
                        FROM (
                            SELECT user_id, least(greatest(round(amount * 1000000), 0), \(MeterAmount.largestRequest.millionths))::bigint AS m
                            FROM meter_usage WHERE meter = $1 AND \(usageFilter)
                        ) uses
                        """,
                        [PostgresValue(meter)] + usageParameters
                    ).first
                else {
                    throw GuestModeError(.internalFailure, code: .internalFailure, "the usage query returned no row")
                }
                let warned =
                    try connection.execute(
                        "SELECT count(DISTINCT user_id) AS n FROM meter_warnings WHERE meter = $1 AND \(warningFilter)",
                        [PostgresValue(meter)] + warningParameters
                    ).first?.int("n") ?? 0
                counts[meter] = MeterUsageCounts(
                    users: try row.int("users"), uses: try row.int("uses"),
                    amount: MeterAmount.summed(units: try row.int64("units"), millionths: try row.int64("millionths")),
                    warnedUsers: warned)
            }
            return counts
        }
    }

    /// Replays normally run on an in-memory SQLite store; on PostgreSQL the
    /// whole replay is one write transaction all the same, rolled back when
    /// `body` throws. PostgresStore.write reruns `body` after a deadlock or
    /// serialization failure, which would repeat the replay's callbacks; a
    /// replay's scratch store has no other writer, so at READ COMMITTED
    /// neither can happen there.
    public func withReplayTransaction<T>(_ body: (any ReplayTransaction) throws -> T) throws -> T {
        try write { connection in try body(PostgresReplayTransaction(store: self, connection: connection)) }
    }
}

/// `column >= $n AND column < $n+1` for the bounds that are set; times are
/// fixed-width ISO text, so text comparison is time comparison.
private enum ReportFilter {
    static func clause(_ column: String, _ period: ReportPeriod, after used: Int = 0) -> (String, [PostgresValue?]) {
        var parts = ["true"]
        var parameters: [PostgresValue?] = []
        if let since = period.since {
            parameters.append(PostgresValue(since))
            parts.append("\(column) >= $\(used + parameters.count)")
        }
        if let until = period.until {
            parameters.append(PostgresValue(until))
            parts.append("\(column) < $\(used + parameters.count)")
        }
        return (parts.joined(separator: " AND "), parameters)
    }
}

/// A replay's steps inside its one write transaction: the same steps the
/// experiment and prompt stores run, so a replay decides as live calls do.
private struct PostgresReplayTransaction: ReplayTransaction {
    let store: PostgresStore
    let connection: PostgresConnection

    func insertUser(_ user: User) throws {
        try store.insert(user, connection)
    }

    func apply(_ event: TrackedEvent, profile: Profile, now: Date) throws -> TrackResult {
        try store.apply(event, profile: profile, now: now, connection)
    }

    func storedAssignment(userID: String, experiment: String) throws -> StoredAssignment? {
        try PostgresTransaction(store: store, connection: connection).assignment(of: userID, experiment: experiment)
    }

    func storeAssignment(userID: String, experiment: String, variant: String, at: Date) throws -> StoredAssignment {
        let transaction = PostgresTransaction(store: store, connection: connection)
        let added = try transaction.addAssignment(of: userID, experiment: experiment, variant: variant, at: at)
        guard var stored = try transaction.assignment(of: userID, experiment: experiment) else {
            throw GuestModeError(
                .internalFailure, code: .assignmentLost, "the assignment of \(userID) to \(experiment) was not stored")
        }
        stored.isNew = added
        return stored
    }

    var rows: any StoreTransaction { PostgresTransaction(store: store, connection: connection) }
}
