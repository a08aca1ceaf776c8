import Foundation

/// The span a report covers: `since` inclusive, `until` exclusive; either
/// may be open.
public struct ReportPeriod: Codable, Sendable, Equatable {
    public var since: Date?
    public var until: Date?

    public init(since: Date? = nil, until: Date? = nil) {
        self.since = since
        self.until = until
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

    package init(successes: Int, trials: Int) {
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
    public var amount: MeterAmount
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
        FunnelReport(period: period, counts: try store.read { try $0.funnelCounts(createdIn: period) })
    }

    public func promptsReport(_ period: ReportPeriod) throws -> PromptsReport {
        PromptsReport(period: period, profile: profile, counts: try store.read { try $0.promptContexts(in: period) })
    }

    public func experimentsReport(_ period: ReportPeriod) throws -> ExperimentsReport {
        ExperimentsReport(period: period, profile: profile, counts: try store.read { try $0.variantCounts(in: period) })
    }

    public func usageReport(_ period: ReportPeriod) throws -> UsageReport {
        let counts = try store.read { transaction in
            var counts: [String: MeterUsageCounts] = [:]
            for meter in profile.meters {
                counts[meter.name] = try transaction.meterUsageCounts(of: meter.name, in: period)
            }
            return counts
        }
        return UsageReport(period: period, profile: profile, counts: counts)
    }
}

/// The counts each report is built from, read in one transaction.
extension StoreTransaction {
    /// The users created in `period` and the statistics of their hours to link.
    func funnelCounts(createdIn period: ReportPeriod) throws -> FunnelCounts {
        let cohort = try cohortCounts(createdIn: period)
        var hours: [Double] = []
        hours.reserveCapacity(cohort.linked)
        try forEachLink(ofUsersCreatedIn: period) { createdAt, linkedAt in
            hours.append(linkedAt.timeIntervalSince(createdAt) / 3600)
        }
        return FunnelCounts(cohort: cohort, hoursToLink: hours)
    }

    func promptContexts(in period: ReportPeriod) throws -> [PromptContextReport] {
        PromptContextReport.counting(try promptOutcomeCounts(in: period))
    }

    func variantCounts(in period: ReportPeriod) throws -> [VariantCounts] {
        VariantCounts.counting(try assignmentCounts(in: period))
    }
}
