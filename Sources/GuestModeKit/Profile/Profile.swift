import Foundation

/// A declarative description of one app's guest mode (see guestmode-profile(5)).
/// Everything the engine decides for an app comes from here, never from
/// profile-specific code.
public struct Profile: Codable, Sendable, Equatable {
    public var name: String
    public var version: Int
    public var summary: String
    /// The owner written on records created before any user existed.
    public var guestOwner: String
    public var allowsFreeFormActions: Bool
    public var identity: IdentityPolicy
    public var collections: [RecordCollection]
    public var actions: [String]
    public var meters: [Meter]
    /// Always three, in order: guest, account, premium; caps and allowances
    /// are already resolved through inheritance from the tier below.
    public var tiers: [Tier]
    public var plans: [Plan]
    public var prompts: PromptPolicy
    public var experiments: [Experiment]
    public var backup: BackupPolicy
    public var migration: MigrationPolicy
    /// How a store bound to an earlier version of this profile is moved to this one.
    public var upgrade: ProfileUpgrade?

    public func collection(named name: String) -> RecordCollection? { collections.first { $0.name == name } }
    public func meter(named name: String) -> Meter? { meters.first { $0.name == name } }
    public func plan(named name: String) -> Plan? { plans.first { $0.name == name } }
    /// The tier at `level`. A profile from `ProfileLoader` has all three; one
    /// decoded from elsewhere may not, and a missing tier is resolved as the
    /// loader resolves an undeclared one: the caps and allowances of the tier
    /// below, or none at all (unlimited) below the lowest.
    public func tier(_ level: TierLevel) -> Tier {
        if let tier = tiers.first(where: { $0.level == level }) { return tier }
        let below = tiers.filter { $0.level < level }.max { $0.level < $1.level }
        return Tier(
            level: level, caps: below?.caps ?? [:], allowances: below?.allowances ?? [:],
            whenCapped: level == .guest ? .needsAccount : .needsPremium)
    }
    public func experiment(named name: String) -> Experiment? { experiments.first { $0.name == name } }
}

public struct IdentityPolicy: Codable, Sendable, Equatable {
    public var providers: [String]
    public var maximumProvidersPerUser: Int
}

/// A kind of record the profile declares (`collections:`), with its merge rules.
public struct RecordCollection: Codable, Sendable, Equatable {
    public var name: String
    /// Record fields that together must be unique per owner (e.g. a habit and
    /// a day); adoption rewrites records keyed by them.
    public var uniqueFields: [String]
    /// What a union merge does with two records under one key.
    public var onMergeConflict: MergeConflictRule
}

public enum MergeConflictRule: String, Codable, Sendable, CaseIterable {
    /// Keep both records, the guest's under a suffixed key.
    case keepBoth = "keep-both"
    /// Keep the record updated last; the other is reported.
    case newestWins = "newest-wins"
}

public enum TierLevel: String, Codable, Sendable, CaseIterable, Comparable {
    case guest, account, premium

    public static func < (lhs: TierLevel, rhs: TierLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// A limit on a count or an amount; `nil` means unlimited.
public typealias Limit = Double?

public struct Tier: Codable, Sendable, Equatable {
    public var level: TierLevel
    /// Per-collection record caps; a collection missing here is unlimited.
    public var caps: [String: Int]
    /// Per-meter allowances; a meter missing here is unlimited.
    public var allowances: [String: Double]
    /// What a refused write tells the app to ask for.
    public var whenCapped: CapOutcome

    public func cap(for collection: String) -> Int? { caps[collection] }
    public func allowance(for meter: String) -> Double? { allowances[meter] }
}

public enum CapOutcome: String, Codable, Sendable, CaseIterable {
    case allowed
    case needsAccount = "needs-account"
    case needsPremium = "needs-premium"

    public var failureKind: FailureKind? {
        switch self {
        case .allowed: nil
        case .needsAccount: .needsAccount
        case .needsPremium: .needsPremium
        }
    }
}

public struct Meter: Codable, Sendable, Equatable {
    public var name: String
    public var unit: String
    public var reset: MeterReset
    /// Ascending thresholds, each a percentage of the allowance used.
    public var warnings: [MeterWarning]
    /// What `meter use` does by default with usage past the allowance.
    public var overage: MeterOverage = .refuse

    package init(
        name: String, unit: String, reset: MeterReset, warnings: [MeterWarning], overage: MeterOverage = .refuse
    ) {
        self.name = name
        self.unit = unit
        self.reset = reset
        self.warnings = warnings
        self.overage = overage
    }

    enum CodingKeys: String, CodingKey { case name, unit, reset, warnings, overage }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        unit = try container.decode(String.self, forKey: .unit)
        reset = try container.decode(MeterReset.self, forKey: .reset)
        warnings = try container.decode([MeterWarning].self, forKey: .warnings)
        overage = try container.decodeIfPresent(MeterOverage.self, forKey: .overage) ?? .refuse
    }
}

/// Usage that goes past the allowance: `refuse` records nothing (the use
/// is refused whole); `allow` records it in full, since it already happened,
/// and leaves the meter exhausted.
public enum MeterOverage: String, Codable, Sendable, CaseIterable {
    case refuse, allow
}

public enum MeterReset: String, Codable, Sendable, CaseIterable {
    case never, daily, monthly
}

public struct MeterWarning: Codable, Sendable, Equatable {
    public var percent: Double
    public var level: MeterLevel
}

public enum MeterLevel: String, Codable, Sendable, CaseIterable, Comparable {
    case none, warning, critical, exhausted

    public static func < (lhs: MeterLevel, rhs: MeterLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

public struct Plan: Codable, Sendable, Equatable {
    public var name: String
    public var price: Decimal
    public var currency: String
    public var billingPeriod: TimeSpan
    public var trial: TimeSpan?
    /// The tier an active plan lifts its holder to.
    public var tier: TierLevel
}

public enum PromptPriority: String, Codable, Sendable, CaseIterable, Comparable {
    case low, medium, high, critical

    public var rank: Int { PromptPriority.allCases.firstIndex(of: self)! }
    public static func < (lhs: PromptPriority, rhs: PromptPriority) -> Bool { lhs.rank < rhs.rank }
}

public struct PromptPolicy: Codable, Sendable, Equatable {
    /// Minimum time between any two prompts shown to one user.
    public var cooldown: TimeSpan?
    /// At most `maximumShown` prompts in any rolling `window`.
    public var window: TimeSpan?
    public var maximumShownPerWindow: Int?
    public var rules: [PromptRule]
    /// Named moments a refusal raises for the user (`prompts.triggers`).
    public var triggers: [PromptTrigger] = []

    public func trigger(named name: String) -> PromptTrigger? { triggers.first { $0.name == name } }
}

/// Who a prompt is for. Sign-in prompts stop once the user is linked or
/// completed sign-in; upgrade prompts (premium, paywalls) do not.
public enum PromptKind: String, Codable, Sendable, CaseIterable {
    case signIn = "sign-in"
    case upgrade
}

/// A trigger the profile declares: a refusal that raises it for the user,
/// so the next `prompt next` sees it without the app tracking anything.
public struct PromptTrigger: Codable, Sendable, Equatable {
    public enum Source: Codable, Sendable, Equatable {
        /// A `record put` into the collection refused by the cap; with an
        /// outcome, only refusals with that outcome.
        case collection(String, outcome: CapOutcome?)
        /// A `meter use` refused, or a `meter check` answered "not allowed".
        case meter(String)
    }

    public var name: String
    public var source: Source

    package init(name: String, source: Source) {
        self.name = name
        self.source = source
    }
}

public struct PromptRule: Codable, Sendable, Equatable {
    public var context: String
    public var priority: PromptPriority
    /// Shown at most once, ever.
    public var isOnce: Bool
    /// After being shown, eligible again only this long after.
    public var reshowAfter: TimeSpan?
    /// Offered only when `prompt next --trigger` names it.
    public var trigger: String?
    public var conditions: [Condition]
    public var content: PromptContent
    public var kind: PromptKind = .signIn
}

public struct PromptContent: Codable, Sendable, Equatable {
    public var title: String
    public var message: String
    public var benefits: [String]
    public var primaryAction: String
    public var secondaryAction: String
    public var style: String
}

/// Fields of a prompt's content an experiment variant replaces; nil keeps the rule's.
public struct PromptContentOverride: Codable, Sendable, Equatable {
    public var title: String?
    public var message: String?
    public var benefits: [String]?
    public var primaryAction: String?
    public var secondaryAction: String?
    public var style: String?

    package init(
        title: String? = nil, message: String? = nil, benefits: [String]? = nil, primaryAction: String? = nil,
        secondaryAction: String? = nil, style: String? = nil
    ) {
        self.title = title
        self.message = message
        self.benefits = benefits
        self.primaryAction = primaryAction
        self.secondaryAction = secondaryAction
        self.style = style
    }

    public func applied(to content: PromptContent) -> PromptContent {
        PromptContent(
            title: title ?? content.title, message: message ?? content.message, benefits: benefits ?? content.benefits,
            primaryAction: primaryAction ?? content.primaryAction,
            secondaryAction: secondaryAction ?? content.secondaryAction, style: style ?? content.style)
    }
}

/// One clause of a prompt rule; a rule holds when all of its clauses do.
public enum Condition: Codable, Sendable, Equatable {
    case counter(action: String, comparison: Comparison)
    case daysSinceFirstSeen(Comparison)
    case state(UserState)
    /// The collection's cap is reached (records held ≥ cap; never for an
    /// unlimited tier); with an outcome, a new record would get exactly it.
    case limitReached(collection: String, outcome: CapOutcome?)
    /// Records that still fit under the cap (false for an unlimited tier).
    case limitRemaining(collection: String, comparison: Comparison)
    /// Percentage of the allowance used in the current period (false when unlimited).
    case meterPercentUsed(meter: String, comparison: Comparison)
    /// Amount left of the allowance (false when unlimited).
    case meterRemaining(meter: String, comparison: Comparison)
    /// Nothing of the allowance remains.
    case meterExhausted(meter: String)
}

public struct Comparison: Codable, Sendable, Equatable {
    public enum Operator: String, Codable, Sendable, CaseIterable {
        case equals
        case atLeast = "at_least"
        case atMost = "at_most"
        /// Strictly less than.
        case below
        /// Strictly greater than.
        case above
    }

    public var comparator: Operator
    public var value: Double

    public func holds(for actual: Double) -> Bool {
        switch comparator {
        case .equals: actual == value
        case .atLeast: actual >= value
        case .atMost: actual <= value
        case .below: actual < value
        case .above: actual > value
        }
    }
}

public enum UserState: String, Codable, Sendable, CaseIterable {
    case anonymous, linked
}

public struct Experiment: Codable, Sendable, Equatable {
    public var name: String
    public var seed: String
    public var coverage: Double
    public var variants: [Variant]
}

public struct Variant: Codable, Sendable, Equatable {
    public var name: String
    public var weight: Double
    /// Overrides of the prompt policy for users in this variant.
    public var promptCooldown: TimeSpan?
    /// When set, only these prompt contexts are offered to this variant.
    public var enabledContexts: [String]?
    /// Per prompt context, the copy this variant shows instead of the rule's.
    public var contentOverrides: [String: PromptContentOverride] = [:]
}

public struct BackupPolicy: Codable, Sendable, Equatable {
    /// Queue a backup of a user in the outbox on every change to their data.
    public var queuesOnChange: Bool
    public var format: String
}

public struct MigrationPolicy: Codable, Sendable, Equatable {
    public var steps: [MigrationStep]
}

public struct MigrationStep: Codable, Sendable, Equatable {
    public var name: String
    /// Collections moved by this step; empty for steps that move the user's
    /// non-record data (`profile`) or finish up (`cleanup`).
    public var collections: [String]
}

public struct ProfileUpgrade: Codable, Sendable, Equatable {
    /// The version this upgrade starts from.
    public var fromVersion: Int
    public var steps: [DataMigration]
}

/// A change to stored data that a new profile version declares.
public enum DataMigration: Codable, Sendable, Equatable {
    case renameCollection(from: String, to: String)
    case renameField(collection: String, from: String, to: String)
}
