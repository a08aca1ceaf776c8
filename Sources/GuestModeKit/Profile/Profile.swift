import Foundation

/// A declarative description of one app's guest mode (see guestmode-profile(5)).
/// Everything the engine decides for an app comes from here, never from
/// profile-specific code.
public struct Profile: Codable, Sendable, Equatable {
    /// The profile's name, such as `subscriptions`.
    public var name: String
    /// The profile's version; a store bound to an earlier one moves up through `upgrade`.
    public var version: Int
    /// One line saying what the profile is for.
    public var summary: String
    /// The owner written on records created before any user existed.
    public var guestOwner: String
    /// True when events may name actions the profile does not list.
    public var allowsFreeFormActions: Bool
    /// Which identity providers a user may link, and how many.
    public var identity: IdentityPolicy
    /// The kinds of record users keep.
    public var collections: [RecordCollection]
    /// The actions events may name.
    public var actions: [String]
    /// The metered resources.
    public var meters: [Meter]
    /// Always three, in order: guest, account, premium; caps and allowances
    /// are already resolved through inheritance from the tier below.
    public var tiers: [Tier]
    /// The plans a user may be granted.
    public var plans: [Plan]
    /// When to ask a user to sign in or upgrade.
    public var prompts: PromptPolicy
    /// The experiments users are assigned to.
    public var experiments: [Experiment]
    /// How users are backed up.
    public var backup: BackupPolicy
    /// How a guest's data moves into an account.
    public var migration: MigrationPolicy
    /// How a store bound to an earlier version of this profile is moved to this one.
    public var upgrade: ProfileUpgrade?
    /// Who is told about what guestmode decides (`webhooks:`).
    public var webhooks: WebhookSettings = WebhookSettings()

    /// The collection named `name`, if the profile declares one.
    public func collection(named name: String) -> RecordCollection? { collections.first { $0.name == name } }
    /// The meter named `name`, if the profile declares one.
    public func meter(named name: String) -> Meter? { meters.first { $0.name == name } }
    /// The plan named `name`, if the profile declares one.
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
    /// The experiment named `name`, if the profile declares one.
    public func experiment(named name: String) -> Experiment? { experiments.first { $0.name == name } }
}

/// Which identity providers a user may link.
public struct IdentityPolicy: Codable, Sendable, Equatable {
    /// Providers accepted, such as `apple` and `google`.
    public var providers: [String]
    /// How many identities one user may link.
    public var maximumProvidersPerUser: Int
}

/// A kind of record the profile declares (`collections:`), with its merge rules.
public struct RecordCollection: Codable, Sendable, Equatable {
    /// The collection's name.
    public var name: String
    /// Record fields that together must be unique per owner (e.g. a habit and
    /// a day); adoption rewrites records keyed by them.
    public var uniqueFields: [String]
    /// What a union merge does with two records under one key.
    public var onMergeConflict: MergeConflictRule
}

/// What a merge does with two records under one key.
public enum MergeConflictRule: String, Codable, Sendable, CaseIterable {
    /// Keep both records, the guest's under a suffixed key.
    case keepBoth = "keep-both"
    /// Keep the record updated last; the other is reported.
    case newestWins = "newest-wins"
}

/// The three tiers a user can be in, lowest first.
public enum TierLevel: String, Codable, Sendable, CaseIterable, Comparable {
    case guest, account, premium

    /// Orders tiers from the lowest.
    public static func < (lhs: TierLevel, rhs: TierLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// The caps and allowances of one tier.
public struct Tier: Codable, Sendable, Equatable {
    /// Which tier.
    public var level: TierLevel
    /// Per-collection record caps; a collection missing here is unlimited.
    public var caps: [String: Int]
    /// Per-meter allowances; a meter missing here is unlimited.
    public var allowances: [String: Double]
    /// What a refused write tells the app to ask for.
    public var whenCapped: CapOutcome

    /// The tier's cap for `collection`; nil when unlimited.
    public func cap(for collection: String) -> Int? { caps[collection] }
    /// The tier's allowance for `meter`; nil when unlimited.
    public func allowance(for meter: String) -> Double? { allowances[meter] }
}

/// What a write under a cap gets: allowed, or what to ask the user for.
public enum CapOutcome: String, Codable, Sendable, CaseIterable {
    case allowed
    case needsAccount = "needs-account"
    case needsPremium = "needs-premium"

    /// The failure kind a caller reports a refusal as; nil for `allowed`.
    public var failureKind: FailureKind? {
        switch self {
        case .allowed: nil
        case .needsAccount: .needsAccount
        case .needsPremium: .needsPremium
        }
    }
}

/// A metered resource, such as minutes of an API.
public struct Meter: Codable, Sendable, Equatable {
    /// The meter's name.
    public var name: String
    /// The unit it counts, such as `minutes`.
    public var unit: String
    /// When usage starts again from zero.
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

    /// Reads a meter; `overage` defaults to `refuse`.
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

/// When a meter's usage starts again from zero (monthly and daily in UTC).
public enum MeterReset: String, Codable, Sendable, CaseIterable {
    case never, daily, monthly
}

/// A threshold that warns once per period when usage crosses it.
public struct MeterWarning: Codable, Sendable, Equatable {
    /// The threshold, as a percentage of the allowance.
    public var percent: Double
    /// The level reached when it is crossed.
    public var level: MeterLevel
}

/// How close usage is to the allowance, lowest first.
public enum MeterLevel: String, Codable, Sendable, CaseIterable, Comparable {
    case none, warning, critical, exhausted

    /// Orders levels from the lowest.
    public static func < (lhs: MeterLevel, rhs: MeterLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// A plan a user may be granted, which lifts them to a tier.
public struct Plan: Codable, Sendable, Equatable {
    /// The plan's name.
    public var name: String
    /// The price per billing period.
    public var price: Decimal
    /// The price's currency (ISO 4217).
    public var currency: String
    /// How long one paid period lasts.
    public var billingPeriod: TimeSpan
    /// How long a trial lasts; nil when the plan has none.
    public var trial: TimeSpan?
    /// The tier an active plan lifts its holder to.
    public var tier: TierLevel
    /// The App Store product ids whose purchase is this plan
    /// (`app_store_products`); a product belongs to one plan at most.
    public var appStoreProducts: [String] = []
    /// The RevenueCat entitlement ids that are this plan
    /// (`revenuecat_entitlements`); an entitlement belongs to one plan at most.
    public var revenueCatEntitlements: [String] = []
}

/// How urgent a prompt rule is; a higher one wins.
public enum PromptPriority: String, Codable, Sendable, CaseIterable, Comparable {
    case low, medium, high, critical

    /// The priority's place, from 0 for the lowest.
    public var rank: Int { PromptPriority.allCases.firstIndex(of: self)! }
    /// Orders priorities from the lowest.
    public static func < (lhs: PromptPriority, rhs: PromptPriority) -> Bool { lhs.rank < rhs.rank }
}

/// When to ask a user to sign in or upgrade.
public struct PromptPolicy: Codable, Sendable, Equatable {
    /// Minimum time between any two prompts shown to one user.
    public var cooldown: TimeSpan?
    /// At most `maximumShown` prompts in any rolling `window`.
    public var window: TimeSpan?
    /// The most prompts shown in one `window`; nil for no limit.
    public var maximumShownPerWindow: Int?
    /// The rules, each a prompt and when it is due.
    public var rules: [PromptRule]
    /// Named moments a refusal raises for the user (`prompts.triggers`).
    public var triggers: [PromptTrigger] = []

    /// The trigger named `name`, if the profile declares one.
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
    /// What raises a trigger.
    public enum Source: Codable, Sendable, Equatable {
        /// A `record put` into the collection refused by the cap; with an
        /// outcome, only refusals with that outcome.
        case collection(String, outcome: CapOutcome?)
        /// A `meter use` refused, or a `meter check` answered "not allowed".
        case meter(String)
    }

    /// The trigger's name, which rules name.
    public var name: String
    /// What raises it.
    public var source: Source

    package init(name: String, source: Source) {
        self.name = name
        self.source = source
    }
}

/// A prompt and the conditions under which it is due.
public struct PromptRule: Codable, Sendable, Equatable {
    /// The rule's context, which names the prompt wherever it is recorded.
    public var context: String
    /// Which rule wins when several are due.
    public var priority: PromptPriority
    /// Shown at most once, ever.
    public var isOnce: Bool
    /// After being shown, eligible again only this long after.
    public var reshowAfter: TimeSpan?
    /// Offered only when `prompt next --trigger` names it.
    public var trigger: String?
    /// Clauses that must all hold.
    public var conditions: [Condition]
    /// What to show.
    public var content: PromptContent
    /// Whether the prompt asks for a sign-in or an upgrade.
    public var kind: PromptKind = .signIn
}

/// The copy of a prompt.
public struct PromptContent: Codable, Sendable, Equatable {
    /// The title.
    public var title: String
    /// The message.
    public var message: String
    /// Benefits to list.
    public var benefits: [String]
    /// The label of the button that accepts.
    public var primaryAction: String
    /// The label of the button that declines.
    public var secondaryAction: String
    /// A presentation hint for the app, such as `sheet`.
    public var style: String
}

/// Fields of a prompt's content an experiment variant replaces; nil keeps the rule's.
public struct PromptContentOverride: Codable, Sendable, Equatable {
    /// A title instead of the rule's.
    public var title: String?
    /// A message instead of the rule's.
    public var message: String?
    /// Benefits instead of the rule's.
    public var benefits: [String]?
    /// An accepting label instead of the rule's.
    public var primaryAction: String?
    /// A declining label instead of the rule's.
    public var secondaryAction: String?
    /// A presentation hint instead of the rule's.
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

    /// `content` with the fields this override sets replaced.
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

/// A test of a number, such as "at least 3".
public struct Comparison: Codable, Sendable, Equatable {
    /// How the number is compared with `value`.
    public enum Operator: String, Codable, Sendable, CaseIterable {
        case equals
        case atLeast = "at_least"
        case atMost = "at_most"
        /// Strictly less than.
        case below
        /// Strictly greater than.
        case above
    }

    /// How to compare.
    public var comparator: Operator
    /// What to compare with.
    public var value: Double

    /// True when `actual` passes the test.
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

/// Whether a user is a guest (`anonymous`) or has linked an identity (`linked`).
public enum UserState: String, Codable, Sendable, CaseIterable {
    case anonymous, linked
}

/// An experiment that splits users between variants.
public struct Experiment: Codable, Sendable, Equatable {
    /// The experiment's name.
    public var name: String
    /// The seed a user's bucket is hashed with; changing it reshuffles users.
    public var seed: String
    /// The share of users enrolled, from 0 to 1.
    public var coverage: Double
    /// The variants; enrolled users are split by their weights.
    public var variants: [Variant]
}

/// One arm of an experiment.
public struct Variant: Codable, Sendable, Equatable {
    /// The variant's name.
    public var name: String
    /// Its share of enrolled users, relative to the other variants' weights.
    public var weight: Double
    /// Overrides of the prompt policy for users in this variant.
    public var promptCooldown: TimeSpan?
    /// When set, only these prompt contexts are offered to this variant.
    public var enabledContexts: [String]?
    /// Per prompt context, the copy this variant shows instead of the rule's.
    public var contentOverrides: [String: PromptContentOverride] = [:]
}

/// How users are backed up.
public struct BackupPolicy: Codable, Sendable, Equatable {
    /// Queue a backup of a user in the outbox on every change to their data.
    public var queuesOnChange: Bool
    /// The archive format of backups, such as `tar.zst`.
    public var format: String
}

/// How a guest's data moves into an account.
public struct MigrationPolicy: Codable, Sendable, Equatable {
    /// The steps, in the order they run.
    public var steps: [MigrationStep]
}

/// One step of moving a guest into an account.
public struct MigrationStep: Codable, Sendable, Equatable {
    /// The step's name, which the migration journal records.
    public var name: String
    /// Collections moved by this step; empty for steps that move the user's
    /// non-record data (`profile`) or finish up (`cleanup`).
    public var collections: [String]
}

/// How a store bound to the previous version of a profile moves to this one.
public struct ProfileUpgrade: Codable, Sendable, Equatable {
    /// The version this upgrade starts from.
    public var fromVersion: Int
    /// The changes to stored data, in order.
    public var steps: [DataMigration]
}

/// A change to stored data that a new profile version declares.
public enum DataMigration: Codable, Sendable, Equatable {
    case renameCollection(from: String, to: String)
    case renameField(collection: String, from: String, to: String)
}
