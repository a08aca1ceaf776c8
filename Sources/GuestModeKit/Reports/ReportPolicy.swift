import Foundation

// Reports from the store's counts: the profile decides the order and which
// rows appear with zeros; rates and intervals follow from the counts.

extension FunnelReport {
    init(period: ReportPeriod, counts: FunnelCounts) {
        self.init(
            period: period, guests: counts.guests, prompted: counts.prompted, linked: counts.linked,
            promptedRate: counts.guests == 0 ? nil : Double(counts.prompted) / Double(counts.guests),
            linkedRate: counts.guests == 0 ? nil : Double(counts.linked) / Double(counts.guests),
            averageHoursToLink: counts.averageHoursToLink, medianHoursToLink: counts.medianHoursToLink,
            hoursToLinkPercentiles: counts.hoursToLinkPercentiles, linkedWithinSevenDays: counts.linkedWithinSevenDays,
            linkedWithinSevenDaysRate: counts.guests == 0
                ? nil : Double(counts.linkedWithinSevenDays) / Double(counts.guests))
    }
}

extension FunnelCounts {
    /// How long "authenticated soon" is: seven days from first seen.
    static let soonAfterFirstSeen: Double = 7 * 24

    /// The cohort's counts, with the average, the median and the
    /// percentiles of its hours to link, and how many linked within seven
    /// days; the statistics are nil when nobody linked.
    init(cohort: CohortCounts, hoursToLink: [Double]) {
        var average: Double?
        var median: Double?
        var percentiles: LinkTimePercentiles?
        let sorted = hoursToLink.sorted()
        if !sorted.isEmpty {
            average = sorted.reduce(0, +) / Double(sorted.count)
            median = (sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2
            percentiles = LinkTimePercentiles(
                p25: Self.percentile(0.25, of: sorted), p50: Self.percentile(0.5, of: sorted),
                p75: Self.percentile(0.75, of: sorted), p90: Self.percentile(0.9, of: sorted))
        }
        self.init(
            guests: cohort.users, prompted: cohort.prompted, linked: cohort.linked, averageHoursToLink: average,
            medianHoursToLink: median, hoursToLinkPercentiles: percentiles,
            linkedWithinSevenDays: sorted.prefix { $0 <= Self.soonAfterFirstSeen }.count)
    }

    /// The `fraction` percentile of sorted, non-empty values, interpolated
    /// linearly between the two nearest ranks (Hyndman and Fan's type 7, the
    /// default of R and NumPy): the median of an even count is the mean of
    /// the two middle values, as `medianHoursToLink` is.
    static func percentile(_ fraction: Double, of sorted: [Double]) -> Double {
        let position = fraction * Double(sorted.count - 1)
        let lower = Int(position.rounded(.down))
        let upper = min(lower + 1, sorted.count - 1)
        return sorted[lower] + (position - Double(lower)) * (sorted[upper] - sorted[lower])
    }
}

extension PromptContextReport {
    /// One report per context from its outcome counts, in no particular
    /// order. An outcome this build does not know shows in no column.
    static func counting(_ counts: [PromptOutcomeCount]) -> [PromptContextReport] {
        var byContext: [String: [PromptOutcome: Int]] = [:]
        for count in counts {
            var outcomes = byContext[count.context, default: [:]]
            if let outcome = PromptOutcome(rawValue: count.outcome) { outcomes[outcome, default: 0] += count.count }
            byContext[count.context] = outcomes
        }
        return byContext.map { context, outcomes in
            PromptContextReport(
                context: context, shown: outcomes[.shown] ?? 0, dismissed: outcomes[.dismissed] ?? 0,
                later: outcomes[.later] ?? 0, never: outcomes[.never] ?? 0, completed: outcomes[.completed] ?? 0)
        }
    }

    /// A context's outcome counts; the conversion follows from them.
    package init(
        context: String, shown: Int = 0, dismissed: Int = 0, later: Int = 0, never: Int = 0, completed: Int = 0
    ) {
        self.init(
            context: context, shown: shown, dismissed: dismissed, later: later, never: never, completed: completed,
            conversion: shown == 0 ? nil : Double(completed) / Double(shown))
    }
}

extension PromptsReport {
    /// Every context of the profile in profile order (with zeros when it has
    /// no outcomes), then any others the counts hold by name, and a total.
    init(period: ReportPeriod, profile: Profile, counts: [PromptContextReport]) {
        var byContext: [String: PromptContextReport] = [:]
        for count in counts { byContext[count.context] = count }
        let declared = profile.prompts.rules.map(\.context)
        let order = declared + byContext.keys.filter { !declared.contains($0) }.sorted()
        let contexts = order.map { byContext[$0] ?? PromptContextReport(context: $0) }
        let total = PromptContextReport(
            context: "total", shown: contexts.reduce(0) { $0 + $1.shown },
            dismissed: contexts.reduce(0) { $0 + $1.dismissed }, later: contexts.reduce(0) { $0 + $1.later },
            never: contexts.reduce(0) { $0 + $1.never }, completed: contexts.reduce(0) { $0 + $1.completed })
        self.init(period: period, contexts: contexts, total: total)
    }
}

extension VariantCounts {
    /// One count per experiment and variant, in no particular order: a user
    /// converted who linked an identity or completed a sign-in prompt.
    static func counting(_ counts: [AssignmentCount]) -> [VariantCounts] {
        struct Key: Hashable {
            var experiment: String
            var variant: String
        }
        var byVariant: [Key: VariantCounts] = [:]
        for count in counts {
            let key = Key(experiment: count.experiment, variant: count.variant)
            var total =
                byVariant[key]
                ?? VariantCounts(experiment: count.experiment, variant: count.variant, users: 0, conversions: 0)
            total.users += count.users
            if count.userState == .linked || count.promptState == PromptState.authenticated.rawValue {
                total.conversions += count.users
            }
            byVariant[key] = total
        }
        return Array(byVariant.values)
    }
}

extension VariantReport {
    init(counts: VariantCounts) {
        self.init(
            experiment: counts.experiment, variant: counts.variant, users: counts.users,
            conversions: counts.conversions,
            rate: Proportion(successes: counts.conversions, trials: counts.users))
    }
}

extension ExperimentsReport {
    /// Declared variants first, in profile order, with zeros for empty ones;
    /// then any others the counts hold, by experiment and variant name.
    init(period: ReportPeriod, profile: Profile, counts: [VariantCounts]) {
        struct Key: Hashable {
            var experiment: String
            var variant: String
        }
        var remaining: [Key: VariantCounts] = [:]
        for count in counts { remaining[Key(experiment: count.experiment, variant: count.variant)] = count }
        var variants: [VariantReport] = []
        for experiment in profile.experiments {
            for variant in experiment.variants {
                let count = remaining.removeValue(forKey: Key(experiment: experiment.name, variant: variant.name))
                variants.append(
                    VariantReport(
                        counts: count
                            ?? VariantCounts(
                                experiment: experiment.name, variant: variant.name, users: 0, conversions: 0)))
            }
        }
        let undeclared = remaining.values.sorted { ($0.experiment, $0.variant) < ($1.experiment, $1.variant) }
        variants += undeclared.map(VariantReport.init(counts:))
        self.init(period: period, variants: variants)
    }
}

extension UsageReport {
    /// Every meter of the profile in profile order, with zeros when unused.
    init(period: ReportPeriod, profile: Profile, counts: [String: MeterUsageCounts]) {
        self.init(
            period: period,
            meters: profile.meters.map { meter in
                let count = counts[meter.name] ?? MeterUsageCounts(users: 0, uses: 0, amount: 0, warnedUsers: 0)
                return MeterUsageReport(
                    meter: meter.name, unit: meter.unit, users: count.users, uses: count.uses, amount: count.amount,
                    averagePerUser: count.users == 0 ? nil : count.amount.doubleValue / Double(count.users),
                    warnedUsers: count.warnedUsers, grants: count.grants, granted: count.granted)
            })
    }
}

extension MigrationsReport {
    /// Both kinds from the store's counts, each shown even with nothing
    /// started (the store holds no other: a journal's kind is read as a
    /// `JournalKind`). A journal counts as failed when a step of it failed or
    /// it is failed now (a journal of a store older than the count of
    /// failures), as resumed when it was resumed at least once.
    init(period: ReportPeriod, attempts: [JournalAttemptCount], failures: [StepFailureCount]) {
        let kinds = JournalKind.allCases.map { kind in
            let groups = attempts.filter { $0.kind == kind }
            let started = groups.reduce(0) { $0 + $1.journals }
            let completed = groups.filter { $0.status == JournalStatus.done.rawValue }.reduce(0) { $0 + $1.journals }
            let steps = failures.filter { $0.kind == kind }.sorted {
                $0.position != $1.position
                    ? $0.position < $1.position : Array($0.step.utf8).lexicographicallyPrecedes(Array($1.step.utf8))
            }
            return JournalKindReport(
                kind: kind, started: started, completed: completed,
                failed: groups.filter { $0.failures > 0 || $0.status == JournalStatus.failed.rawValue }.reduce(0) {
                    $0 + $1.journals
                },
                resumed: groups.filter { $0.resumes > 0 }.reduce(0) { $0 + $1.journals },
                unfinished: started - completed, successRate: Proportion(successes: completed, trials: started),
                failuresByStep: steps.map { StepFailures(position: $0.position, step: $0.step, failures: $0.failures) })
        }
        self.init(period: period, kinds: kinds)
    }
}
