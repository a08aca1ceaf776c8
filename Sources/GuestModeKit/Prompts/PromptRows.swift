import Foundation
import Synchronization

/// The prompt rows of one transaction (see `StoreTransaction`): prompt
/// states, the outcome history and the flags that remember raised triggers.
package protocol PromptRows {
    /// What the prompt policy reads about the user itself: its state and
    /// prompt state, first-seen time, counters and the outcomes `history`
    /// asks for (oldest first, then in recording order), with no limits,
    /// meters, raised triggers or reset time; and the user, as
    /// `user(_:locking:)` reads it, from the same row. Nil when there is no
    /// such user.
    func promptFacts(
        of userID: String, reading history: PromptHistoryRead
    ) throws -> (
        facts: PromptFacts, user: User
    )?

    /// The user's prompt state, or nil when there is no such user.
    func promptState(of userID: String, locking: Bool) throws -> PromptState?

    /// The prompt state of each of `userIDs` that exists, by id. With
    /// `locking`, every row found stays locked (taken in id order).
    func promptStates(of userIDs: [String], locking: Bool) throws -> [String: PromptState]

    /// Sets the user's prompt state.
    func setPromptState(of userID: String, to state: PromptState) throws

    /// Sets the prompt state of each user named.
    func setPromptStates(_ states: [String: PromptState]) throws

    /// The user's recorded outcomes, ordered by time, then by recording order.
    func promptOutcomes(of userID: String) throws -> [PromptHistoryEntry]

    /// Appends one outcome to the user's history.
    func appendPromptOutcome(_ entry: PromptHistoryEntry, of userID: String) throws

    /// Appends a log of outcomes, keeping its order among outcomes of one time.
    func appendPromptOutcomes(_ records: [PromptRecord]) throws

    /// The user's flags whose names start with `prefix`, with when each was
    /// set, by full flag name.
    func userFlags(of userID: String, prefix: String) throws -> [String: Date]

    /// Sets the user's flag at `time`, unless it was set later: a flag
    /// remembers the latest time it was raised.
    func raiseUserFlag(_ flag: String, of userID: String, at time: Date) throws

    /// The time of the user's latest event of `action`, or nil when it has none.
    func lastEventTime(of userID: String, action: String) throws -> Date?
}

/// Which of a user's prompt outcomes `PromptRows.promptFacts` reads.
package enum PromptHistoryRead: Sendable, Equatable {
    /// Every outcome (`prompt history`).
    case all
    /// Only the outcomes a decision reads (`PromptPolicy.evaluate`): the
    /// latest of each context (its `once`, its `reshow_after`, and the
    /// latest of them all for the cooldown), the latest `never` (against the
    /// last reset), and every `shown` after `shownAfter`, the start of the
    /// window `max_per_window` counts in (nil: the policy counts none). They
    /// decide as the whole history does, and their number does not grow with
    /// it: read whole, 365 outcomes took a `prompt next` from 745 k to
    /// 3,442 k instructions (bench/results.md, "Serving, round 13").
    case decision(shownAfter: Date?)
}

extension PromptRows {
    /// The facts with every outcome (`promptFacts(of:reading:)`, `.all`).
    func promptFacts(of userID: String) throws -> (facts: PromptFacts, user: User)? {
        try promptFacts(of: userID, reading: .all)
    }
}

extension StoreTransaction {
    /// Appends an outcome and moves the user's prompt state
    /// (`PromptState.after`); nil, changing nothing, when there is no such
    /// user. The user's row is locked first, so two outcomes recorded at
    /// once both count.
    func recordPromptOutcome(_ entry: PromptHistoryEntry, of userID: String) throws -> PromptState? {
        guard let current = try promptState(of: userID, locking: true) else { return nil }
        let state = current.after(entry.outcome)
        try appendPromptOutcome(entry, of: userID)
        try setPromptState(of: userID, to: state)
        return state
    }

    /// The facts, with where the user stands now against the collections'
    /// caps and the meters the prompts read, the triggers raised for it
    /// (when each was last raised) and its last `prompt reset`. Nil when
    /// there is no such user. The collections and meters looked up are those
    /// some rule's conditions read and those the prompts' content names in a
    /// placeholder (`Profile.promptInputs`): counting the records of a
    /// collection nothing reads cost a `prompt next` a look at every record
    /// the user holds. With `onlyWhatRulesRead` (a decision whose content is
    /// not shown: a replay), only the conditions' are, which decides the
    /// same. `reads` is the engine's, which works both out once for its
    /// profile. `mayHaveReset` false (a replay whose log carried no `prompt
    /// reset` event for the user) skips looking for the last reset, which is
    /// then known to be none.
    func promptSnapshot(
        of userID: String, profile: Profile, reads: PromptReads, now: Date, onlyWhatRulesRead: Bool = false,
        mayHaveReset: Bool = true
    ) throws -> PromptFacts? {
        let window = profile.prompts.maximumShownPerWindow == nil ? nil : profile.prompts.window
        let history = PromptHistoryRead.decision(shownAfter: window.map { $0.subtracted(from: now) })
        let read = reads.inputs(of: profile, onlyWhatRulesRead: onlyWhatRulesRead)
        let collections = profile.collections.filter { read.collections.contains($0.name) }
        let meters = profile.meters.filter { read.meters.contains($0.name) }
        // Everything the decision reads, asked for at once.
        guard
            let found = try promptFactsAndInputs(
                of: userID, reading: history, collections: collections.map(\.name),
                meters: meters.map { ($0, $0.reset.periodStart(containing: now)) },
                flagPrefix: PromptTrigger.flagPrefix,
                lastEventOf: mayHaveReset ? PromptTrigger.resetEventAction : nil, at: now)
        else { return nil }
        var facts = found.facts
        let user = found.user
        let inputs = found.inputs
        if !collections.isEmpty || !meters.isEmpty {
            // One tier for every limit and meter: the plans are read once, not once for each.
            let level = profile.tier(for: user.state, grants: inputs.plans, now: now)
            for collection in collections {
                facts.limits[collection.name] = profile.collectionLimit(
                    collection.name, tier: level, used: inputs.recordCounts[collection.name] ?? 0)
            }
            // The whole plan history only for meters with grants, whose draws need it, and read once for them all.
            var everyPlan: [PlanGrant]?
            for meter in meters {
                let grants = inputs.meterGrants[meter.name] ?? []
                if !grants.isEmpty, everyPlan == nil { everyPlan = try planGrants(of: userID) }
                facts.meters[meter.name] = try meterStatus(
                    of: user, meter: meter, tier: level, used: inputs.meterUsage[meter.name] ?? .zero,
                    grants: grants, plans: everyPlan, profile: profile, now: now)
            }
        }
        for (flag, raisedAt) in inputs.flags {
            facts.raisedTriggers[String(flag.dropFirst(PromptTrigger.flagPrefix.count))] = raisedAt
        }
        facts.resetAt = inputs.lastEventTime
        return facts
    }
}

/// The collections and meters an engine's prompt decisions read
/// (`Profile.promptInputs`, `PromptPolicy.conditionInputs`), each worked out
/// on the first decision that needs it and kept: an engine's profile never
/// changes, and working them out was 21 k instructions of every served
/// `prompt next` (bench/results.md, "Serving, round 17").
package final class PromptReads: Sendable {
    package typealias Inputs = (collections: Set<String>, meters: Set<String>)
    private let kept = Mutex<(shown: Inputs?, decided: Inputs?)>((nil, nil))

    package init() {}

    /// What a decision reads whose content is shown, or with
    /// `onlyWhatRulesRead` only what its rules' conditions read; `profile`
    /// must be the engine's, the same on every call.
    func inputs(of profile: Profile, onlyWhatRulesRead: Bool) -> Inputs {
        if let known = kept.withLock({ onlyWhatRulesRead ? $0.decided : $0.shown }) { return known }
        let inputs = onlyWhatRulesRead ? profile.prompts.conditionInputs : profile.promptInputs
        kept.withLock { kept in
            if onlyWhatRulesRead { kept.decided = inputs } else { kept.shown = inputs }
        }
        return inputs
    }
}

extension PromptPolicy {
    /// The collections and meters the rules' conditions read: the only
    /// limits and meter statuses a decision depends on (content
    /// placeholders may read others, to show them).
    var conditionInputs: (collections: Set<String>, meters: Set<String>) {
        var collections: Set<String> = []
        var meters: Set<String> = []
        for condition in rules.flatMap(\.conditions) {
            switch condition {
            case let .limitReached(collection, _), let .limitRemaining(collection, _): collections.insert(collection)
            case let .meterPercentUsed(meter, _), let .meterRemaining(meter, _), let .meterExhausted(meter):
                meters.insert(meter)
            case .counter, .daysSinceFirstSeen, .state: break
            }
        }
        return (collections, meters)
    }
}

extension Profile {
    /// The collections and meters a prompt decision reads to decide and to
    /// fill its content: the rules' conditions' (`conditionInputs`), and
    /// those a placeholder of any rule's content or of any experiment's
    /// content override names. Read on every `prompt next`, so the texts are
    /// scanned as bytes for `{limit.NAME.` and `{meter.NAME.` (a placeholder
    /// has no other spelling: the profile refuses it) without a string made
    /// for any text that names nothing; an escaped `{{limit.…` only adds a
    /// look-up that is not needed.
    var promptInputs: (collections: Set<String>, meters: Set<String>) {
        var (collections, meters) = prompts.conditionInputs
        guard collections.count < self.collections.count || meters.count < self.meters.count else {
            return (collections, meters)
        }
        func scan(_ text: String) {
            var text = text
            text.withUTF8 { bytes in
                var index = 0
                while let brace = bytes[index...].firstIndex(of: UInt8(ascii: "{")) {
                    index = brace + 1
                    let rest = bytes[index...]
                    let isLimit = rest.starts(with: "limit.".utf8)
                    guard isLimit || rest.starts(with: "meter.".utf8) else { continue }
                    let nameStart = index + 6
                    guard let dot = bytes[nameStart...].firstIndex(of: UInt8(ascii: ".")) else { continue }
                    let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[nameStart..<dot]), as: UTF8.self)
                    if isLimit {
                        collections.insert(name)
                    } else {
                        meters.insert(name)
                    }
                    index = dot
                }
            }
        }
        func scan(_ content: PromptContent) {
            scan(content.title)
            scan(content.message)
            scan(content.primaryAction)
            scan(content.secondaryAction)
            content.benefits.forEach(scan)
        }
        for rule in prompts.rules { scan(rule.content) }
        for experiment in experiments {
            for variant in experiment.variants {
                for override in variant.contentOverrides.values {
                    [override.title, override.message, override.primaryAction, override.secondaryAction]
                        .forEach { $0.map(scan) }
                    override.benefits?.forEach(scan)
                }
            }
        }
        return (collections, meters)
    }
}
