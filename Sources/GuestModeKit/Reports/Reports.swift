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
        FunnelReport(period: period, counts: try store.funnelCounts(in: period))
    }

    public func promptsReport(_ period: ReportPeriod) throws -> PromptsReport {
        try Self.promptsReport(period, profile: profile, store: store)
    }

    public func experimentsReport(_ period: ReportPeriod) throws -> ExperimentsReport {
        try Self.experimentsReport(period, profile: profile, store: store)
    }

    public func usageReport(_ period: ReportPeriod) throws -> UsageReport {
        let counts = try store.meterUsageCounts(of: profile.meters.map(\.name), in: period)
        return UsageReport(
            period: period,
            meters: profile.meters.map { meter in
                let count = counts[meter.name] ?? MeterUsageCounts(users: 0, uses: 0, amount: 0, warnedUsers: 0)
                return MeterUsageReport(
                    meter: meter.name, unit: meter.unit, users: count.users, uses: count.uses, amount: count.amount,
                    averagePerUser: count.users == 0 ? nil : count.amount / Double(count.users),
                    warnedUsers: count.warnedUsers)
            })
    }

    /// Every context of the profile in profile order, then any others the
    /// store holds, with the conversion of each and a total.
    static func promptsReport(_ period: ReportPeriod, profile: Profile, store: any ReportStore) throws -> PromptsReport {
        var byContext: [String: PromptContextReport] = [:]
        for counts in try store.promptOutcomeCounts(in: period) { byContext[counts.context] = counts }
        let declared = profile.prompts.rules.map(\.context)
        let order = declared + byContext.keys.filter { !declared.contains($0) }.sorted()
        let contexts = order.map { byContext[$0] ?? PromptContextReport(context: $0) }
        let total = PromptContextReport(
            context: "total", shown: contexts.reduce(0) { $0 + $1.shown },
            dismissed: contexts.reduce(0) { $0 + $1.dismissed }, later: contexts.reduce(0) { $0 + $1.later },
            never: contexts.reduce(0) { $0 + $1.never }, completed: contexts.reduce(0) { $0 + $1.completed })
        return PromptsReport(period: period, contexts: contexts, total: total)
    }

    /// Declared variants first, in profile order, with zeros for empty ones;
    /// then any others the store holds, by name.
    static func experimentsReport(_ period: ReportPeriod, profile: Profile, store: any ReportStore) throws
        -> ExperimentsReport
    {
        struct Key: Hashable { var experiment: String; var variant: String }
        var counts: [Key: VariantCounts] = [:]
        for count in try store.variantConversionCounts(in: period) {
            counts[Key(experiment: count.experiment, variant: count.variant)] = count
        }
        var variants: [VariantReport] = []
        for experiment in profile.experiments {
            for variant in experiment.variants {
                let count = counts.removeValue(forKey: Key(experiment: experiment.name, variant: variant.name))
                variants.append(
                    VariantReport(
                        counts: count
                            ?? VariantCounts(experiment: experiment.name, variant: variant.name, users: 0, conversions: 0)))
            }
        }
        let undeclared = counts.values.sorted { ($0.experiment, $0.variant) < ($1.experiment, $1.variant) }
        variants += undeclared.map(VariantReport.init(counts:))
        return ExperimentsReport(period: period, variants: variants)
    }
}

extension FunnelReport {
    init(period: ReportPeriod, counts: FunnelCounts) {
        self.init(
            period: period, guests: counts.guests, prompted: counts.prompted, linked: counts.linked,
            promptedRate: counts.guests == 0 ? nil : Double(counts.prompted) / Double(counts.guests),
            linkedRate: counts.guests == 0 ? nil : Double(counts.linked) / Double(counts.guests),
            averageHoursToLink: counts.averageHoursToLink, medianHoursToLink: counts.medianHoursToLink)
    }
}

extension PromptContextReport {
    /// A context's outcome counts; the conversion follows from them.
    public init(context: String, shown: Int = 0, dismissed: Int = 0, later: Int = 0, never: Int = 0, completed: Int = 0) {
        self.init(
            context: context, shown: shown, dismissed: dismissed, later: later, never: never, completed: completed,
            conversion: shown == 0 ? nil : Double(completed) / Double(shown))
    }
}

extension VariantReport {
    init(counts: VariantCounts) {
        self.init(
            experiment: counts.experiment, variant: counts.variant, users: counts.users, conversions: counts.conversions,
            rate: Proportion(successes: counts.conversions, trials: counts.users))
    }
}
