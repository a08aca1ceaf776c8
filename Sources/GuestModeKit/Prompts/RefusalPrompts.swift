import Foundation

extension GuestMode {
    /// The prompt a refused put into `collection` (refused with `outcome`)
    /// raised for the user, as `nextPrompt` offers it now with the raised
    /// trigger named; nil when the refusal raised no trigger a rule waits
    /// for, or no prompt is due. Call it after the refusal, which raised the
    /// triggers.
    public func promptRaised(
        byRefusalIn collection: String, outcome: CapOutcome, user userID: String, now: Date
    ) throws -> PromptOffer? {
        try promptRaised(by: .recordRefused(collection: collection, outcome: outcome), user: userID, now: now)
    }

    /// The prompt a refused use or check of `meter` raised, as
    /// `promptRaised(byRefusalIn:outcome:user:now:)` does for a cap.
    public func promptRaised(byMeter meter: String, user userID: String, now: Date) throws -> PromptOffer? {
        try promptRaised(by: .meterRefused(meter: meter), user: userID, now: now)
    }

    private func promptRaised(by event: RefusalEvent, user userID: String, now: Date) throws -> PromptOffer? {
        let awaited = Set(profile.prompts.rules.compactMap(\.trigger))
        for trigger in profile.prompts.triggers where trigger.source.matches(event) && awaited.contains(trigger.name) {
            if let offer = try nextPrompt(user: userID, trigger: trigger.name, now: now).offer { return offer }
        }
        return nil
    }
}
