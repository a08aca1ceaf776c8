import Foundation
import GRDB

/// The span a report covers: `since` inclusive, `until` exclusive; either
/// may be open.
public struct ReportPeriod: Codable, Sendable, Equatable {
    public var since: Date?
    public var until: Date?

    public init(since: Date? = nil, until: Date? = nil) {
        self.since = since
        self.until = until
    }

    /// `column >= ? AND column < ?` for the bounds that are set; times are
    /// fixed-width ISO text, so text comparison is time comparison.
    func clause(_ column: String) -> (sql: String, arguments: StatementArguments) {
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

/// Guests first seen in the period, how many were prompted and how many linked.
public struct FunnelReport: Codable, Sendable, Equatable {
    public var period: ReportPeriod
    public var guests: Int
    public var prompted: Int
    public var linked: Int
    public var promptedRate: Double?
    public var linkedRate: Double?
    public var averageHoursToLink: Double?
    public var medianHoursToLink: Double?
}

public struct PromptContextReport: Codable, Sendable, Equatable {
    public var context: String
    public var shown: Int
    public var dismissed: Int
    public var later: Int
    public var never: Int
    public var completed: Int
    /// Completed per showing; nil when never shown.
    public var conversion: Double?
}

public struct PromptsReport: Codable, Sendable, Equatable {
    public var period: ReportPeriod
    /// Every context of the profile, in profile order, then any the store
    /// holds that the profile no longer declares.
    public var contexts: [PromptContextReport]
    public var total: PromptContextReport
}

/// A proportion with its 95 % Wilson score interval, which stays inside
/// [0, 1] and behaves for small samples, unlike the normal approximation.
public struct Proportion: Codable, Sendable, Equatable {
    public var rate: Double?
    public var low: Double?
    public var high: Double?

    public init(successes: Int, trials: Int) {
        guard trials > 0 else {
            rate = nil; low = nil; high = nil
            return
        }
        let z = 1.959963984540054
        let n = Double(trials)
        let p = Double(successes) / n
        let denominator = 1 + z * z / n
        let centre = (p + z * z / (2 * n)) / denominator
        let margin = z * ((p * (1 - p) / n + z * z / (4 * n * n)).squareRoot()) / denominator
        rate = p
        low = max(0, centre - margin)
        high = min(1, centre + margin)
    }
}

public struct VariantReport: Codable, Sendable, Equatable {
    public var experiment: String
    public var variant: String
    public var users: Int
    /// Users who linked an identity or completed a sign-in prompt.
    public var conversions: Int
    public var rate: Proportion
}

public struct ExperimentsReport: Codable, Sendable, Equatable {
    public var period: ReportPeriod
    public var variants: [VariantReport]
}

public struct MeterUsageReport: Codable, Sendable, Equatable {
    public var meter: String
    public var unit: String
    public var users: Int
    public var uses: Int
    public var amount: Double
    public var averagePerUser: Double?
    /// Users who crossed one of the meter's warning thresholds in the period.
    public var warnedUsers: Int
}

public struct UsageReport: Codable, Sendable, Equatable {
    public var period: ReportPeriod
    public var meters: [MeterUsageReport]
}

extension GuestMode {
    public func funnelReport(_ period: ReportPeriod) throws -> FunnelReport {
        try store.read { db in try SQLiteStore.funnelReport(db, period) }
    }

    public func promptsReport(_ period: ReportPeriod) throws -> PromptsReport {
        try store.read { db in try SQLiteStore.promptsReport(db, period, profile: profile) }
    }

    public func experimentsReport(_ period: ReportPeriod) throws -> ExperimentsReport {
        try store.read { db in try SQLiteStore.experimentsReport(db, period, profile: profile) }
    }

    public func usageReport(_ period: ReportPeriod) throws -> UsageReport {
        try store.read { db in try SQLiteStore.usageReport(db, period, profile: profile) }
    }
}

extension SQLiteStore {
    static func funnelReport(_ db: Database, _ period: ReportPeriod) throws -> FunnelReport {
        let (filter, arguments) = period.clause("created_at")
        let cohort = "SELECT id, state, created_at, linked_at FROM users WHERE \(filter)"
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
            arguments: arguments)!
        let linked: Int = row["linked"]
        // The median is the middle of the sorted link times; SQLite has no median aggregate.
        let median = linked == 0 ? nil : try Double.fetchOne(
            db,
            sql: """
                SELECT avg(hours) FROM (
                    SELECT (julianday(linked_at) - julianday(created_at)) * 24 AS hours
                    FROM (\(cohort)) WHERE state = 'linked'
                    ORDER BY hours LIMIT 2 - (? % 2) OFFSET (? - 1) / 2)
                """,
            arguments: arguments + [linked, linked])
        let guests: Int = row["guests"]
        let prompted: Int = row["prompted"]
        return FunnelReport(
            period: period, guests: guests, prompted: prompted, linked: linked,
            promptedRate: guests == 0 ? nil : Double(prompted) / Double(guests),
            linkedRate: guests == 0 ? nil : Double(linked) / Double(guests),
            averageHoursToLink: row["average_hours"], medianHoursToLink: median)
    }

    static func promptsReport(_ db: Database, _ period: ReportPeriod, profile: Profile) throws -> PromptsReport {
        let (filter, arguments) = period.clause("at")
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT context,
                       sum(outcome = 'shown') AS shown, sum(outcome = 'dismissed') AS dismissed,
                       sum(outcome = 'later') AS later, sum(outcome = 'never') AS never,
                       sum(outcome = 'completed') AS completed
                FROM prompt_outcomes WHERE \(filter)
                GROUP BY context
                """,
            arguments: arguments)
        var byContext: [String: PromptContextReport] = [:]
        for row in rows {
            let report = PromptContextReport(
                context: row["context"], shown: row["shown"], dismissed: row["dismissed"], later: row["later"],
                never: row["never"], completed: row["completed"], conversion: nil)
            byContext[report.context] = report
        }
        let declared = profile.prompts.rules.map(\.context)
        let order = declared + byContext.keys.filter { !declared.contains($0) }.sorted()
        let contexts = order.map { context in
            withConversion(
                byContext[context]
                    ?? PromptContextReport(
                        context: context, shown: 0, dismissed: 0, later: 0, never: 0, completed: 0, conversion: nil))
        }
        let total = withConversion(
            contexts.reduce(
                PromptContextReport(context: "total", shown: 0, dismissed: 0, later: 0, never: 0, completed: 0, conversion: nil)
            ) { sum, next in
                PromptContextReport(
                    context: "total", shown: sum.shown + next.shown, dismissed: sum.dismissed + next.dismissed,
                    later: sum.later + next.later, never: sum.never + next.never,
                    completed: sum.completed + next.completed, conversion: nil)
            })
        return PromptsReport(period: period, contexts: contexts, total: total)
    }

    private static func withConversion(_ report: PromptContextReport) -> PromptContextReport {
        var report = report
        report.conversion = report.shown == 0 ? nil : Double(report.completed) / Double(report.shown)
        return report
    }

    static func experimentsReport(_ db: Database, _ period: ReportPeriod, profile: Profile) throws -> ExperimentsReport {
        let (filter, arguments) = period.clause("a.assigned_at")
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT a.experiment, a.variant, count(*) AS users,
                       sum(u.state = 'linked' OR u.prompt_state = 'authenticated') AS conversions
                FROM experiment_assignments a JOIN users u ON u.id = a.user_id
                WHERE \(filter)
                GROUP BY a.experiment, a.variant
                """,
            arguments: arguments)
        var counts: [String: (users: Int, conversions: Int)] = [:]
        for row in rows {
            counts["\(row["experiment"] as String)\u{0}\(row["variant"] as String)"] = (row["users"], row["conversions"])
        }
        var variants: [VariantReport] = []
        // Declared variants first, in profile order, with zeros for empty ones.
        for experiment in profile.experiments {
            for variant in experiment.variants {
                let count = counts.removeValue(forKey: "\(experiment.name)\u{0}\(variant.name)") ?? (0, 0)
                variants.append(
                    VariantReport(
                        experiment: experiment.name, variant: variant.name, users: count.users,
                        conversions: count.conversions, rate: Proportion(successes: count.conversions, trials: count.users)))
            }
        }
        for (key, count) in counts.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
            variants.append(
                VariantReport(
                    experiment: parts[0], variant: parts.count > 1 ? parts[1] : "", users: count.users,
                    conversions: count.conversions, rate: Proportion(successes: count.conversions, trials: count.users)))
        }
        return ExperimentsReport(period: period, variants: variants)
    }

    static func usageReport(_ db: Database, _ period: ReportPeriod, profile: Profile) throws -> UsageReport {
        let (usageFilter, usageArguments) = period.clause("at")
        let (warningFilter, warningArguments) = period.clause("fired_at")
        let meters = try profile.meters.map { meter in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(DISTINCT user_id) AS users, count(*) AS uses, coalesce(sum(amount), 0) AS amount
                    FROM meter_usage WHERE meter = ? AND \(usageFilter)
                    """,
                arguments: [meter.name] + usageArguments)!
            let warned = try Int.fetchOne(
                db,
                sql: """
                    SELECT count(DISTINCT user_id) FROM meter_warnings
                    WHERE meter = ? AND \(warningFilter)
                    """,
                arguments: [meter.name] + warningArguments) ?? 0
            let users: Int = row["users"]
            let amount: Double = row["amount"]
            return MeterUsageReport(
                meter: meter.name, unit: meter.unit, users: users, uses: row["uses"], amount: amount,
                averagePerUser: users == 0 ? nil : amount / Double(users), warnedUsers: warned)
        }
        return UsageReport(period: period, meters: meters)
    }
}
