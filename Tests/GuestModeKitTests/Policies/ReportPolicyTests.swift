import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

private func profile(_ name: String) throws -> Profile {
    try ProfileLoader.parse(try template(name), file: "\(name).yaml")
}

@Suite struct ReportPolicyTests {
    @Test func funnelRatesFollowFromTheCountsAndAreNilForAnEmptyCohort() {
        let funnel = FunnelReport(
            period: ReportPeriod(),
            counts: FunnelCounts(guests: 4, prompted: 2, linked: 1, averageHoursToLink: 3, medianHoursToLink: 3))
        #expect(funnel.promptedRate == 0.5 && funnel.linkedRate == 0.25 && funnel.medianHoursToLink == 3)
        let empty = FunnelReport(
            period: ReportPeriod(),
            counts: FunnelCounts(guests: 0, prompted: 0, linked: 0, averageHoursToLink: nil, medianHoursToLink: nil))
        #expect(empty.promptedRate == nil && empty.linkedRate == nil)
    }

    @Test func hoursToLinkGiveTheAverageAndTheMiddleValueOrTheMeanOfTheTwoMiddleOnes() {
        let cohort = CohortCounts(users: 9, prompted: 3, linked: 4)
        let even = FunnelCounts(cohort: cohort, hoursToLink: [10, 1, 3, 2])
        #expect(even.guests == 9 && even.prompted == 3 && even.linked == 4)
        #expect(even.averageHoursToLink == 4 && even.medianHoursToLink == 2.5)
        let odd = FunnelCounts(cohort: cohort, hoursToLink: [7, 0.5, 2])
        #expect(odd.medianHoursToLink == 2 && odd.averageHoursToLink == 9.5 / 3)
        let nobody = FunnelCounts(cohort: CohortCounts(users: 2, prompted: 0, linked: 0), hoursToLink: [])
        #expect(nobody.averageHoursToLink == nil && nobody.medianHoursToLink == nil)
    }

    @Test func outcomeAndAssignmentCountsAddUpPerContextAndVariant() {
        let contexts = PromptContextReport.counting([
            PromptOutcomeCount(context: "a", outcome: "shown", count: 4),
            PromptOutcomeCount(context: "a", outcome: "completed", count: 1),
            PromptOutcomeCount(context: "b", outcome: "shrugged", count: 2),
        ]).sorted { $0.context < $1.context }
        #expect(
            contexts == [
                PromptContextReport(context: "a", shown: 4, completed: 1), PromptContextReport(context: "b"),
            ])
        let variants = VariantCounts.counting([
            AssignmentCount(experiment: "e", variant: "v", userState: .anonymous, promptState: "prompted", users: 5),
            AssignmentCount(experiment: "e", variant: "v", userState: .linked, promptState: "prompted", users: 2),
            AssignmentCount(
                experiment: "e", variant: "v", userState: .anonymous, promptState: "authenticated", users: 1),
            AssignmentCount(experiment: "e", variant: "w", userState: .anonymous, promptState: "never_ask", users: 3),
        ]).sorted { $0.variant < $1.variant }
        #expect(
            variants == [
                VariantCounts(experiment: "e", variant: "v", users: 8, conversions: 3),
                VariantCounts(experiment: "e", variant: "w", users: 3, conversions: 0),
            ])
    }

    @Test func promptContextsFollowTheProfileThenTheRestByNameWithATotal() throws {
        let recipes = try profile("recipes")
        let report = PromptsReport(
            period: ReportPeriod(), profile: recipes,
            counts: [
                PromptContextReport(context: "zz_retired", shown: 1),
                PromptContextReport(context: "reengagement", shown: 4, dismissed: 1, completed: 1),
                PromptContextReport(context: "aa_retired", never: 2),
            ])
        let declared = recipes.prompts.rules.map(\.context)
        #expect(report.contexts.map(\.context) == declared + ["aa_retired", "zz_retired"])
        #expect(
            report.contexts.first { $0.context == "first_recipe_success" }
                == PromptContextReport(context: "first_recipe_success"))
        #expect(report.contexts.first { $0.context == "reengagement" }?.conversion == 0.25)
        #expect(report.contexts.first { $0.context == "aa_retired" }?.conversion == nil, "never shown")
        #expect(report.total == PromptContextReport(context: "total", shown: 5, dismissed: 1, never: 2, completed: 1))
        #expect(report.total.conversion == 0.2)
    }

    @Test func declaredVariantsComeFirstWithZerosThenUndeclaredOnesByName() throws {
        let recipes = try profile("recipes")
        let report = ExperimentsReport(
            period: ReportPeriod(), profile: recipes,
            counts: [
                VariantCounts(experiment: "old", variant: "b", users: 1, conversions: 0),
                VariantCounts(experiment: "auth_prompts", variant: "aggressive", users: 10, conversions: 8),
                VariantCounts(experiment: "old", variant: "a", users: 2, conversions: 1),
            ])
        let declared = recipes.experiments.flatMap { experiment in
            experiment.variants.map { "\(experiment.name)/\($0.name)" }
        }
        #expect(report.variants.map { "\($0.experiment)/\($0.variant)" } == declared + ["old/a", "old/b"])
        let aggressive = try #require(report.variants.first { $0.variant == "aggressive" })
        #expect(aggressive.rate == Proportion(successes: 8, trials: 10))
        #expect(report.variants.first { $0.variant == "control" }?.rate.rate == nil, "no users, no rate")
    }

    @Test func everyMeterOfTheProfileIsReportedWithItsAveragePerUser() throws {
        let voice = try profile("voice")
        let report = UsageReport(
            period: ReportPeriod(), profile: voice,
            counts: [
                "api_minutes": MeterUsageCounts(users: 2, uses: 5, amount: 30, warnedUsers: 1),
                "gone": .init(users: 1, uses: 1, amount: 1, warnedUsers: 0),
            ])
        #expect(report.meters.map(\.meter) == voice.meters.map(\.name))
        let minutes = try #require(report.meters.first)
        #expect(minutes.unit == "minutes" && minutes.averagePerUser == 15 && minutes.warnedUsers == 1)
        let unused = UsageReport(period: ReportPeriod(), profile: voice, counts: [:])
        #expect(unused.meters.allSatisfy { $0.users == 0 && $0.averagePerUser == nil })
    }
}
