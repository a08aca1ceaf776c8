import Foundation

extension GuestMode {
    /// The prompt a refused put into `collection` (refused with `outcome`)
    /// raised for the user, as `nextPrompt` offers it now with the raised
    /// trigger named; nil when the refusal raised no trigger a rule waits
    /// for, or no prompt is due. Call it after the refusal, which raised the
    /// triggers.
    ///
    /// ```swift
    /// let offer = try engine.promptRaised(byRefusalIn: "notes", outcome: .needsAccount, user: guest.id, now: now)
    /// // offer?.context: the rule to show now
    /// ```
    public func promptRaised(
        byRefusalIn collection: String, outcome: CapOutcome, user userID: String, now: Date
    ) throws -> PromptOffer? {
        try promptRaised(by: .recordRefused(collection: collection, outcome: outcome), user: userID, now: now)
    }

    /// The prompt a refused use of `meter` (or a `checkMeterRaisingPrompt`)
    /// raised, as `promptRaised(byRefusalIn:outcome:user:now:)` does for a cap.
    ///
    /// ```swift
    /// let offer = try engine.promptRaised(byMeter: "api_minutes", user: guest.id, now: now)
    /// // offer?.context: the rule to show now
    /// ```
    public func promptRaised(byMeter meter: String, user userID: String, now: Date) throws -> PromptOffer? {
        try promptRaised(by: .meterRefused(meter: meter), user: userID, now: now)
    }

    private func promptRaised(by event: RefusalEvent, user userID: String, now: Date) throws -> PromptOffer? {
        for name in awaitedTriggers(of: event) {
            if let offer = try nextPrompt(user: userID, trigger: name, now: now).offer { return offer }
        }
        return nil
    }

    /// The triggers a refusal raises that some prompt rule waits for, in the profile's order.
    private func awaitedTriggers(of event: RefusalEvent) -> [String] {
        let awaited = Set(profile.prompts.rules.compactMap(\.trigger))
        return profile.prompts.triggers.filter { $0.source.matches(event) && awaited.contains($0.name) }.map(\.name)
    }

    /// The prompt due after a refusal, decided inside `transaction`, so a
    /// refusal and its prompt cost one transaction. After a write that raised
    /// `event`'s triggers (`raised`), it is what `promptRaised` offers: the
    /// prompt `nextPrompt` gives with one of those triggers named; the user's
    /// first experiment assignments are stored, as `nextPrompt` stores them.
    /// A pure read (`raised` false) raises nothing, so it names no trigger:
    /// it is the prompt already due, what `nextPrompt` offers with no
    /// trigger, with the variant the hash gives an unassigned user and
    /// nothing stored (the assignment reads as not yet made, no
    /// `assignedAt`). Nil when no prompt is due.
    func promptOffer(
        after event: RefusalEvent, user userID: String, now: Date, raised: Bool, in transaction: any StoreTransaction
    ) throws -> PromptOffer? {
        let triggers: [String?] = raised ? awaitedTriggers(of: event) : [nil]
        guard !triggers.isEmpty,
            let facts = try transaction.promptSnapshot(of: userID, profile: profile, reads: promptReads, now: now)
        else { return nil }
        let assignments = try profile.experiments.map { experiment in
            if raised { return try transaction.assignment(of: userID, to: experiment, now: now) }
            let stored = try transaction.assignment(of: userID, experiment: experiment.name)
            guard stored == nil, let variant = experiment.variant(for: userID) else {
                return try experiment.assignment(for: userID, stored: stored) { _ in
                    throw GuestModeError(.internalFailure, "a read stored an experiment assignment")
                }
            }
            return ExperimentAssignment(
                experiment: experiment.name, variant: variant.name, bucket: experiment.bucket(for: userID),
                assignedAt: nil, isNew: false)
        }
        let strategy = profile.promptStrategy(assignments: assignments)
        for trigger in triggers {
            let evaluation = profile.prompts.evaluate(facts: facts, trigger: trigger, strategy: strategy, now: now)
            if case let .show(rule) = evaluation.decision {
                return promptOffer(of: rule, user: userID, facts: facts, strategy: strategy, now: now)
            }
        }
        return nil
    }

    /// The offer of a rule the evaluation chose: its copy, or its variant's, with the user's state filled in.
    func promptOffer(
        of rule: PromptRule, user userID: String, facts: PromptFacts, strategy: PromptStrategy, now: Date
    ) -> PromptOffer {
        let content = (strategy.contentOverrides[rule.context]?.applied(to: rule.content) ?? rule.content)
            .filled(facts: facts, now: now)
        return PromptOffer(
            user: userID, context: rule.context, priority: rule.priority, trigger: rule.trigger, content: content,
            variants: strategy.variants)
    }
}
