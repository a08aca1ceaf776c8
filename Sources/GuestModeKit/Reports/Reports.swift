import Foundation

/// The span a report covers: `since` inclusive, `until` exclusive; either
/// may be open.
public struct ReportPeriod: Codable, Sendable, Equatable {
    /// The start, inclusive; nil for no start.
    public var since: Date?
    /// The end, exclusive; nil for no end.
    public var until: Date?

    /// The span from `since` to `until`; either may be left open.
    public init(since: Date? = nil, until: Date? = nil) {
        self.since = since
        self.until = until
    }
}

/// Guests first seen in the period, how many were prompted and how many linked.
public struct FunnelReport: Codable, Sendable, Equatable {
    /// The span covered.
    public var period: ReportPeriod
    /// Guests first seen in the period.
    public var guests: Int
    /// Of those, how many were shown a prompt.
    public var prompted: Int
    /// Of those, how many linked an identity.
    public var linked: Int
    /// `prompted` per guest; nil without guests.
    public var promptedRate: Double?
    /// `linked` per guest; nil without guests.
    public var linkedRate: Double?
    /// The mean time from first seen to linked, in hours; nil when nobody linked.
    public var averageHoursToLink: Double?
    /// The median time from first seen to linked, in hours; nil when nobody linked.
    public var medianHoursToLink: Double?
    /// The quartiles and the 90th percentile of hours to link; nil when
    /// nobody linked.
    public var hoursToLinkPercentiles: LinkTimePercentiles?
    /// Guests of the period who linked within seven days of being first seen.
    public var linkedWithinSevenDays: Int
    /// `linkedWithinSevenDays` per guest; nil for an empty period.
    public var linkedWithinSevenDaysRate: Double?
}

/// The outcomes of one prompt context in a period.
public struct PromptContextReport: Codable, Sendable, Equatable {
    /// The prompt context (`total` for the sum of all).
    public var context: String
    /// Times shown.
    public var shown: Int
    /// Times dismissed.
    public var dismissed: Int
    /// Times put off for later.
    public var later: Int
    /// Times the user asked never to be asked again.
    public var never: Int
    /// Times completed.
    public var completed: Int
    /// Completed per showing; nil when never shown.
    public var conversion: Double?
}

/// Prompt outcomes in a period, by context.
public struct PromptsReport: Codable, Sendable, Equatable {
    /// The span covered.
    public var period: ReportPeriod
    /// Every context of the profile, in profile order, then any the store
    /// holds that the profile no longer declares.
    public var contexts: [PromptContextReport]
    /// The sum over every context.
    public var total: PromptContextReport
}

/// A proportion with its 95 % Wilson score interval, which stays inside
/// [0, 1] and behaves for small samples, unlike the normal approximation.
public struct Proportion: Codable, Sendable, Equatable {
    /// Successes per trial; nil without trials.
    public var rate: Double?
    /// The interval's lower end; nil without trials.
    public var low: Double?
    /// The interval's upper end; nil without trials.
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

/// How one variant of an experiment converted.
public struct VariantReport: Codable, Sendable, Equatable {
    /// The experiment.
    public var experiment: String
    /// The variant.
    public var variant: String
    /// Users assigned to it in the period.
    public var users: Int
    /// Users who linked an identity or completed a sign-in prompt.
    public var conversions: Int
    /// `conversions` per user, with its interval.
    public var rate: Proportion
}

/// Every experiment variant's conversion in a period.
public struct ExperimentsReport: Codable, Sendable, Equatable {
    /// The span covered.
    public var period: ReportPeriod
    /// Every variant of every experiment, in profile order.
    public var variants: [VariantReport]
}

/// How one meter was used in a period.
public struct MeterUsageReport: Codable, Sendable, Equatable {
    /// The meter.
    public var meter: String
    /// Its unit.
    public var unit: String
    /// Users who used it.
    public var users: Int
    /// Uses recorded.
    public var uses: Int
    /// The total amount used.
    public var amount: MeterAmount
    /// `amount` per user; nil when nobody used it.
    public var averagePerUser: Double?
    /// Users who crossed one of the meter's warning thresholds in the period.
    public var warnedUsers: Int
    /// Grants of the meter given in the period.
    public var grants: Int
    /// What those grants gave, added up.
    public var granted: MeterAmount
}

/// Every meter's use in a period.
public struct UsageReport: Codable, Sendable, Equatable {
    /// The span covered.
    public var period: ReportPeriod
    /// Every meter of the profile, in profile order.
    public var meters: [MeterUsageReport]
}

/// How often one step of the journals of a kind failed.
public struct StepFailures: Codable, Sendable, Equatable {
    /// The step's place in its journal, from 1.
    public var position: Int
    /// The step's name (`profile`, a collection step, `cleanup`).
    public var step: String
    /// Times the step failed, every attempt counted.
    public var failures: Int
}

/// What became of the journals of one kind (guest → account migrations, or
/// merges) started in a period.
public struct JournalKindReport: Codable, Sendable, Equatable {
    /// `guest-to-account` or `merge`.
    public var kind: JournalKind
    /// Journals started in the period.
    public var started: Int
    /// Of those, how many are done.
    public var completed: Int
    /// Of those, how many failed at least once (whether resumed since or not).
    public var failed: Int
    /// Of those, how many were resumed at least once.
    public var resumed: Int
    /// Of those, how many are not done yet (running, killed or failed).
    public var unfinished: Int
    /// `completed` per journal started, with its 95 % Wilson interval.
    public var successRate: Proportion
    /// Each step that failed, with how many times, in step order.
    public var failuresByStep: [StepFailures]
}

/// Guest → account migrations and merges started in a period: started,
/// completed, failed, resumed, the success rate and the failures by step.
public struct MigrationsReport: Codable, Sendable, Equatable {
    /// The span covered (by the time each journal started).
    public var period: ReportPeriod
    /// Guest → account migrations first, then merges.
    public var kinds: [JournalKindReport]
}

extension GuestMode {
    /// Guest → account migrations and merges started in the period and what
    /// became of them.
    ///
    /// ```swift
    /// let report = try engine.migrationsReport(ReportPeriod(since: lastMonth))
    /// // report.kinds[0].successRate.rate, report.kinds[0].failuresByStep
    /// ```
    public func migrationsReport(_ period: ReportPeriod) throws -> MigrationsReport {
        let (attempts, failures) = try store.read { transaction in
            (
                try transaction.journalAttemptCounts(startedIn: period),
                try transaction.stepFailureCounts(startedIn: period)
            )
        }
        return MigrationsReport(period: period, attempts: attempts, failures: failures)
    }

    /// Guests first seen in the period and how many were prompted and linked.
    ///
    /// ```swift
    /// let funnel = try engine.funnelReport(ReportPeriod(since: lastMonth))
    /// // funnel.guests, funnel.linkedRate
    /// ```
    public func funnelReport(_ period: ReportPeriod) throws -> FunnelReport {
        FunnelReport(period: period, counts: try store.read { try $0.funnelCounts(createdIn: period) })
    }

    /// Prompt outcomes in the period, by context.
    public func promptsReport(_ period: ReportPeriod) throws -> PromptsReport {
        PromptsReport(period: period, profile: profile, counts: try store.read { try $0.promptContexts(in: period) })
    }

    /// How each experiment variant converted in the period.
    public func experimentsReport(_ period: ReportPeriod) throws -> ExperimentsReport {
        ExperimentsReport(period: period, profile: profile, counts: try store.read { try $0.variantCounts(in: period) })
    }

    /// How each meter was used in the period.
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
