import Foundation

/// The JSON form of a validated `Profile` in the store's cache (see
/// `ProfileCache`), written and read type by type through `JSONValue` and
/// `StrictJSON` instead of `Codable`: `JSONDecoder` instantiates its generic
/// containers and looks up a protocol conformance for every type it meets,
/// which cost every command about 12 M instructions of start-up.
///
/// The form is strict both ways: every object has exactly its type's members
/// (an absent optional is `null`, never left out), numbers are written as
/// Swift writes them and read back only when they write the same again, enums
/// are their raw values, and enums with payloads are objects naming their
/// `case`. Anything else (a member missing, unknown or of the wrong type, a
/// value out of range) is `ProfileCacheCodec.Mismatch`, which the cache treats
/// as a miss.
package enum ProfileCacheCodec {
    /// The JSON does not hold a profile in this form.
    package struct Mismatch: Error, Sendable {}

    /// Whether `text` is a decimal as `Decimal.description` writes one, in the form that needs no
    /// rounding to read: an optional minus, an integer part without leading zeros, and an optional
    /// fraction that does not end in zero; 38 digits at most, which a `Decimal`'s mantissa holds
    /// exactly; not `-0`.
    ///
    /// ```swift
    /// ProfileCacheCodec.isPlainDecimal("9.99")  // true
    /// ProfileCacheCodec.isPlainDecimal("9.90")  // false: description writes "9.9"
    /// ```
    package static func isPlainDecimal(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        let isNegative = bytes.first == UInt8(ascii: "-")
        if isNegative { bytes = bytes.dropFirst() }
        let integer = bytes.prefix { $0 != UInt8(ascii: ".") }
        let fraction = bytes.dropFirst(integer.count + 1)
        let hasPoint = integer.count < bytes.count
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        guard !integer.isEmpty, integer.allSatisfy(isDigit), integer.count == 1 || integer.first != UInt8(ascii: "0")
        else { return false }
        guard !hasPoint || (!fraction.isEmpty && fraction.allSatisfy(isDigit) && fraction.last != UInt8(ascii: "0"))
        else { return false }
        guard integer.count + fraction.count <= 38 else { return false }
        let isZero = integer.elementsEqual("0".utf8) && fraction.isEmpty
        return !(isNegative && isZero)
    }

    /// The profile as JSON text (compact, members sorted).
    package static func encode(_ profile: Profile) throws(Mismatch) -> String {
        try value(profile).canonicalText
    }

    /// The profile `json` holds; `Mismatch` for anything not written by `encode`.
    package static func decode(_ json: String) throws(Mismatch) -> Profile {
        let value: JSONValue
        do { value = try StrictJSON.parse(json) } catch { throw Mismatch() }
        return try profile(value)
    }
}

// MARK: - Writing

extension ProfileCacheCodec {
    private static func number(_ value: Int) -> JSONValue { .number(String(value)) }

    private static func number(_ value: Double) throws(Mismatch) -> JSONValue {
        guard value.isFinite else { throw Mismatch() }
        return .number(String(value))
    }

    private static func optional<T>(
        _ value: T?, _ write: (T) throws(Mismatch) -> JSONValue
    ) throws(Mismatch)
        -> JSONValue
    {
        guard let value else { return .null }
        return try write(value)
    }

    private static func array<T>(
        _ values: [T], _ write: (T) throws(Mismatch) -> JSONValue
    ) throws(Mismatch)
        -> JSONValue
    {
        var elements: [JSONValue] = []
        elements.reserveCapacity(values.count)
        for element in values { elements.append(try write(element)) }
        return .array(elements)
    }

    private static func strings(_ values: [String]) -> JSONValue { .array(values.map { .string($0) }) }

    private static func value(_ profile: Profile) throws(Mismatch) -> JSONValue {
        .object([
            "name": .string(profile.name),
            "version": number(profile.version),
            "summary": .string(profile.summary),
            "guestOwner": .string(profile.guestOwner),
            "allowsFreeFormActions": .bool(profile.allowsFreeFormActions),
            "identity": .object([
                "providers": strings(profile.identity.providers),
                "maximumProvidersPerUser": number(profile.identity.maximumProvidersPerUser),
            ]),
            "collections": try array(profile.collections) { collection throws(Mismatch) in
                .object([
                    "name": .string(collection.name),
                    "uniqueFields": strings(collection.uniqueFields),
                    "onMergeConflict": .string(collection.onMergeConflict.rawValue),
                ])
            },
            "actions": strings(profile.actions),
            "meters": try array(profile.meters, value),
            "tiers": try array(profile.tiers, value),
            "plans": try array(profile.plans, value),
            "prompts": try value(profile.prompts),
            "experiments": try array(profile.experiments, value),
            "backup": .object([
                "queuesOnChange": .bool(profile.backup.queuesOnChange),
                "format": .string(profile.backup.format),
            ]),
            "migration": .object([
                "steps": try array(profile.migration.steps) { step throws(Mismatch) in
                    .object(["name": .string(step.name), "collections": strings(step.collections)])
                }
            ]),
            "upgrade": try optional(profile.upgrade) { upgrade throws(Mismatch) in
                .object([
                    "fromVersion": number(upgrade.fromVersion),
                    "steps": try array(upgrade.steps) { step throws(Mismatch) in value(step) },
                ])
            },
            "webhooks": try value(profile.webhooks),
        ])
    }

    private static func value(_ meter: Meter) throws(Mismatch) -> JSONValue {
        .object([
            "name": .string(meter.name),
            "unit": .string(meter.unit),
            "reset": .string(meter.reset.rawValue),
            "warnings": try array(meter.warnings) { warning throws(Mismatch) in
                .object(["percent": try number(warning.percent), "level": .string(warning.level.rawValue)])
            },
            "overage": .string(meter.overage.rawValue),
        ])
    }

    private static func value(_ tier: Tier) throws(Mismatch) -> JSONValue {
        var allowances: [String: JSONValue] = [:]
        for (meter, allowance) in tier.allowances { allowances[meter] = try number(allowance) }
        return .object([
            "level": .string(tier.level.rawValue),
            "caps": .object(tier.caps.mapValues { number($0) }),
            "allowances": .object(allowances),
            "whenCapped": .string(tier.whenCapped.rawValue),
        ])
    }

    private static func value(_ span: TimeSpan) -> JSONValue {
        .array(
            span.components.map { .object(["amount": number($0.amount), "unit": .string($0.unit.rawValue)]) })
    }

    private static func value(_ plan: Plan) throws(Mismatch) -> JSONValue {
        .object([
            "name": .string(plan.name),
            "price": .string(plan.price.description),
            "currency": .string(plan.currency),
            "billingPeriod": value(plan.billingPeriod),
            "trial": try optional(plan.trial) { span throws(Mismatch) in value(span) },
            "tier": .string(plan.tier.rawValue),
            "appStoreProducts": .array(plan.appStoreProducts.map { .string($0) }),
            "revenueCatEntitlements": .array(plan.revenueCatEntitlements.map { .string($0) }),
        ])
    }

    private static func value(_ prompts: PromptPolicy) throws(Mismatch) -> JSONValue {
        .object([
            "cooldown": try optional(prompts.cooldown) { span throws(Mismatch) in value(span) },
            "window": try optional(prompts.window) { span throws(Mismatch) in value(span) },
            "maximumShownPerWindow": try optional(prompts.maximumShownPerWindow) { count throws(Mismatch) in
                number(count)
            },
            "rules": try array(prompts.rules, value),
            "triggers": try array(prompts.triggers) { trigger throws(Mismatch) in
                let source: JSONValue =
                    switch trigger.source {
                    case .collection(let collection, let outcome):
                        .object([
                            "case": .string("collection"), "collection": .string(collection),
                            "outcome": outcome.map { .string($0.rawValue) } ?? .null,
                        ])
                    case .meter(let meter): .object(["case": .string("meter"), "meter": .string(meter)])
                    }
                return .object(["name": .string(trigger.name), "source": source])
            },
        ])
    }

    private static func value(_ rule: PromptRule) throws(Mismatch) -> JSONValue {
        .object([
            "context": .string(rule.context),
            "priority": .string(rule.priority.rawValue),
            "isOnce": .bool(rule.isOnce),
            "reshowAfter": try optional(rule.reshowAfter) { span throws(Mismatch) in value(span) },
            "trigger": rule.trigger.map { .string($0) } ?? .null,
            "conditions": try array(rule.conditions, value),
            "content": .object([
                "title": .string(rule.content.title),
                "message": .string(rule.content.message),
                "benefits": strings(rule.content.benefits),
                "primaryAction": .string(rule.content.primaryAction),
                "secondaryAction": .string(rule.content.secondaryAction),
                "style": .string(rule.content.style),
            ]),
            "kind": .string(rule.kind.rawValue),
        ])
    }

    private static func value(_ comparison: Comparison) throws(Mismatch) -> JSONValue {
        .object(["comparator": .string(comparison.comparator.rawValue), "value": try number(comparison.value)])
    }

    private static func value(_ condition: Condition) throws(Mismatch) -> JSONValue {
        switch condition {
        case .counter(let action, let comparison):
            .object(["case": .string("counter"), "action": .string(action), "comparison": try value(comparison)])
        case .daysSinceFirstSeen(let comparison):
            .object(["case": .string("daysSinceFirstSeen"), "comparison": try value(comparison)])
        case .state(let state):
            .object(["case": .string("state"), "state": .string(state.rawValue)])
        case .limitReached(let collection, let outcome):
            .object([
                "case": .string("limitReached"), "collection": .string(collection),
                "outcome": outcome.map { .string($0.rawValue) } ?? .null,
            ])
        case .limitRemaining(let collection, let comparison):
            .object([
                "case": .string("limitRemaining"), "collection": .string(collection),
                "comparison": try value(comparison),
            ])
        case .meterPercentUsed(let meter, let comparison):
            .object([
                "case": .string("meterPercentUsed"), "meter": .string(meter), "comparison": try value(comparison),
            ])
        case .meterRemaining(let meter, let comparison):
            .object([
                "case": .string("meterRemaining"), "meter": .string(meter), "comparison": try value(comparison),
            ])
        case .meterExhausted(let meter):
            .object(["case": .string("meterExhausted"), "meter": .string(meter)])
        }
    }

    private static func value(_ override: PromptContentOverride) -> JSONValue {
        .object([
            "title": override.title.map { .string($0) } ?? .null,
            "message": override.message.map { .string($0) } ?? .null,
            "benefits": override.benefits.map { strings($0) } ?? .null,
            "primaryAction": override.primaryAction.map { .string($0) } ?? .null,
            "secondaryAction": override.secondaryAction.map { .string($0) } ?? .null,
            "style": override.style.map { .string($0) } ?? .null,
        ])
    }

    private static func value(_ experiment: Experiment) throws(Mismatch) -> JSONValue {
        .object([
            "name": .string(experiment.name),
            "seed": .string(experiment.seed),
            "coverage": try number(experiment.coverage),
            "variants": try array(experiment.variants) { variant throws(Mismatch) in
                .object([
                    "name": .string(variant.name),
                    "weight": try number(variant.weight),
                    "promptCooldown": try optional(variant.promptCooldown) { span throws(Mismatch) in value(span) },
                    "enabledContexts": variant.enabledContexts.map { strings($0) } ?? .null,
                    "contentOverrides": .object(variant.contentOverrides.mapValues { value($0) }),
                ])
            },
        ])
    }

    private static func value(_ step: DataMigration) -> JSONValue {
        switch step {
        case .renameCollection(let from, let to):
            .object(["case": .string("renameCollection"), "from": .string(from), "to": .string(to)])
        case .renameField(let collection, let from, let to):
            .object([
                "case": .string("renameField"), "collection": .string(collection), "from": .string(from),
                "to": .string(to),
            ])
        }
    }

    private static func value(_ webhooks: WebhookSettings) throws(Mismatch) -> JSONValue {
        .object([
            "endpoints": try array(webhooks.endpoints) { endpoint throws(Mismatch) in
                let secret: JSONValue =
                    switch endpoint.secret {
                    case .file(let path): .object(["case": .string("file"), "path": .string(path)])
                    case .environment(let name): .object(["case": .string("environment"), "name": .string(name)])
                    }
                return .object([
                    "name": .string(endpoint.name),
                    "url": .string(endpoint.url),
                    "events": .array(endpoint.events.map { .string($0.rawValue) }),
                    "secret": secret,
                ])
            },
            "maxAttempts": number(webhooks.maxAttempts),
        ])
    }
}

// MARK: - Reading

/// An object's members, present exactly as named (no member missing, none unknown).
private struct Members {
    let members: [String: JSONValue]

    init(_ value: JSONValue, _ names: [String]) throws(ProfileCacheCodec.Mismatch) {
        guard case .object(let members) = value, members.count == names.count,
            names.allSatisfy({ members[$0] != nil })
        else { throw ProfileCacheCodec.Mismatch() }
        self.members = members
    }

    subscript(name: String) -> JSONValue { members[name] ?? .null }
}

extension JSONValue {
    fileprivate func string() throws(ProfileCacheCodec.Mismatch) -> String {
        guard case .string(let text) = self else { throw ProfileCacheCodec.Mismatch() }
        return text
    }

    fileprivate func bool() throws(ProfileCacheCodec.Mismatch) -> Bool {
        guard case .bool(let value) = self else { throw ProfileCacheCodec.Mismatch() }
        return value
    }

    /// An integer written as `String(Int)` writes it.
    fileprivate func int() throws(ProfileCacheCodec.Mismatch) -> Int {
        guard case .number(let text) = self, let value = Int(text), String(value) == text else {
            throw ProfileCacheCodec.Mismatch()
        }
        return value
    }

    /// A finite double written as `String(Double)` writes it, so it reads back to the same bits.
    fileprivate func double() throws(ProfileCacheCodec.Mismatch) -> Double {
        guard case .number(let text) = self, let value = Double(text), value.isFinite, String(value) == text else {
            throw ProfileCacheCodec.Mismatch()
        }
        return value
    }

    /// A decimal written as its `description`. Plain text (`ProfileCacheCodec.isPlainDecimal`) is what
    /// `description` writes for the value it parses to, so only other text is asked of `description`,
    /// whose first call costs a conformance scan in Foundation: 0.4 M instructions of every command's
    /// start-up (bench/results.md, "Start-up").
    fileprivate func decimal() throws(ProfileCacheCodec.Mismatch) -> Decimal {
        let text = try string()
        guard let value = Decimal(string: text, locale: nil),
            ProfileCacheCodec.isPlainDecimal(text) || value.description == text
        else {
            throw ProfileCacheCodec.Mismatch()
        }
        return value
    }

    fileprivate func raw<T: RawRepresentable>(_: T.Type) throws(ProfileCacheCodec.Mismatch) -> T
    where T.RawValue == String {
        guard let value = T(rawValue: try string()) else { throw ProfileCacheCodec.Mismatch() }
        return value
    }

    fileprivate func optional<T>(
        _ read: (JSONValue) throws(ProfileCacheCodec.Mismatch) -> T
    )
        throws(ProfileCacheCodec.Mismatch) -> T?
    {
        if case .null = self { return nil }
        return try read(self)
    }

    fileprivate func array<T>(
        _ read: (JSONValue) throws(ProfileCacheCodec.Mismatch) -> T
    )
        throws(ProfileCacheCodec.Mismatch) -> [T]
    {
        guard case .array(let elements) = self else { throw ProfileCacheCodec.Mismatch() }
        var values: [T] = []
        values.reserveCapacity(elements.count)
        for element in elements { values.append(try read(element)) }
        return values
    }

    fileprivate func strings() throws(ProfileCacheCodec.Mismatch) -> [String] {
        try array { element throws(ProfileCacheCodec.Mismatch) in try element.string() }
    }

    fileprivate func dictionary<T>(
        _ read: (JSONValue) throws(ProfileCacheCodec.Mismatch) -> T
    )
        throws(ProfileCacheCodec.Mismatch) -> [String: T]
    {
        guard case .object(let members) = self else { throw ProfileCacheCodec.Mismatch() }
        var values: [String: T] = [:]
        values.reserveCapacity(members.count)
        for (name, member) in members { values[name] = try read(member) }
        return values
    }

    /// The `case` an enum with payloads was written with.
    fileprivate func caseName() throws(ProfileCacheCodec.Mismatch) -> String {
        guard case .object(let members) = self, let name = members["case"] else { throw ProfileCacheCodec.Mismatch() }
        return try name.string()
    }
}

extension ProfileCacheCodec {
    private static func profile(_ value: JSONValue) throws(Mismatch) -> Profile {
        let members = try Members(
            value,
            [
                "name", "version", "summary", "guestOwner", "allowsFreeFormActions", "identity", "collections",
                "actions", "meters", "tiers", "plans", "prompts", "experiments", "backup", "migration", "upgrade",
                "webhooks",
            ])
        let identity = try Members(members["identity"], ["providers", "maximumProvidersPerUser"])
        let backup = try Members(members["backup"], ["queuesOnChange", "format"])
        let migration = try Members(members["migration"], ["steps"])
        return Profile(
            name: try members["name"].string(),
            version: try members["version"].int(),
            summary: try members["summary"].string(),
            guestOwner: try members["guestOwner"].string(),
            allowsFreeFormActions: try members["allowsFreeFormActions"].bool(),
            identity: IdentityPolicy(
                providers: try identity["providers"].strings(),
                maximumProvidersPerUser: try identity["maximumProvidersPerUser"].int()),
            collections: try members["collections"].array { value throws(Mismatch) in
                let collection = try Members(value, ["name", "uniqueFields", "onMergeConflict"])
                return RecordCollection(
                    name: try collection["name"].string(), uniqueFields: try collection["uniqueFields"].strings(),
                    onMergeConflict: try collection["onMergeConflict"].raw(MergeConflictRule.self))
            },
            actions: try members["actions"].strings(),
            meters: try members["meters"].array(meter),
            tiers: try members["tiers"].array(tier),
            plans: try members["plans"].array(plan),
            prompts: try prompts(members["prompts"]),
            experiments: try members["experiments"].array(experiment),
            backup: BackupPolicy(
                queuesOnChange: try backup["queuesOnChange"].bool(), format: try backup["format"].string()),
            migration: MigrationPolicy(
                steps: try migration["steps"].array { value throws(Mismatch) in
                    let step = try Members(value, ["name", "collections"])
                    return MigrationStep(
                        name: try step["name"].string(), collections: try step["collections"].strings())
                }),
            upgrade: try members["upgrade"].optional { value throws(Mismatch) in
                let upgrade = try Members(value, ["fromVersion", "steps"])
                return ProfileUpgrade(
                    fromVersion: try upgrade["fromVersion"].int(), steps: try upgrade["steps"].array(dataMigration))
            },
            webhooks: try webhooks(members["webhooks"]))
    }

    private static func meter(_ value: JSONValue) throws(Mismatch) -> Meter {
        let meter = try Members(value, ["name", "unit", "reset", "warnings", "overage"])
        return Meter(
            name: try meter["name"].string(),
            unit: try meter["unit"].string(),
            reset: try meter["reset"].raw(MeterReset.self),
            warnings: try meter["warnings"].array { value throws(Mismatch) in
                let warning = try Members(value, ["percent", "level"])
                return MeterWarning(
                    percent: try warning["percent"].double(), level: try warning["level"].raw(MeterLevel.self))
            },
            overage: try meter["overage"].raw(MeterOverage.self))
    }

    private static func tier(_ value: JSONValue) throws(Mismatch) -> Tier {
        let tier = try Members(value, ["level", "caps", "allowances", "whenCapped"])
        return Tier(
            level: try tier["level"].raw(TierLevel.self),
            caps: try tier["caps"].dictionary { value throws(Mismatch) in try value.int() },
            allowances: try tier["allowances"].dictionary { value throws(Mismatch) in try value.double() },
            whenCapped: try tier["whenCapped"].raw(CapOutcome.self))
    }

    /// A span as its components, which must already be in the one form
    /// `TimeSpan` keeps (largest unit first, one per unit).
    private static func timeSpan(_ value: JSONValue) throws(Mismatch) -> TimeSpan {
        let components = try value.array { value throws(Mismatch) in
            let component = try Members(value, ["amount", "unit"])
            return TimeSpan.Component(
                amount: try component["amount"].int(), unit: try component["unit"].raw(TimeSpan.Unit.self))
        }
        guard let span = TimeSpan(components: components), span.components == components else { throw Mismatch() }
        return span
    }

    private static func plan(_ value: JSONValue) throws(Mismatch) -> Plan {
        let plan = try Members(
            value,
            [
                "name", "price", "currency", "billingPeriod", "trial", "tier", "appStoreProducts",
                "revenueCatEntitlements",
            ])
        return Plan(
            name: try plan["name"].string(),
            price: try plan["price"].decimal(),
            currency: try plan["currency"].string(),
            billingPeriod: try timeSpan(plan["billingPeriod"]),
            trial: try plan["trial"].optional(timeSpan),
            tier: try plan["tier"].raw(TierLevel.self),
            appStoreProducts: try plan["appStoreProducts"].strings(),
            revenueCatEntitlements: try plan["revenueCatEntitlements"].strings())
    }

    private static func prompts(_ value: JSONValue) throws(Mismatch) -> PromptPolicy {
        let prompts = try Members(value, ["cooldown", "window", "maximumShownPerWindow", "rules", "triggers"])
        return PromptPolicy(
            cooldown: try prompts["cooldown"].optional(timeSpan),
            window: try prompts["window"].optional(timeSpan),
            maximumShownPerWindow: try prompts["maximumShownPerWindow"].optional { value throws(Mismatch) in
                try value.int()
            },
            rules: try prompts["rules"].array(rule),
            triggers: try prompts["triggers"].array { value throws(Mismatch) in
                let trigger = try Members(value, ["name", "source"])
                let sourceValue = trigger["source"]
                let source: PromptTrigger.Source
                switch try sourceValue.caseName() {
                case "collection":
                    let members = try Members(sourceValue, ["case", "collection", "outcome"])
                    source = .collection(
                        try members["collection"].string(),
                        outcome: try members["outcome"].optional { value throws(Mismatch) in
                            try value.raw(CapOutcome.self)
                        })
                case "meter":
                    source = .meter(try Members(sourceValue, ["case", "meter"])["meter"].string())
                default: throw Mismatch()
                }
                return PromptTrigger(name: try trigger["name"].string(), source: source)
            })
    }

    private static func rule(_ value: JSONValue) throws(Mismatch) -> PromptRule {
        let rule = try Members(
            value, ["context", "priority", "isOnce", "reshowAfter", "trigger", "conditions", "content", "kind"])
        let content = try Members(
            rule["content"], ["title", "message", "benefits", "primaryAction", "secondaryAction", "style"])
        return PromptRule(
            context: try rule["context"].string(),
            priority: try rule["priority"].raw(PromptPriority.self),
            isOnce: try rule["isOnce"].bool(),
            reshowAfter: try rule["reshowAfter"].optional(timeSpan),
            trigger: try rule["trigger"].optional { value throws(Mismatch) in try value.string() },
            conditions: try rule["conditions"].array(condition),
            content: PromptContent(
                title: try content["title"].string(),
                message: try content["message"].string(),
                benefits: try content["benefits"].strings(),
                primaryAction: try content["primaryAction"].string(),
                secondaryAction: try content["secondaryAction"].string(),
                style: try content["style"].string()),
            kind: try rule["kind"].raw(PromptKind.self))
    }

    private static func comparison(_ value: JSONValue) throws(Mismatch) -> Comparison {
        let comparison = try Members(value, ["comparator", "value"])
        return Comparison(
            comparator: try comparison["comparator"].raw(Comparison.Operator.self),
            value: try comparison["value"].double())
    }

    private static func condition(_ value: JSONValue) throws(Mismatch) -> Condition {
        switch try value.caseName() {
        case "counter":
            let members = try Members(value, ["case", "action", "comparison"])
            return .counter(action: try members["action"].string(), comparison: try comparison(members["comparison"]))
        case "daysSinceFirstSeen":
            return .daysSinceFirstSeen(try comparison(try Members(value, ["case", "comparison"])["comparison"]))
        case "state":
            return .state(try Members(value, ["case", "state"])["state"].raw(UserState.self))
        case "limitReached":
            let members = try Members(value, ["case", "collection", "outcome"])
            return .limitReached(
                collection: try members["collection"].string(),
                outcome: try members["outcome"].optional { value throws(Mismatch) in try value.raw(CapOutcome.self) })
        case "limitRemaining":
            let members = try Members(value, ["case", "collection", "comparison"])
            return .limitRemaining(
                collection: try members["collection"].string(), comparison: try comparison(members["comparison"]))
        case "meterPercentUsed":
            let members = try Members(value, ["case", "meter", "comparison"])
            return .meterPercentUsed(
                meter: try members["meter"].string(), comparison: try comparison(members["comparison"]))
        case "meterRemaining":
            let members = try Members(value, ["case", "meter", "comparison"])
            return .meterRemaining(
                meter: try members["meter"].string(), comparison: try comparison(members["comparison"]))
        case "meterExhausted":
            return .meterExhausted(meter: try Members(value, ["case", "meter"])["meter"].string())
        default:
            throw Mismatch()
        }
    }

    private static func contentOverride(_ value: JSONValue) throws(Mismatch) -> PromptContentOverride {
        let override = try Members(
            value, ["title", "message", "benefits", "primaryAction", "secondaryAction", "style"])
        func text(_ name: String) throws(Mismatch) -> String? {
            try override[name].optional { value throws(Mismatch) in try value.string() }
        }
        return PromptContentOverride(
            title: try text("title"),
            message: try text("message"),
            benefits: try override["benefits"].optional { value throws(Mismatch) in try value.strings() },
            primaryAction: try text("primaryAction"),
            secondaryAction: try text("secondaryAction"),
            style: try text("style"))
    }

    private static func experiment(_ value: JSONValue) throws(Mismatch) -> Experiment {
        let experiment = try Members(value, ["name", "seed", "coverage", "variants"])
        return Experiment(
            name: try experiment["name"].string(),
            seed: try experiment["seed"].string(),
            coverage: try experiment["coverage"].double(),
            variants: try experiment["variants"].array { value throws(Mismatch) in
                let variant = try Members(
                    value, ["name", "weight", "promptCooldown", "enabledContexts", "contentOverrides"])
                return Variant(
                    name: try variant["name"].string(),
                    weight: try variant["weight"].double(),
                    promptCooldown: try variant["promptCooldown"].optional(timeSpan),
                    enabledContexts: try variant["enabledContexts"].optional { value throws(Mismatch) in
                        try value.strings()
                    },
                    contentOverrides: try variant["contentOverrides"].dictionary(contentOverride))
            })
    }

    private static func dataMigration(_ value: JSONValue) throws(Mismatch) -> DataMigration {
        switch try value.caseName() {
        case "renameCollection":
            let members = try Members(value, ["case", "from", "to"])
            return .renameCollection(from: try members["from"].string(), to: try members["to"].string())
        case "renameField":
            let members = try Members(value, ["case", "collection", "from", "to"])
            return .renameField(
                collection: try members["collection"].string(), from: try members["from"].string(),
                to: try members["to"].string())
        default:
            throw Mismatch()
        }
    }

    private static func webhooks(_ value: JSONValue) throws(Mismatch) -> WebhookSettings {
        let webhooks = try Members(value, ["endpoints", "maxAttempts"])
        return WebhookSettings(
            endpoints: try webhooks["endpoints"].array { value throws(Mismatch) in
                let endpoint = try Members(value, ["name", "url", "events", "secret"])
                let secretValue = endpoint["secret"]
                let secret: WebhookSecretSource
                switch try secretValue.caseName() {
                case "file": secret = .file(try Members(secretValue, ["case", "path"])["path"].string())
                case "environment":
                    secret = .environment(try Members(secretValue, ["case", "name"])["name"].string())
                default: throw Mismatch()
                }
                return WebhookEndpoint(
                    name: try endpoint["name"].string(),
                    url: try endpoint["url"].string(),
                    events: try endpoint["events"].array { value throws(Mismatch) in
                        try value.raw(WebhookEventType.self)
                    },
                    secret: secret)
            },
            maxAttempts: try webhooks["maxAttempts"].int())
    }
}
