import Foundation

/// A call the engine refused for a reason the app acts on (a cap reached, a meter used up): the failure,
/// whose code says what to ask the person for (`needs_account`, `needs_premium`, `meter_exhausted`) and
/// whose sentence says what was refused, where the user stands and what lifts it, with the prompt the
/// refusal raised. The engine words it once; the command line throws `failure` (exit 10, 11, 12 from its
/// kind) and the server answers it (403, 402 with the prompt), neither composing a sentence of its own.
///
/// ```swift
/// let result = try engine.putRecord(user: id, collection: "subscriptions", key: "k", json: "{}", now: now)
/// if let refusal = result.refusal {
///     show(refusal.prompt)          // "Create a free account — save your 5 subscriptions"
///     print(refusal.failure.message) // "needs-account: 5/5 subscriptions (tier guest) is at its cap; …"
/// }
/// ```
public struct Refusal: Sendable, Equatable {
    /// The failure the refusal is, with its sentence.
    public var failure: GuestModeError
    /// The prompt to show for the refusal, as `nextPrompt` offers it now: the one the refusal's
    /// triggers made due or, for a gate that only reads (`checkMeter`) and raises nothing, the one
    /// already due for the user; nil when none is due.
    public var prompt: PromptOffer?

    package init(failure: GuestModeError, prompt: PromptOffer?) {
        self.failure = failure
        self.prompt = prompt
    }

    /// A put refused with `outcome` at `limit`'s cap.
    static func cap(_ limit: CollectionLimit, outcome: CapOutcome, prompt: PromptOffer?) -> Refusal? {
        let (code, advice): (GuestModeError.Code, String)
        switch outcome {
        case .allowed: return nil
        case .needsAccount: (code, advice) = (.needsAccount, "sign in (link an identity) to add more")
        case .needsPremium: (code, advice) = (.needsPremium, "a premium plan lifts the cap")
        }
        return Refusal(
            failure: GuestModeError(
                code, "\(outcome.rawValue): \(limit.summary) is at its cap; nothing was stored; \(advice)"),
            prompt: prompt)
    }

    /// A use or a check of a meter that does not fit: "not enough left" while some remains, "meter
    /// exhausted" once nothing does; `recorded` when overage recorded the use in full anyway.
    static func meter(
        _ status: MeterStatus, requested: MeterAmount?, recorded: Bool, prompt: PromptOffer?
    ) -> Refusal {
        let remaining = status.remaining ?? .zero
        let what =
            if let requested, !remaining.isZero, !recorded {
                "not enough left: \(requested) \(status.unit) asked, \(remaining) left"
            } else {
                "meter exhausted"
            }
        let outcome =
            recorded ? "the usage was recorded in full (overage); the allowance is now used up" : "nothing was recorded"
        return Refusal(
            failure: GuestModeError(.meterExhausted, "\(what): \(status.summary); \(outcome)"), prompt: prompt)
    }
}

extension CollectionLimit {
    /// Where the user stands, for people: `5/5 subscriptions (tier guest)`.
    public var summary: String {
        switch (used, cap) {
        case let (used?, cap?): "\(used)/\(cap) \(collection) (tier \(tier.rawValue))"
        case let (used?, nil): "\(used) \(collection), no cap (tier \(tier.rawValue))"
        case (nil, _): "no cap on \(collection) (tier \(tier.rawValue))"
        }
    }
}

extension MeterStatus {
    /// Where the user stands, for people:
    /// `api_minutes 45/60 minutes used (75%), 15 left, level warning`.
    public var summary: String {
        guard let allowance else {
            return "\(meter) \(used) \(unit) used, unlimited (tier \(tier.rawValue))"
        }
        let percent = percentUsed.map { " (\(Self.whole($0.rounded()))%)" } ?? ""
        let extra = granted.isPositive ? " (\(granted) granted)" : ""
        return
            "\(meter) \(used)/\(allowance)\(extra) \(unit) used\(percent), \(remaining ?? .zero) left, level \(level.rawValue)"
    }

    /// A rounded percentage as people write it: 75, not 75.0.
    private static func whole(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(format: "%.2f", value)
    }
}
