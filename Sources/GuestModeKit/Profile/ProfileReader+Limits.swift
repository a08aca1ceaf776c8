import Foundation
import Yams

// `identity`, `collections`, `actions`, `meters`, `tiers` and `plans`: what a user may keep and use.
extension ProfileReader {
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
            let allowed = [
                "price", "currency", "period", "trial", "tier", "app_store_products", "revenuecat_entitlements",
            ]
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
                case "app_store_products":
                    plan.appStoreProducts = storeIDs(
                        optionValue, "\(what) app_store_products", example: "com.example.app.premium.monthly")
                case "revenuecat_entitlements":
                    plan.revenueCatEntitlements = storeIDs(
                        optionValue, "\(what) revenuecat_entitlements", example: "premium")
                default:
                    plan.tier = choice(optionValue, "\(what) tier", as: TierLevel.self) ?? .premium
                    if plan.tier == .guest { report(optionValue, "\(what) cannot lift its holder to the guest tier") }
                }
            }
            plans.append(plan)
        }
        // A purchase must name one plan: a product or an entitlement mapped twice is refused.
        for (key, label, ids) in [
            ("app_store_products", "App Store product", plans.map { ($0.name, $0.appStoreProducts) }),
            ("revenuecat_entitlements", "RevenueCat entitlement", plans.map { ($0.name, $0.revenueCatEntitlements) }),
        ] {
            var owner: [String: String] = [:]
            for (planName, list) in ids {
                for id in list {
                    if let first = owner[id] {
                        if first == planName {
                            report(node, "plan '\(planName)' lists the \(label) '\(id)' twice in \(key); list it once")
                        } else {
                            report(
                                node,
                                "the \(label) '\(id)' is mapped to two plans, '\(first)' and '\(planName)' (\(key)); a purchase must name one plan: keep it under one of them"
                            )
                        }
                    } else {
                        owner[id] = planName
                    }
                }
            }
        }
        return plans
    }

    /// A list of a store's ids: non-empty text without spaces or control characters.
    private func storeIDs(_ node: Node, _ what: String, example: String) -> [String] {
        (sequence(node, what) ?? []).compactMap { item in
            guard let id = string(item, "an item of \(what)") else { return nil }
            if id.isEmpty || id.count > 200
                || id.unicodeScalars.contains(where: {
                    $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7f
                })
            {
                report(
                    item,
                    "\(what) item '\(id)' must be a store id without spaces, 1 to 200 characters, such as \(example)")
                return nil
            }
            return id
        }
    }
}
