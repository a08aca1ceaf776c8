import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    func cohortCounts(createdIn period: ReportPeriod) throws -> CohortCounts {
        let (filter, arguments) = period.clause("created_at")
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*) AS users,
                           coalesce(sum(EXISTS (SELECT 1 FROM prompt_outcomes o WHERE o.user_id = u.id)), 0) AS prompted,
                           coalesce(sum(state = ?), 0) AS linked
                    FROM users u WHERE \(filter)
                    """,
                arguments: [UserState.linked.rawValue] + arguments)
        else { throw GuestModeError(.internalFailure, "the cohort query returned no row") }
        return CohortCounts(
            users: try row.decode(forColumn: "users"), prompted: try row.decode(forColumn: "prompted"),
            linked: try row.decode(forColumn: "linked"))
    }

    func forEachLink(
        ofUsersCreatedIn period: ReportPeriod, _ body: (_ createdAt: Date, _ linkedAt: Date) throws -> Void
    ) throws {
        let (filter, arguments) = period.clause("created_at")
        let rows = try Row.fetchCursor(
            db,
            sql:
                "SELECT created_at, linked_at FROM users WHERE state = ? AND linked_at IS NOT NULL AND \(filter)",
            arguments: [UserState.linked.rawValue] + arguments)
        while let row = try rows.next() { try body(try row.time("created_at"), try row.time("linked_at")) }
    }

    func promptOutcomeCounts(in period: ReportPeriod) throws -> [PromptOutcomeCount] {
        let (filter, arguments) = period.clause("at")
        return try Row.fetchAll(
            db,
            sql:
                "SELECT context, outcome, count(*) AS n FROM prompt_outcomes WHERE \(filter) GROUP BY context, outcome",
            arguments: arguments
        ).map { row in
            PromptOutcomeCount(
                context: try row.decode(forColumn: "context"), outcome: try row.decode(forColumn: "outcome"),
                count: try row.decode(forColumn: "n"))
        }
    }

    func assignmentCounts(in period: ReportPeriod) throws -> [AssignmentCount] {
        let (filter, arguments) = period.clause("a.assigned_at")
        return try Row.fetchAll(
            db,
            sql: """
                SELECT a.experiment, a.variant, u.state, u.prompt_state, count(*) AS users
                FROM experiment_assignments a JOIN users u ON u.id = a.user_id
                WHERE \(filter)
                GROUP BY a.experiment, a.variant, u.state, u.prompt_state
                """,
            arguments: arguments
        ).map { row in
            AssignmentCount(
                experiment: try row.decode(forColumn: "experiment"), variant: try row.decode(forColumn: "variant"),
                userState: try row.decode("state", as: UserState.self),
                promptState: try row.decode(forColumn: "prompt_state"), users: try row.decode(forColumn: "users"))
        }
    }

    func meterUsageCounts(of meter: String, in period: ReportPeriod) throws -> MeterUsageCounts {
        let (usageFilter, usageArguments) = period.clause("at")
        let (warningFilter, warningArguments) = period.clause("fired_at")
        guard
            let row = try Row.fetchOne(
                db,
                // SQLite's sum() fails on integer overflow: units and millionths are added apart,
                // each use clamped to the largest request, so neither sum can overflow.
                sql: """
                    SELECT count(DISTINCT user_id) AS users, count(*) AS uses,
                        coalesce(sum(m / 1000000), 0) AS units, coalesce(sum(m % 1000000), 0) AS millionths
                    FROM (
                        SELECT user_id, min(max(CAST(round(amount * 1000000) AS INTEGER), 0), \(MeterAmount.largestRequest.millionths)) AS m
                        FROM meter_usage WHERE meter = ? AND \(usageFilter)
                    )
                    """,
                arguments: [meter] + usageArguments)
        else { throw GuestModeError(.internalFailure, "the usage query returned no row") }
        let warned =
            try Int.fetchOne(
                db, sql: "SELECT count(DISTINCT user_id) FROM meter_warnings WHERE meter = ? AND \(warningFilter)",
                arguments: [meter] + warningArguments) ?? 0
        let (grantFilter, grantArguments) = period.clause("granted_at")
        guard
            let grants = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*) AS grants,
                        coalesce(sum(m / 1000000), 0) AS units, coalesce(sum(m % 1000000), 0) AS millionths
                    FROM (
                        SELECT min(max(CAST(round(amount * 1000000) AS INTEGER), 0), \(MeterAmount.largestRequest.millionths)) AS m
                        FROM meter_grants WHERE meter = ? AND \(grantFilter)
                    )
                    """,
                arguments: [meter] + grantArguments)
        else { throw GuestModeError(.internalFailure, "the grants query returned no row") }
        return MeterUsageCounts(
            users: try row.decode(forColumn: "users"), uses: try row.decode(forColumn: "uses"),
            amount: MeterAmount.summed(
                units: try row.decode(forColumn: "units"), millionths: try row.decode(forColumn: "millionths")),
            warnedUsers: warned, grants: try grants.decode(forColumn: "grants"),
            granted: MeterAmount.summed(
                units: try grants.decode(forColumn: "units"), millionths: try grants.decode(forColumn: "millionths")))
    }

    func journalAttemptCounts(startedIn period: ReportPeriod) throws -> [JournalAttemptCount] {
        let (filter, arguments) = period.clause("j.started_at")
        return try Row.fetchAll(
            db,
            sql: """
                SELECT kind, status, resumes, failures, count(*) AS journals FROM (
                    SELECT j.kind, j.status, j.resumes,
                        coalesce((SELECT sum(s.failures) FROM migration_steps s WHERE s.journal_id = j.id), 0) AS failures
                    FROM migration_journals j WHERE \(filter)
                ) GROUP BY kind, status, resumes, failures
                """,
            arguments: arguments
        ).map { row in
            JournalAttemptCount(
                kind: try row.decode("kind", as: JournalKind.self), status: try row.decode(forColumn: "status"),
                resumes: try row.decode(forColumn: "resumes"), failures: try row.decode(forColumn: "failures"),
                journals: try row.decode(forColumn: "journals"))
        }
    }

    func stepFailureCounts(startedIn period: ReportPeriod) throws -> [StepFailureCount] {
        let (filter, arguments) = period.clause("j.started_at")
        return try Row.fetchAll(
            db,
            sql: """
                SELECT j.kind, s.position, s.name, sum(s.failures) AS failures
                FROM migration_steps s JOIN migration_journals j ON j.id = s.journal_id
                WHERE s.failures > 0 AND \(filter)
                GROUP BY j.kind, s.position, s.name
                """,
            arguments: arguments
        ).map { row in
            StepFailureCount(
                kind: try row.decode("kind", as: JournalKind.self), position: try row.decode(forColumn: "position"),
                step: try row.decode(forColumn: "name"), failures: try row.decode(forColumn: "failures"))
        }
    }
}

extension ReportPeriod {
    /// `column >= ? AND column < ?` for the bounds that are set; times are
    /// fixed-width ISO text, so text comparison is time comparison.
    fileprivate func clause(_ column: String) -> (sql: String, arguments: StatementArguments) {
        var parts = ["1 = 1"]
        var arguments = StatementArguments()
        if let since {
            parts.append("\(column) >= ?")
            arguments += [Timestamp.format(since)]
        }
        if let until {
            parts.append("\(column) < ?")
            arguments += [Timestamp.format(until)]
        }
        return (parts.joined(separator: " AND "), arguments)
    }
}
