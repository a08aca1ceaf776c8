import Foundation
import GuestModeKit

extension PostgresTransaction {
    func cohortCounts(createdIn period: ReportPeriod) throws -> CohortCounts {
        let (filter, parameters) = ReportFilter.clause("created_at", period, after: 1)
        guard
            let row = try connection.execute(
                """
                SELECT count(*) AS users,
                       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM prompt_outcomes o WHERE o.user_id = u.id)) AS prompted,
                       count(*) FILTER (WHERE state = $1) AS linked
                FROM users u WHERE \(filter)
                """,
                [PostgresValue(UserState.linked.rawValue)] + parameters
            ).first
        else { throw GuestModeError(.internalFailure, "the cohort query returned no row") }
        return CohortCounts(
            users: try row.int("users"), prompted: try row.int("prompted"), linked: try row.int("linked"))
    }

    /// Read through a cursor, a thousand rows at a time, so a cohort of
    /// millions never sits in memory whole.
    func forEachLink(
        ofUsersCreatedIn period: ReportPeriod, _ body: (_ createdAt: Date, _ linkedAt: Date) throws -> Void
    ) throws {
        let (filter, parameters) = ReportFilter.clause("created_at", period, after: 1)
        try connection.execute(
            """
            DECLARE guestmode_links NO SCROLL CURSOR FOR
            SELECT created_at, linked_at FROM users WHERE state = $1 AND linked_at IS NOT NULL AND \(filter)
            """,
            [PostgresValue(UserState.linked.rawValue)] + parameters)
        defer { _ = try? connection.execute("CLOSE guestmode_links") }
        while true {
            let batch = try connection.execute("FETCH 1000 FROM guestmode_links")
            if batch.count == 0 { break }
            for row in batch { try body(try row.date("created_at"), try row.date("linked_at")) }
        }
    }

    func promptOutcomeCounts(in period: ReportPeriod) throws -> [PromptOutcomeCount] {
        let (filter, parameters) = ReportFilter.clause("at", period)
        return try connection.execute(
            "SELECT context, outcome, count(*) AS n FROM prompt_outcomes WHERE \(filter) GROUP BY context, outcome",
            parameters
        ).map { row in
            PromptOutcomeCount(
                context: try row.string("context"), outcome: try row.string("outcome"), count: try row.int("n"))
        }
    }

    func assignmentCounts(in period: ReportPeriod) throws -> [AssignmentCount] {
        let (filter, parameters) = ReportFilter.clause("a.assigned_at", period)
        return try connection.execute(
            """
            SELECT a.experiment, a.variant, u.state, u.prompt_state, count(*) AS users
            FROM experiment_assignments a JOIN users u ON u.id = a.user_id
            WHERE \(filter)
            GROUP BY a.experiment, a.variant, u.state, u.prompt_state
            """,
            parameters
        ).map { row in
            AssignmentCount(
                experiment: try row.string("experiment"), variant: try row.string("variant"),
                userState: try row.decode("state", as: UserState.self), promptState: try row.string("prompt_state"),
                users: try row.int("users"))
        }
    }

    /// The amount is added up exactly in millionths, as the meters themselves
    /// are, so a report never shows 59.99999999999999.
    func meterUsageCounts(of meter: String, in period: ReportPeriod) throws -> MeterUsageCounts {
        let (usageFilter, usageParameters) = ReportFilter.clause("at", period, after: 1)
        let (warningFilter, warningParameters) = ReportFilter.clause("fired_at", period, after: 1)
        guard
            let row = try connection.execute(
                // Added up as SQLite does, units and millionths apart, so the
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
        else { throw GuestModeError(.internalFailure, "the usage query returned no row") }
        let warned =
            try connection.execute(
                "SELECT count(DISTINCT user_id) AS n FROM meter_warnings WHERE meter = $1 AND \(warningFilter)",
                [PostgresValue(meter)] + warningParameters
            ).first?.int("n") ?? 0
        let (grantFilter, grantParameters) = ReportFilter.clause("granted_at", period, after: 1)
        guard
            let grants = try connection.execute(
                """
                SELECT count(*) AS grants,
                    coalesce(sum(m / 1000000), 0) AS units, coalesce(sum(m % 1000000), 0) AS millionths
                FROM (
                    SELECT least(greatest(round(amount * 1000000), 0), \(MeterAmount.largestRequest.millionths))::bigint AS m
                    FROM meter_grants WHERE meter = $1 AND \(grantFilter)
                ) grants
                """,
                [PostgresValue(meter)] + grantParameters
            ).first
        else { throw GuestModeError(.internalFailure, "the grants query returned no row") }
        return MeterUsageCounts(
            users: try row.int("users"), uses: try row.int("uses"),
            amount: MeterAmount.summed(units: try row.int64("units"), millionths: try row.int64("millionths")),
            warnedUsers: warned, grants: try grants.int("grants"),
            granted: MeterAmount.summed(units: try grants.int64("units"), millionths: try grants.int64("millionths")))
    }

    func journalAttemptCounts(startedIn period: ReportPeriod) throws -> [JournalAttemptCount] {
        let (filter, parameters) = ReportFilter.clause("j.started_at", period)
        return try connection.execute(
            """
            SELECT kind, status, resumes, failures, count(*) AS journals FROM (
                SELECT j.kind, j.status, j.resumes,
                    coalesce((SELECT sum(s.failures) FROM migration_steps s WHERE s.journal_id = j.id), 0)::bigint
                        AS failures
                FROM migration_journals j WHERE \(filter)
            ) journals GROUP BY kind, status, resumes, failures
            """,
            parameters
        ).map { row in
            JournalAttemptCount(
                kind: try row.decode("kind", as: JournalKind.self), status: try row.string("status"),
                resumes: try row.int("resumes"),
                failures: try row.int("failures"), journals: try row.int("journals"))
        }
    }

    func stepFailureCounts(startedIn period: ReportPeriod) throws -> [StepFailureCount] {
        let (filter, parameters) = ReportFilter.clause("j.started_at", period)
        return try connection.execute(
            """
            SELECT j.kind, s.position, s.name, sum(s.failures)::bigint AS failures
            FROM migration_steps s JOIN migration_journals j ON j.id = s.journal_id
            WHERE s.failures > 0 AND \(filter)
            GROUP BY j.kind, s.position, s.name
            """,
            parameters
        ).map { row in
            StepFailureCount(
                kind: try row.decode("kind", as: JournalKind.self), position: try row.int("position"),
                step: try row.string("name"),
                failures: try row.int("failures"))
        }
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
