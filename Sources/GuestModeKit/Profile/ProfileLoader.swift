import Foundation
import Yams

/// One problem found in a profile, located so an editor can jump to it.
public struct ProfileDiagnostic: Sendable, Equatable, Codable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var message: String

    public var description: String { "\(file):\(line): \(message)" }
}

/// A profile that failed validation, carrying every problem at once.
public struct InvalidProfileError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [ProfileDiagnostic]
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// Reads the YAML profile format and validates it completely before
/// returning, so a profile either loads whole or is reported whole.
public enum ProfileLoader {
    /// Reads a profile file; diagnostics name it `label` (the path as the
    /// user wrote it) when given, else its full path.
    public static func load(contentsOf url: URL, label: String? = nil) throws -> Profile {
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            if !FileManager.default.fileExists(atPath: url.path) {
                throw GuestModeError.notFound(
                    "profile file '\(url.path)' does not exist; name a template or a YAML file",
                    code: .profileNotFound)
            }
            throw GuestModeError.badData(
                "cannot read profile '\(url.path)' as UTF-8 text: \(error.localizedDescription)", code: .invalidProfile)
        }
        return try parse(text, file: label ?? url.path)
    }

    public static func parse(_ text: String, file: String) throws -> Profile {
        let reader = Reader(file: file)
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw InvalidProfileError(diagnostics: [reader.diagnostic(for: error)])
        }
        guard let root else {
            throw InvalidProfileError(diagnostics: [
                ProfileDiagnostic(file: file, line: 1, message: "the profile is empty; see guestmode-profile(5)")
            ])
        }
        let profile = reader.readProfile(root)
        if let profile, reader.diagnostics.isEmpty { return profile }
        throw InvalidProfileError(diagnostics: reader.diagnostics.sorted { $0.line < $1.line })
    }
}

private let nameCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789_-")

private final class Reader {
    let file: String
    var diagnostics: [ProfileDiagnostic] = []
    /// What prompt conditions, triggers and placeholders may name.
    var promptScope = PromptScope()

    struct PromptScope {
        var actions: Set<String> = []
        var freeForm = false
        var collections: Set<String> = []
        var meters: Set<String> = []
    }

    init(file: String) { self.file = file }

    func report(_ node: Node?, _ message: String) {
        diagnostics.append(ProfileDiagnostic(file: file, line: node?.mark?.line ?? 1, message: message))
    }

    func diagnostic(for error: YamlError) -> ProfileDiagnostic {
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _),
            let .composer(context, problem, mark, _):
            let prefix = context.map { "\($0.text) " } ?? ""
            return ProfileDiagnostic(file: file, line: mark.line, message: "malformed YAML: \(prefix)\(problem)")
        case let .duplicatedKeysInMapping(duplicates, context):
            return ProfileDiagnostic(
                file: file, line: context.mark.line,
                message: "duplicate keys \(duplicates.joined(separator: ", ")) in one mapping")
        default:
            return ProfileDiagnostic(file: file, line: 1, message: "malformed YAML: \(error)")
        }
    }

    // MARK: Shapes

    typealias Fields = [(key: String, keyNode: Node, value: Node)]

    func mapping(_ node: Node?, _ what: String, allowed: [String], required: [String] = []) -> Fields? {
        guard let node else { return nil }
        if node.isNull { return [] }
        guard case .mapping(let mapping) = node else {
            report(node, "\(what) must be a mapping of keys to values")
            return nil
        }
        var fields: Fields = []
        for (keyNode, value) in mapping {
            guard let key = keyNode.string else {
                report(keyNode, "\(what) has a key that is not a plain name")
                continue
            }
            if !allowed.isEmpty && !allowed.contains(key) {
                report(keyNode, "unknown key '\(key)' in \(what); expected one of: \(allowed.joined(separator: ", "))")
                continue
            }
            fields.append((key, keyNode, value))
        }
        for key in required where !fields.contains(where: { $0.key == key }) {
            report(node, "\(what) is missing the required key '\(key)'")
        }
        return fields
    }

    func entries(_ node: Node?, _ what: String) -> Fields? {
        mapping(node, what, allowed: [])
    }

    func sequence(_ node: Node?, _ what: String) -> [Node]? {
        guard let node else { return nil }
        guard case .sequence(let items) = node else {
            report(node, "\(what) must be a list")
            return nil
        }
        return Array(items)
    }

    func string(_ node: Node?, _ what: String) -> String? {
        guard let node else { return nil }
        guard case .scalar(let scalar) = node else {
            report(node, "\(what) must be text")
            return nil
        }
        return scalar.string
    }

    func name(_ node: Node?, _ what: String) -> String? {
        guard let text = string(node, what) else { return nil }
        if text.isEmpty || text.unicodeScalars.contains(where: { !nameCharacters.contains($0) }) {
            report(node, "\(what) '\(text)' must use only lowercase letters, digits, '_' and '-'")
            return nil
        }
        return text
    }

    func integer(_ node: Node?, _ what: String, minimum: Int = 0) -> Int? {
        guard let node else { return nil }
        guard let text = node.scalar?.string, let value = Int(text) else {
            report(node, "\(what) must be a whole number")
            return nil
        }
        if value < minimum {
            report(node, "\(what) must be at least \(minimum), not \(value)")
            return nil
        }
        return value
    }

    func number(_ node: Node?, _ what: String) -> Double? {
        guard let node else { return nil }
        guard let text = node.scalar?.string, let value = Double(text), value.isFinite else {
            report(node, "\(what) must be a number")
            return nil
        }
        return value
    }

    func boolean(_ node: Node?, _ what: String) -> Bool? {
        guard let node else { return nil }
        switch node.scalar?.string.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            report(node, "\(what) must be true or false")
            return nil
        }
    }

    func span(_ node: Node?, _ what: String) -> TimeSpan? {
        guard let text = string(node, what) else { return nil }
        switch TimeSpan.parse(text) {
        case .success(let span): return span
        case .failure(let refusal):
            report(node, "\(what): \(refusal)")
            return nil
        }
    }

    func choice<T: RawRepresentable & CaseIterable>(_ node: Node?, _ what: String, as type: T.Type) -> T?
    where T.RawValue == String {
        guard let text = string(node, what) else { return nil }
        guard let value = T(rawValue: text) else {
            let options = T.allCases.map(\.rawValue).joined(separator: ", ")
            report(node, "\(what) '\(text)' is not one of: \(options)")
            return nil
        }
        return value
    }

    func names(_ node: Node?, _ what: String) -> [String]? {
        guard let items = sequence(node, what) else { return nil }
        return items.compactMap { name($0, "an entry of \(what)") }
    }

    // MARK: Profile

    func readProfile(_ root: Node) -> Profile? {
        let topKeys = [
            "name", "version", "description", "guest_owner", "free_form_actions", "identity", "collections",
            "actions", "meters", "tiers", "plans", "prompts", "experiments", "backup", "migration", "upgrade",
        ]
        guard let fields = mapping(root, "the profile", allowed: topKeys, required: ["name", "version", "tiers"])
        else { return nil }
        func field(_ key: String) -> Node? { fields.first { $0.key == key }?.value }

        let name = name(field("name"), "name") ?? ""
        let version = integer(field("version"), "version", minimum: 1) ?? 1
        let summary = string(field("description"), "description") ?? ""
        let guestOwner = string(field("guest_owner"), "guest_owner") ?? ""
        let freeForm = boolean(field("free_form_actions"), "free_form_actions") ?? false

        let identity = readIdentity(field("identity"))
        let collections = readCollections(field("collections"))
        let collectionNames = Set(collections.map(\.name))
        let actions = readActions(field("actions"))
        let meters = readMeters(field("meters"))
        let meterNames = Set(meters.map(\.name))
        let tiers = readTiers(field("tiers"), collections: collectionNames, meters: meterNames)
        let plans = readPlans(field("plans"))
        let knownActions = Set(actions)
        promptScope = PromptScope(
            actions: knownActions, freeForm: freeForm, collections: collectionNames, meters: meterNames)
        let prompts = readPrompts(field("prompts"), actions: knownActions, freeForm: freeForm)
        let experiments = readExperiments(field("experiments"), contexts: Set(prompts.rules.map(\.context)))
        let backup = readBackup(field("backup"))
        let migration = readMigration(field("migration"), collections: collections)
        let upgrade = readUpgrade(field("upgrade"), version: version, collections: collectionNames)

        return Profile(
            name: name, version: version, summary: summary, guestOwner: guestOwner,
            allowsFreeFormActions: freeForm, identity: identity, collections: collections, actions: actions,
            meters: meters, tiers: tiers, plans: plans, prompts: prompts, experiments: experiments,
            backup: backup, migration: migration, upgrade: upgrade)
    }

    func readIdentity(_ node: Node?) -> IdentityPolicy {
        var policy = IdentityPolicy(providers: ["apple", "google", "email"], maximumProvidersPerUser: 1)
        guard let fields = mapping(node, "identity", allowed: ["providers", "max_providers_per_user"]) else {
            return policy
        }
        for (key, _, value) in fields {
            switch key {
            case "providers":
                if let providers = names(value, "identity.providers") {
                    if providers.isEmpty { report(value, "identity.providers must name at least one provider") }
                    policy.providers = providers
                }
            default:
                policy.maximumProvidersPerUser =
                    integer(value, "identity.max_providers_per_user", minimum: 1) ?? policy.maximumProvidersPerUser
            }
        }
        return policy
    }

    func readCollections(_ node: Node?) -> [RecordCollection] {
        guard let fields = entries(node, "collections") else { return [] }
        var collections: [RecordCollection] = []
        for (key, keyNode, value) in fields {
            guard let collectionName = name(keyNode, "collection name") else { continue }
            var collection = RecordCollection(name: collectionName, uniqueFields: [], onMergeConflict: .newestWins)
            if case .mapping = value {
                let what = "collection '\(key)'"
                for (option, _, optionValue) in mapping(value, what, allowed: ["unique", "on_merge_conflict"]) ?? [] {
                    switch option {
                    case "unique":
                        collection.uniqueFields = names(optionValue, "\(what) unique") ?? []
                    default:
                        collection.onMergeConflict =
                            choice(optionValue, "\(what) on_merge_conflict", as: MergeConflictRule.self)
                            ?? .newestWins
                    }
                }
            } else if !value.isNull {
                report(value, "collection '\(key)' must be a mapping of options or empty")
            }
            collections.append(collection)
        }
        return collections
    }

    func readActions(_ node: Node?) -> [String] {
        let actions = names(node, "actions") ?? []
        var seen = Set<String>()
        for action in actions where !seen.insert(action).inserted {
            report(node, "action '\(action)' is listed twice")
        }
        return actions
    }

    func readMeters(_ node: Node?) -> [Meter] {
        guard let fields = entries(node, "meters") else { return [] }
        var meters: [Meter] = []
        for (key, keyNode, value) in fields {
            guard let meterName = name(keyNode, "meter name") else { continue }
            let what = "meter '\(key)'"
            var meter = Meter(name: meterName, unit: "units", reset: .never, warnings: [])
            for (option, _, optionValue) in mapping(value, what, allowed: ["unit", "reset", "warnings", "overage"])
                ?? []
            {
                switch option {
                case "unit": meter.unit = string(optionValue, "\(what) unit") ?? meter.unit
                case "reset": meter.reset = choice(optionValue, "\(what) reset", as: MeterReset.self) ?? .never
                case "overage":
                    meter.overage = choice(optionValue, "\(what) overage", as: MeterOverage.self) ?? .refuse
                default: meter.warnings = readWarnings(optionValue, what)
                }
            }
            meters.append(meter)
        }
        return meters
    }

    func readWarnings(_ node: Node, _ what: String) -> [MeterWarning] {
        var warnings: [MeterWarning] = []
        for item in sequence(node, "\(what) warnings") ?? [] {
            let fields =
                mapping(item, "a warning of \(what)", allowed: ["percent", "level"], required: ["percent"]) ?? []
            var percent: Double?
            var level = MeterLevel.warning
            for (key, _, value) in fields {
                if key == "percent" {
                    percent = number(value, "warning percent")
                    if let p = percent, !(p > 0 && p < 100) {
                        report(value, "warning percent of \(what) must be between 0 and 100 (exclusive), not \(p)")
                        percent = nil
                    }
                } else {
                    level = choice(value, "warning level", as: MeterLevel.self) ?? .warning
                    if level == .none || level == .exhausted {
                        report(value, "warning level must be warning or critical")
                    }
                }
            }
            if let percent {
                if let last = warnings.last, last.percent >= percent {
                    report(item, "warnings of \(what) must be in ascending order of percent")
                }
                warnings.append(MeterWarning(percent: percent, level: level))
            }
        }
        return warnings
    }

    func readTiers(_ node: Node?, collections: Set<String>, meters: Set<String>) -> [Tier] {
        var declared: [TierLevel: (node: Node, fields: Fields)] = [:]
        for (key, keyNode, value) in mapping(node, "tiers", allowed: TierLevel.allCases.map(\.rawValue)) ?? [] {
            let fields =
                mapping(value, "tier '\(key)'", allowed: ["caps", "meters", "when_capped"]) ?? []
            declared[TierLevel(rawValue: key)!] = (keyNode, fields)
        }
        if node != nil && declared[.guest] == nil {
            report(node, "tiers must declare 'guest', the tier of anonymous users")
        }
        var tiers: [Tier] = []
        var caps: [String: Int] = [:]
        var allowances: [String: Double] = [:]
        for level in TierLevel.allCases {
            var whenCapped: CapOutcome = level == .guest ? .needsAccount : .needsPremium
            for (key, _, value) in declared[level]?.fields ?? [] {
                let what = "tier '\(level.rawValue)'"
                switch key {
                case "caps":
                    for (collection, collectionNode, limit) in entries(value, "\(what) caps") ?? [] {
                        if !collections.contains(collection) {
                            report(
                                collectionNode,
                                "\(what) caps unknown collection '\(collection)'; declare it under collections")
                        }
                        if limit.scalar?.string == "unlimited" {
                            caps[collection] = nil
                        } else if let count = integer(limit, "\(what) cap of '\(collection)'") {
                            caps[collection] = count
                        }
                    }
                case "meters":
                    for (meter, meterNode, allowance) in entries(value, "\(what) meters") ?? [] {
                        if !meters.contains(meter) {
                            report(
                                meterNode,
                                "\(what) gives an allowance of unknown meter '\(meter)'; declare it under meters")
                        }
                        if allowance.scalar?.string == "unlimited" {
                            allowances[meter] = nil
                        } else if let amount = number(allowance, "\(what) allowance of '\(meter)'") {
                            if amount < 0 { report(allowance, "\(what) allowance of '\(meter)' must not be negative") }
                            allowances[meter] = amount
                        }
                    }
                default:
                    whenCapped = choice(value, "\(what) when_capped", as: CapOutcome.self) ?? whenCapped
                    if whenCapped == .allowed {
                        report(value, "\(what) when_capped must be needs-account or needs-premium")
                    }
                }
            }
            tiers.append(Tier(level: level, caps: caps, allowances: allowances, whenCapped: whenCapped))
        }
        return tiers
    }

    func readPlans(_ node: Node?) -> [Plan] {
        var plans: [Plan] = []
        for (key, keyNode, value) in entries(node, "plans") ?? [] {
            guard let planName = name(keyNode, "plan name") else { continue }
            let what = "plan '\(key)'"
            var plan = Plan(
                name: planName, price: 0, currency: "USD", billingPeriod: TimeSpan(amount: 1, unit: .months),
                trial: nil, tier: .premium)
            let allowed = ["price", "currency", "period", "trial", "tier"]
            for (option, _, optionValue) in mapping(value, what, allowed: allowed, required: ["price"]) ?? [] {
                switch option {
                case "price":
                    // Plain decimal notation only: Decimal(string:) alone reads ".inf" as 0.
                    if let text = optionValue.scalar?.string, text.wholeMatch(of: /[0-9]{1,9}(\.[0-9]{1,4})?/) != nil,
                        let price = Decimal(string: text)
                    {
                        plan.price = price
                    } else {
                        report(optionValue, "\(what) price must be a non-negative number such as 2.99")
                    }
                case "currency":
                    let currency = string(optionValue, "\(what) currency") ?? "USD"
                    if currency.count != 3 || currency != currency.uppercased() {
                        report(
                            optionValue,
                            "\(what) currency '\(currency)' must be a three-letter ISO 4217 code such as USD")
                    }
                    plan.currency = currency
                case "period": plan.billingPeriod = span(optionValue, "\(what) period") ?? plan.billingPeriod
                case "trial": plan.trial = span(optionValue, "\(what) trial")
                default:
                    plan.tier = choice(optionValue, "\(what) tier", as: TierLevel.self) ?? .premium
                    if plan.tier == .guest { report(optionValue, "\(what) cannot lift its holder to the guest tier") }
                }
            }
            plans.append(plan)
        }
        return plans
    }

    func readPrompts(_ node: Node?, actions: Set<String>, freeForm: Bool) -> PromptPolicy {
        var policy = PromptPolicy(cooldown: nil, window: nil, maximumShownPerWindow: nil, rules: [])
        let allowed = ["cooldown", "window", "max_per_window", "rules", "triggers"]
        for (key, _, value) in mapping(node, "prompts", allowed: allowed) ?? [] {
            switch key {
            case "triggers": policy.triggers = readTriggers(value)
            case "cooldown": policy.cooldown = span(value, "prompts.cooldown")
            case "window": policy.window = span(value, "prompts.window")
            case "max_per_window": policy.maximumShownPerWindow = integer(value, "prompts.max_per_window", minimum: 1)
            default:
                for item in sequence(value, "prompts.rules") ?? [] {
                    if let rule = readRule(item, actions: actions, freeForm: freeForm) {
                        if policy.rules.contains(where: { $0.context == rule.context }) {
                            report(item, "prompt context '\(rule.context)' is declared twice")
                        }
                        policy.rules.append(rule)
                    }
                }
            }
        }
        if (policy.window == nil) != (policy.maximumShownPerWindow == nil) {
            report(node, "prompts.window and prompts.max_per_window go together; set both or neither")
        }
        // A rule's trigger is named by `prompt next --trigger` or declared under prompts.triggers;
        // a declared trigger no rule waits for would be raised for nothing.
        for trigger in policy.triggers where !policy.rules.contains(where: { $0.trigger == trigger.name }) {
            report(node, "prompts.triggers declares '\(trigger.name)', but no prompt rule has trigger: \(trigger.name)")
        }
        return policy
    }

    /// `prompts.triggers`: name → exactly one source, `collection` (with an
    /// optional `outcome`) or `meter`.
    func readTriggers(_ node: Node) -> [PromptTrigger] {
        var triggers: [PromptTrigger] = []
        for (key, keyNode, value) in entries(node, "prompts.triggers") ?? [] {
            guard let triggerName = name(keyNode, "trigger name") else { continue }
            let what = "trigger '\(key)'"
            let fields = mapping(value, what, allowed: ["collection", "outcome", "meter"]) ?? []
            func field(_ key: String) -> Node? { fields.first { $0.key == key }?.value }
            switch (field("collection"), field("meter")) {
            case let (collectionNode?, nil):
                guard let collection = name(collectionNode, "\(what) collection") else { continue }
                if !promptScope.collections.contains(collection) {
                    report(
                        collectionNode, "\(what) names unknown collection '\(collection)'; declare it under collections"
                    )
                }
                var outcome: CapOutcome?
                if let outcomeNode = field("outcome") {
                    outcome = choice(outcomeNode, "\(what) outcome", as: CapOutcome.self)
                    if outcome == .allowed {
                        report(outcomeNode, "\(what) outcome must be needs-account or needs-premium")
                    }
                }
                triggers.append(PromptTrigger(name: triggerName, source: .collection(collection, outcome: outcome)))
            case let (nil, meterNode?):
                guard let meter = name(meterNode, "\(what) meter") else { continue }
                if !promptScope.meters.contains(meter) {
                    report(meterNode, "\(what) names unknown meter '\(meter)'; declare it under meters")
                }
                if let outcomeNode = field("outcome") {
                    report(outcomeNode, "\(what) outcome applies to a collection's cap, not to a meter")
                }
                triggers.append(PromptTrigger(name: triggerName, source: .meter(meter)))
            default:
                report(
                    value,
                    "\(what) must name exactly one of: collection (a refused record put), meter (a refused meter use or check)"
                )
            }
        }
        return triggers
    }

    func readRule(_ node: Node, actions: Set<String>, freeForm: Bool) -> PromptRule? {
        let allowed = ["context", "priority", "kind", "once", "reshow_after", "trigger", "when", "content"]
        guard
            let fields = mapping(node, "a prompt rule", allowed: allowed, required: ["context", "priority", "content"])
        else { return nil }
        func field(_ key: String) -> Node? { fields.first { $0.key == key }?.value }
        let context = name(field("context"), "prompt context") ?? ""
        let what = "prompt '\(context)'"
        let priority = choice(field("priority"), "\(what) priority", as: PromptPriority.self) ?? .low
        let once = boolean(field("once"), "\(what) once") ?? false
        let reshow = span(field("reshow_after"), "\(what) reshow_after")
        let trigger = name(field("trigger"), "\(what) trigger")
        let kind = field("kind").map { choice($0, "\(what) kind", as: PromptKind.self) ?? .signIn } ?? .signIn
        var conditions: [Condition] = []
        for item in sequence(field("when"), "\(what) when") ?? [] {
            if let condition = readCondition(item, what, actions: actions, freeForm: freeForm) {
                conditions.append(condition)
            }
        }
        let content = readContent(field("content"), what)
        return PromptRule(
            context: context, priority: priority, isOnce: once, reshowAfter: reshow, trigger: trigger,
            conditions: conditions, content: content, kind: kind)
    }

    /// One condition: exactly one subject key naming what it tests, plus a
    /// comparison (`equals`, `at_least`, `at_most`) where the subject takes one.
    func readCondition(_ node: Node, _ what: String, actions: Set<String>, freeForm: Bool) -> Condition? {
        let comparators = Comparison.Operator.allCases.map(\.rawValue)
        let compared = ["counter", "days_since_first_seen", "limit_remaining", "meter_percent_used", "meter_remaining"]
        let plain = ["state", "limit_reached", "meter_exhausted"]
        let allowed = compared + plain + comparators + ["outcome"]
        guard let fields = mapping(node, "a condition of \(what)", allowed: allowed) else { return nil }
        var comparison: Comparison?
        for (key, _, value) in fields {
            if let comparator = Comparison.Operator(rawValue: key), let number = number(value, "\(what) \(key)") {
                if comparison != nil { report(value, "a condition of \(what) has more than one comparison") }
                comparison = Comparison(comparator: comparator, value: number)
            }
        }
        let subjects = fields.filter { !comparators.contains($0.key) && $0.key != "outcome" }
        guard subjects.count == 1, let subject = subjects.first else {
            report(
                node, "a condition of \(what) must have exactly one of: \((compared + plain).joined(separator: ", "))")
            return nil
        }
        let outcomeNode = fields.first { $0.key == "outcome" }?.value
        if outcomeNode != nil && subject.key != "limit_reached" {
            report(node, "only a limit_reached condition of \(what) takes an outcome")
        }
        if plain.contains(subject.key) {
            if comparison != nil { report(node, "a \(subject.key) condition of \(what) takes no comparison") }
            switch subject.key {
            case "state": return choice(subject.value, "\(what) state", as: UserState.self).map(Condition.state)
            case "limit_reached":
                guard let collection = promptCollection(subject.value, what) else { return nil }
                var outcome: CapOutcome?
                if let outcomeNode {
                    outcome = choice(outcomeNode, "\(what) outcome", as: CapOutcome.self)
                    if outcome == .allowed {
                        report(outcomeNode, "\(what) outcome must be needs-account or needs-premium")
                    }
                }
                return .limitReached(collection: collection, outcome: outcome)
            default:
                return promptMeter(subject.value, what).map { Condition.meterExhausted(meter: $0) }
            }
        }
        guard let comparison else {
            report(node, "the \(subject.key) condition of \(what) needs one of: \(comparators.joined(separator: ", "))")
            return nil
        }
        switch subject.key {
        case "days_since_first_seen": return .daysSinceFirstSeen(comparison)
        case "limit_remaining":
            return promptCollection(subject.value, what).map { .limitRemaining(collection: $0, comparison: comparison) }
        case "meter_percent_used":
            return promptMeter(subject.value, what).map { .meterPercentUsed(meter: $0, comparison: comparison) }
        case "meter_remaining":
            return promptMeter(subject.value, what).map { .meterRemaining(meter: $0, comparison: comparison) }
        default:
            guard let action = name(subject.value, "\(what) counter") else { return nil }
            if !actions.contains(action) && !freeForm {
                report(subject.value, "\(what) counts unknown action '\(action)'; declare it under actions")
            }
            return .counter(action: action, comparison: comparison)
        }
    }

    func promptCollection(_ node: Node, _ what: String) -> String? {
        guard let collection = name(node, "\(what) collection") else { return nil }
        if !promptScope.collections.contains(collection) {
            report(node, "\(what) tests unknown collection '\(collection)'; declare it under collections")
        }
        return collection
    }

    func promptMeter(_ node: Node, _ what: String) -> String? {
        guard let meter = name(node, "\(what) meter") else { return nil }
        if !promptScope.meters.contains(meter) {
            report(node, "\(what) tests unknown meter '\(meter)'; declare it under meters")
        }
        return meter
    }

    /// Prompt text, with its placeholders checked against the profile.
    func promptText(_ node: Node?, _ what: String) -> String? {
        guard let text = string(node, what) else { return nil }
        switch PromptText.pieces(of: text) {
        case let .failure(problem):
            report(node, "\(what): \(problem.message)")
        case let .success(pieces):
            for case let .placeholder(token) in pieces {
                guard let placeholder = PromptPlaceholder(token: token) else {
                    report(
                        node,
                        "\(what) has unknown placeholder '{\(token)}'; placeholders are \(PromptPlaceholder.forms)")
                    continue
                }
                if let problem = placeholder.problem(
                    actions: promptScope.actions, freeForm: promptScope.freeForm,
                    collections: promptScope.collections, meters: promptScope.meters)
                {
                    report(node, "\(what) placeholder '{\(token)}' \(problem)")
                }
            }
        }
        return text
    }

    func readContent(_ node: Node?, _ what: String) -> PromptContent {
        var content = PromptContent(
            title: "", message: "", benefits: [], primaryAction: "Sign in", secondaryAction: "Not now", style: "sheet")
        let allowed = ["title", "message", "benefits", "primary_action", "secondary_action", "style"]
        let fields = mapping(node, "\(what) content", allowed: allowed, required: ["title", "message"]) ?? []
        for (key, _, value) in fields {
            switch key {
            case "title": content.title = promptText(value, "\(what) title") ?? ""
            case "message": content.message = promptText(value, "\(what) message") ?? ""
            case "benefits":
                content.benefits = (sequence(value, "\(what) benefits") ?? []).compactMap {
                    promptText($0, "a benefit of \(what)")
                }
            case "primary_action": content.primaryAction = promptText(value, "\(what) primary_action") ?? ""
            case "secondary_action": content.secondaryAction = promptText(value, "\(what) secondary_action") ?? ""
            default: content.style = string(value, "\(what) style") ?? ""
            }
        }
        return content
    }

    func readExperiments(_ node: Node?, contexts: Set<String>) -> [Experiment] {
        var experiments: [Experiment] = []
        for (key, keyNode, value) in entries(node, "experiments") ?? [] {
            guard let experimentName = name(keyNode, "experiment name") else { continue }
            let what = "experiment '\(key)'"
            var experiment = Experiment(name: experimentName, seed: experimentName, coverage: 1, variants: [])
            let allowed = ["seed", "coverage", "variants"]
            let fields = mapping(value, what, allowed: allowed, required: ["variants"]) ?? []
            for (option, _, optionValue) in fields {
                switch option {
                case "seed": experiment.seed = string(optionValue, "\(what) seed") ?? experimentName
                case "coverage":
                    let coverage = number(optionValue, "\(what) coverage") ?? 1
                    if !(0...1).contains(coverage) { report(optionValue, "\(what) coverage must be between 0 and 1") }
                    experiment.coverage = coverage
                default:
                    for item in sequence(optionValue, "\(what) variants") ?? [] {
                        if let variant = readVariant(item, what, contexts: contexts) {
                            experiment.variants.append(variant)
                        }
                    }
                    let total = experiment.variants.reduce(0) { $0 + $1.weight }
                    if !experiment.variants.isEmpty && abs(total - 1) > 0.0001 {
                        report(optionValue, "the variant weights of \(what) add up to \(total), not 1")
                    }
                    if experiment.variants.isEmpty { report(optionValue, "\(what) needs at least one variant") }
                }
            }
            experiments.append(experiment)
        }
        return experiments
    }

    func readVariant(_ node: Node, _ what: String, contexts: Set<String>) -> Variant? {
        let allowed = ["name", "weight", "prompt_cooldown", "contexts", "content"]
        guard let fields = mapping(node, "a variant of \(what)", allowed: allowed, required: ["name", "weight"])
        else { return nil }
        var variant = Variant(name: "", weight: 0, promptCooldown: nil, enabledContexts: nil)
        for (key, _, value) in fields {
            switch key {
            case "name": variant.name = name(value, "variant name") ?? ""
            case "weight":
                variant.weight = number(value, "variant weight") ?? 0
                if variant.weight < 0 { report(value, "a variant weight of \(what) must not be negative") }
            case "prompt_cooldown": variant.promptCooldown = span(value, "variant prompt_cooldown")
            case "content": variant.contentOverrides = readContentOverrides(value, what, contexts: contexts)
            default:
                let enabled = names(value, "variant contexts") ?? []
                for context in enabled where !contexts.contains(context) {
                    report(value, "a variant of \(what) enables unknown prompt context '\(context)'")
                }
                variant.enabledContexts = enabled
            }
        }
        return variant
    }

    /// A variant's copy: prompt context → the content fields it replaces.
    func readContentOverrides(_ node: Node, _ what: String, contexts: Set<String>) -> [String: PromptContentOverride] {
        var overrides: [String: PromptContentOverride] = [:]
        for (context, contextNode, value) in entries(node, "the content of a variant of \(what)") ?? [] {
            if !contexts.contains(context) {
                report(contextNode, "a variant of \(what) rewrites unknown prompt context '\(context)'")
            }
            let label = "the variant copy of prompt '\(context)'"
            let allowed = ["title", "message", "benefits", "primary_action", "secondary_action", "style"]
            var override = PromptContentOverride()
            for (key, _, field) in mapping(value, label, allowed: allowed) ?? [] {
                switch key {
                case "title": override.title = promptText(field, "\(label) title")
                case "message": override.message = promptText(field, "\(label) message")
                case "benefits":
                    override.benefits = (sequence(field, "\(label) benefits") ?? []).compactMap {
                        promptText($0, "a benefit of \(label)")
                    }
                case "primary_action": override.primaryAction = promptText(field, "\(label) primary_action")
                case "secondary_action": override.secondaryAction = promptText(field, "\(label) secondary_action")
                default: override.style = string(field, "\(label) style")
                }
            }
            overrides[context] = override
        }
        return overrides
    }

    func readBackup(_ node: Node?) -> BackupPolicy {
        var policy = BackupPolicy(queuesOnChange: false, format: "tar.zst")
        for (key, _, value) in mapping(node, "backup", allowed: ["outbox", "format"]) ?? [] {
            if key == "outbox" {
                policy.queuesOnChange = boolean(value, "backup.outbox") ?? false
            } else {
                let format = string(value, "backup.format") ?? "tar.zst"
                if !["tar.zst", "tar.gz", "zip"].contains(format) {
                    report(value, "backup.format '\(format)' is not one of: tar.zst, tar.gz, zip")
                }
                policy.format = format
            }
        }
        return policy
    }

    func readUpgrade(_ node: Node?, version: Int, collections: Set<String>) -> ProfileUpgrade? {
        guard let fields = mapping(node, "upgrade", allowed: ["from", "steps"], required: ["from"]) else { return nil }
        var upgrade = ProfileUpgrade(fromVersion: 0, steps: [])
        for (key, _, value) in fields {
            if key == "from" {
                upgrade.fromVersion = integer(value, "upgrade.from", minimum: 1) ?? 0
                if upgrade.fromVersion >= version {
                    report(
                        value,
                        "upgrade.from (\(upgrade.fromVersion)) must be lower than the profile's version (\(version))")
                }
                continue
            }
            for item in sequence(value, "upgrade.steps") ?? [] {
                let kinds = ["rename_collection", "rename_field"]
                guard let step = mapping(item, "an upgrade step", allowed: kinds), step.count == 1,
                    let (kind, _, body) = step.first
                else {
                    report(item, "an upgrade step must be exactly one of: rename_collection, rename_field")
                    continue
                }
                let what = "upgrade step \(kind)"
                let required = kind == "rename_field" ? ["collection", "from", "to"] : ["from", "to"]
                var values: [String: String] = [:]
                for (option, _, optionValue) in mapping(body, what, allowed: required, required: required) ?? [] {
                    values[option] = name(optionValue, "\(what) \(option)")
                }
                guard required.allSatisfy({ values[$0] != nil }) else { continue }
                if kind == "rename_collection" {
                    if !collections.contains(values["to"]!) {
                        report(
                            body, "\(what) renames to '\(values["to"]!)', which is not among this profile's collections"
                        )
                    }
                    upgrade.steps.append(.renameCollection(from: values["from"]!, to: values["to"]!))
                } else {
                    if !collections.contains(values["collection"]!) {
                        report(body, "\(what) names unknown collection '\(values["collection"]!)'")
                    }
                    upgrade.steps.append(
                        .renameField(collection: values["collection"]!, from: values["from"]!, to: values["to"]!))
                }
            }
        }
        return upgrade
    }

    func readMigration(_ node: Node?, collections: [RecordCollection]) -> MigrationPolicy {
        let known = Set(collections.map(\.name))
        var steps: [MigrationStep] = []
        for (key, _, value) in mapping(node, "migration", allowed: ["steps"]) ?? [] where key == "steps" {
            for item in sequence(value, "migration.steps") ?? [] {
                let fields =
                    mapping(item, "a migration step", allowed: ["name", "collections"], required: ["name"]) ?? []
                var step = MigrationStep(name: "", collections: [])
                for (field, _, fieldValue) in fields {
                    if field == "name" {
                        step.name = name(fieldValue, "migration step name") ?? ""
                    } else {
                        step.collections = names(fieldValue, "migration step collections") ?? []
                        for collection in step.collections where !known.contains(collection) {
                            report(fieldValue, "migration step moves unknown collection '\(collection)'")
                        }
                    }
                }
                steps.append(step)
            }
        }
        if steps.isEmpty {
            steps =
                [MigrationStep(name: "profile", collections: [])]
                + collections.map { MigrationStep(name: $0.name, collections: [$0.name]) }
                + [MigrationStep(name: "cleanup", collections: [])]
        }
        return MigrationPolicy(steps: steps)
    }
}

extension Node {
    /// An empty value (`key:` with nothing after it) stands for "no options".
    fileprivate var isNull: Bool {
        guard case .scalar(let scalar) = self else { return false }
        return ["", "~", "null"].contains(scalar.string) && scalar.style == .plain
    }

    fileprivate var sequence: Node.Sequence? {
        if case .sequence(let items) = self { return items }
        return nil
    }
}
