import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: ReportStore {
    public func funnelCounts(in period: ReportPeriod) throws -> FunnelCounts {
        try read { db in
            let (filter, arguments) = period.clause("created_at")
            let cohort = "SELECT id, state, created_at, linked_at FROM users WHERE \(filter)"
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        WITH cohort AS (\(cohort))
                        SELECT count(*) AS guests,
                               coalesce(sum(EXISTS (SELECT 1 FROM prompt_outcomes o WHERE o.user_id = cohort.id)), 0) AS prompted,
                               coalesce(sum(state = 'linked'), 0) AS linked,
                               avg(CASE WHEN state = 'linked' THEN (julianday(linked_at) - julianday(created_at)) * 24 END) AS average_hours
                        FROM cohort
                        """,
                    arguments: arguments)
            else { throw GuestModeError(.internalFailure, code: .internalFailure, "the funnel query returned no row") }
            let linked: Int = try row.decode(forColumn: "linked")
            // The median is the middle of the sorted link times; SQLite has no median aggregate.
            let median =
                linked == 0
                ? nil
                : try Double.fetchOne(
                    db,
                    sql: """
                        SELECT avg(hours) FROM (
                            SELECT (julianday(linked_at) - julianday(created_at)) * 24 AS hours
                            FROM (\(cohort)) WHERE state = 'linked'
                            ORDER BY hours LIMIT 2 - (? % 2) OFFSET (? - 1) / 2)
                        """,
                    arguments: arguments + [linked, linked])
            return FunnelCounts(
                guests: try row.decode(forColumn: "guests"), prompted: try row.decode(forColumn: "prompted"),
                linked: linked,
                averageHoursToLink: try row.decode(forColumn: "average_hours"), medianHoursToLink: median)
        }
    }

    public func promptOutcomeCounts(in period: ReportPeriod) throws -> [PromptContextReport] {
        try read { db in try SQLiteStore.promptOutcomeCounts(db, period) }
    }

    public func variantConversionCounts(in period: ReportPeriod) throws -> [VariantCounts] {
        try read { db in try SQLiteStore.variantConversionCounts(db, period) }
    }

    public func meterUsageCounts(of meters: [String], in period: ReportPeriod) throws -> [String: MeterUsageCounts] {
        try read { db in
            let (usageFilter, usageArguments) = period.clause("at")
            let (warningFilter, warningArguments) = period.clause("fired_at")
            var counts: [String: MeterUsageCounts] = [:]
            for meter in meters {
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
                else {
                    throw GuestModeError(.internalFailure, code: .internalFailure, "the usage query returned no row")
                }
                let warned =
                    try Int.fetchOne(
                        db,
                        sql: "SELECT count(DISTINCT user_id) FROM meter_warnings WHERE meter = ? AND \(warningFilter)",
                        arguments: [meter] + warningArguments) ?? 0
                counts[meter] = MeterUsageCounts(
                    users: try row.decode(forColumn: "users"), uses: try row.decode(forColumn: "uses"),
                    amount: MeterAmount.summed(
                        units: try row.decode(forColumn: "units"), millionths: try row.decode(forColumn: "millionths")),
                    warnedUsers: warned)
            }
            return counts
        }
    }

    public func withReplayTransaction<T>(_ body: (any ReplayTransaction) throws -> T) throws -> T {
        try write { db in try body(SQLiteReplayTransaction(store: self, db: db)) }
    }

    static func promptOutcomeCounts(_ db: Database, _ period: ReportPeriod) throws -> [PromptContextReport] {
        let (filter, arguments) = period.clause("at")
        return try Row.fetchAll(
            db,
            sql: """
                SELECT context,
                       sum(outcome = 'shown') AS shown, sum(outcome = 'dismissed') AS dismissed,
                       sum(outcome = 'later') AS later, sum(outcome = 'never') AS never,
                       sum(outcome = 'completed') AS completed
                FROM prompt_outcomes WHERE \(filter)
                GROUP BY context
                """,
            arguments: arguments
        ).map { row in
            PromptContextReport(
                context: try row.decode(forColumn: "context"), shown: try row.decode(forColumn: "shown"),
                dismissed: try row.decode(forColumn: "dismissed"), later: try row.decode(forColumn: "later"),
                never: try row.decode(forColumn: "never"), completed: try row.decode(forColumn: "completed"))
        }
    }

    static func variantConversionCounts(_ db: Database, _ period: ReportPeriod) throws -> [VariantCounts] {
        let (filter, arguments) = period.clause("a.assigned_at")
        return try Row.fetchAll(
            db,
            sql: """
                SELECT a.experiment, a.variant, count(*) AS users,
                       sum(u.state = 'linked' OR u.prompt_state = 'authenticated') AS conversions
                FROM experiment_assignments a JOIN users u ON u.id = a.user_id
                WHERE \(filter)
                GROUP BY a.experiment, a.variant
                """,
            arguments: arguments
        ).map { row in
            VariantCounts(
                experiment: try row.decode(forColumn: "experiment"), variant: try row.decode(forColumn: "variant"),
                users: try row.decode(forColumn: "users"), conversions: try row.decode(forColumn: "conversions"))
        }
    }

    /// The profile a store is bound to, read without writing a byte to the
    /// store, for commands such as `replay` that only borrow its profile.
    public static func boundProfile(readingOnly path: String) throws -> (text: String, origin: String)? {
        guard FileManager.default.fileExists(atPath: path) else {
            throw GuestModeError(
                .notFound, code: .storeNotFound,
                "no store at '\(path)'")
        }
        try StoreFile.refuseUnknownSchema(path: path)
        do {
            let queue = try DatabaseQueue(path: path, configuration: AppDatabase.configuration(readOnly: true))
            defer { try? queue.close() }
            return try queue.read { db in
                let rows = try Row.fetchAll(
                    db, sql: "SELECT key, value FROM meta WHERE key IN ('profile_text', 'profile_origin')")
                var values: [String: String] = [:]
                for row in rows { values[try row.decode(forColumn: "key")] = try row.decode(forColumn: "value") }
                return values["profile_text"].map { ($0, values["profile_origin"] ?? "") }
            }
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path)
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

/// A replay's steps inside its one write transaction.
private struct SQLiteReplayTransaction: ReplayTransaction {
    let store: SQLiteStore
    let db: Database

    func insertUser(_ user: User) throws {
        try store.insert(user, db)
    }

    func apply(_ event: TrackedEvent, profile: Profile, now: Date) throws -> TrackResult {
        try store.apply(event, profile: profile, now: now, db)
    }

    func storedAssignment(userID: String, experiment: String) throws -> StoredAssignment? {
        try SQLiteTransaction(store: store, db: db).assignment(of: userID, experiment: experiment)
    }

    func storeAssignment(userID: String, experiment: String, variant: String, at: Date) throws -> StoredAssignment {
        let transaction = SQLiteTransaction(store: store, db: db)
        let added = try transaction.addAssignment(of: userID, experiment: experiment, variant: variant, at: at)
        guard var stored = try transaction.assignment(of: userID, experiment: experiment) else {
            throw GuestModeError(
                .internalFailure, code: .assignmentLost, "the assignment of \(userID) to \(experiment) was not stored")
        }
        stored.isNew = added
        return stored
    }

    var rows: any StoreTransaction { SQLiteTransaction(store: store, db: db) }
}
