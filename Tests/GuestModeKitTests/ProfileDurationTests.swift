import Foundation
import Testing

@testable import GuestModeKit

/// Profile durations go through the one parser; meters declare their overage.
@Suite struct ProfileDurationTests {
    @Test func isoDurationsAndOverageAreRead() throws {
        let text = """
            name: demo
            version: 1
            meters:
              minutes:
                overage: allow
              calls:
            tiers: { guest: { meters: { minutes: 10, calls: 5 } } }
            plans:
              premium: { price: 1, period: P1M, trial: P7D, tier: premium }
            prompts:
              cooldown: PT24H
            """
        let profile = try ProfileLoader.parse(text, file: "demo.yaml")
        #expect(profile.meter(named: "minutes")?.overage == .allow)
        #expect(profile.meter(named: "calls")?.overage == .refuse)
        #expect(profile.plan(named: "premium")?.billingPeriod == TimeSpan(amount: 1, unit: .months))
        #expect(profile.plan(named: "premium")?.trial == TimeSpan(amount: 7, unit: .days))
    }

    @Test func ambiguousZeroAndUnknownValuesAreFileLineErrors() throws {
        let text = """
            name: demo
            version: 1
            meters:
              minutes:
                overage: maybe
            tiers: { guest: }
            plans:
              premium: { price: 1, period: 1M, trial: 0d, tier: premium }
            """
        do {
            _ = try ProfileLoader.parse(text, file: "demo.yaml")
            Issue.record("expected the profile to be refused")
        } catch let error as InvalidProfileError {
            #expect(error.description.contains("demo.yaml:5:"), "\(error.description)")
            #expect(error.description.contains("P1M") && error.description.contains("1 month"))
            #expect(error.description.contains("zero"))
        }
    }
}
