import Foundation
import Testing

@testable import GuestModeKit

/// A prompt decision reads only the outcomes that decide it
/// (`PromptHistoryRead.decision`), on every backend: the same verdicts and
/// the same decision as the whole history gives, at every moment, from a
/// read that does not grow with the history.
@Suite struct PromptHistoryReadTests {
    /// `recipes`: a 24 h cooldown, at most 3 prompts shown in 7 days, rules shown once and one reshown after 7 days.
    static let contexts = ["first_recipe_success", "viral_content_created", "reengagement", "daily_limit_reached"]

    /// Outcomes of `user` over 60 days from a fixed seed: contexts and outcomes mixed, some at the same
    /// moment, and for `withNever` a `never` early on that is not its context's latest outcome.
    static func history(seed: UInt64, withNever: Bool) -> [PromptHistoryEntry] {
        var random = SplitMix64(state: seed)
        func next(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &random) }
        let outcomes: [PromptOutcome] = [.shown, .shown, .shown, .dismissed, .later, .completed]
        var entries: [PromptHistoryEntry] = []
        var time = day(1)
        for index in 0..<150 {
            // Every tenth outcome at the same moment as the one before it.
            if index % 10 != 0 { time = time.addingTimeInterval(Double(next(20 * 3600))) }
            entries.append(
                PromptHistoryEntry(
                    context: contexts[next(contexts.count)], outcome: outcomes[next(outcomes.count)], at: time))
        }
        if withNever {
            entries.insert(PromptHistoryEntry(context: contexts[0], outcome: .never, at: day(2)), at: 5)
        }
        return entries
    }

    @Test(arguments: StoreBackend.allCases)
    func theDecisionsOutcomesDecideAsTheWholeHistory(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let histories = [
            "steady": Self.history(seed: 7, withNever: false),
            "said-never": Self.history(seed: 11, withNever: true),
            "none": [],
        ]
        for (user, entries) in histories {
            try store.createUser(newUser(user), credentials: nil)
            var order = SplitMix64(state: 3)
            try store.write { transaction in
                // Recorded out of time order too: the reads order by time, then by recording order.
                for entry in entries.shuffled(using: &order) {
                    try transaction.appendPromptOutcome(entry, of: user)
                }
            }
        }
        let strategy = profile.promptStrategy(assignments: [])
        var moments = 0
        for user in histories.keys.sorted() {
            let whole = try store.read { try $0.promptOutcomes(of: user) }
            #expect(whole.count == histories[user]?.count)
            for hours in stride(from: 0, through: 70 * 24, by: 7) {
                let now = day(1).addingTimeInterval(Double(hours) * 3600)
                let facts = try #require(
                    try store.read { try $0.promptSnapshot(of: user, profile: profile, reads: PromptReads(), now: now) }
                )
                // The outcomes of each context's latest, the latest `never`, and those shown in the window.
                let windowStart = try #require(profile.prompts.window).subtracted(from: now)
                let shownInWindow = whole.filter { $0.outcome == .shown && $0.at > windowStart }.count
                #expect(facts.history.count <= Self.contexts.count + 1 + shownInWindow)
                #expect(facts.history == facts.history.sorted { $0.at < $1.at }, "oldest first")
                var everything = facts
                everything.history = whole
                let reduced = profile.prompts.evaluate(facts: facts, trigger: nil, strategy: strategy, now: now)
                let expected = profile.prompts.evaluate(facts: everything, trigger: nil, strategy: strategy, now: now)
                #expect(reduced == expected, "\(user) at \(Timestamp.format(now))")
                moments += 1
            }
        }
        #expect(moments == 3 * (70 * 24 / 7 + 1))
        // `prompt history` still reads every outcome.
        #expect(try GuestMode(profile: profile, store: store).promptHistory(user: "steady").outcomes.count == 150)
    }
}
