import Foundation

// Reports from the store's counts: the profile decides the order and which
// rows appear with zeros; rates and intervals follow from the counts.

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
    public init(context: String, shown: Int = 0, dismissed: Int = 0, later: Int = 0, never: Int = 0, completed: Int = 0)
    {
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
                    warnedUsers: count.warnedUsers)
            })
    }
}
