import Foundation

/// `profile show --json`: the profile in the YAML's own vocabulary (guestmode-profile(5)), resolved, so
/// that the output saved as a `.yaml` file loads again as the same profile. Keys the YAML leaves out when
/// they do not apply (a plan without a trial, a rule without a trigger) are left out here too, since the
/// profile format has no null.
package enum ProfileDocument {
    package static func value(of profile: Profile) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("name", .string(profile.name)),
            ("version", .number(String(profile.version))),
            ("description", .string(profile.summary)),
            ("guest_owner", .string(profile.guestOwner)),
            ("free_form_actions", .bool(profile.allowsFreeFormActions)),
            (
                "identity",
                .object([
                    ("providers", .array(profile.identity.providers.map(JSONValue.string))),
                    ("max_providers_per_user", .number(String(profile.identity.maximumProvidersPerUser))),
                ])
            ),
            ("collections", .object(profile.collections.map { ($0.name, collection($0)) })),
            ("actions", .array(profile.actions.map(JSONValue.string))),
            ("meters", .object(profile.meters.map { ($0.name, meter($0)) })),
            ("tiers", .object(profile.tiers.map { ($0.level.rawValue, tier($0, of: profile)) })),
            ("plans", .object(profile.plans.map { ($0.name, plan($0)) })),
            ("prompts", prompts(profile.prompts)),
            ("experiments", .object(profile.experiments.map { ($0.name, experiment($0)) })),
            (
                "backup",
                .object([("outbox", .bool(profile.backup.queuesOnChange)), ("format", .string(profile.backup.format))])
            ),
            ("migration", .object([("steps", .array(profile.migration.steps.map(step)))])),
        ]
        if let upgrade = profile.upgrade {
            members.append(
                (
                    "upgrade",
                    .object([
                        ("from", .number(String(upgrade.fromVersion))),
                        ("steps", .array(upgrade.steps.map(dataMigration))),
                    ])
                ))
        }
        if !profile.webhooks.endpoints.isEmpty {
            members.append(("webhooks", webhooks(profile.webhooks)))
        }
        return .object(members)
    }

    /// Where each secret is read from, never a secret: the profile holds none.
    private static func webhooks(_ settings: WebhookSettings) -> JSONValue {
        let endpoints = settings.endpoints.map { endpoint -> JSONValue in
            let secret: (String, JSONValue) =
                switch endpoint.secret {
                case .file(let path): ("secret_file", .string(path))
                case .environment(let name): ("secret_env", .string(name))
                }
            return .object([
                ("name", .string(endpoint.name)), ("url", .string(endpoint.url)),
                ("events", .array(endpoint.events.map { .string($0.rawValue) })), secret,
            ])
        }
        return .object([("endpoints", .array(endpoints)), ("max_attempts", .number(String(settings.maxAttempts)))])
    }

    private static func collection(_ collection: RecordCollection) -> JSONValue {
        var members: [(String, JSONValue)] = [("on_merge_conflict", .string(collection.onMergeConflict.rawValue))]
        if !collection.uniqueFields.isEmpty {
            members.append(("unique", .array(collection.uniqueFields.map(JSONValue.string))))
        }
        return .object(members)
    }

    private static func meter(_ meter: Meter) -> JSONValue {
        .object([
            ("unit", .string(meter.unit)),
            ("reset", .string(meter.reset.rawValue)),
            (
                "warnings",
                .array(
                    meter.warnings.map {
                        .object([("percent", .number($0.percent)), ("level", .string($0.level.rawValue))])
                    })
            ),
            ("overage", .string(meter.overage.rawValue)),
        ])
    }

    /// Resolved: every capped collection and every meter is named, `unlimited` where the tier lifts it,
    /// so nothing is inherited again on load.
    private static func tier(_ tier: Tier, of profile: Profile) -> JSONValue {
        let capped = profile.collections.map(\.name).filter { name in profile.tiers.contains { $0.caps[name] != nil } }
        var members: [(String, JSONValue)] = [("when_capped", .string(tier.whenCapped.rawValue))]
        if !capped.isEmpty {
            members.append(
                (
                    "caps",
                    .object(capped.map { ($0, tier.caps[$0].map { .number(String($0)) } ?? .string("unlimited")) })
                ))
        }
        if !profile.meters.isEmpty {
            members.append(
                (
                    "meters",
                    .object(
                        profile.meters.map { meter in
                            (
                                meter.name,
                                tier.allowances[meter.name].map { JSONValue.number($0) } ?? .string("unlimited")
                            )
                        })
                ))
        }
        return .object(members)
    }

    private static func plan(_ plan: Plan) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("price", .number(plan.price.description)),
            ("currency", .string(plan.currency)),
            ("period", .string(plan.billingPeriod.description)),
            ("tier", .string(plan.tier.rawValue)),
        ]
        if let trial = plan.trial { members.append(("trial", .string(trial.description))) }
        if !plan.appStoreProducts.isEmpty {
            members.append(("app_store_products", .array(plan.appStoreProducts.map { .string($0) })))
        }
        if !plan.revenueCatEntitlements.isEmpty {
            members.append(("revenuecat_entitlements", .array(plan.revenueCatEntitlements.map { .string($0) })))
        }
        return .object(members)
    }

    private static func prompts(_ policy: PromptPolicy) -> JSONValue {
        var members: [(String, JSONValue)] = []
        if let cooldown = policy.cooldown { members.append(("cooldown", .string(cooldown.description))) }
        if let window = policy.window { members.append(("window", .string(window.description))) }
        if let maximum = policy.maximumShownPerWindow { members.append(("max_per_window", .number(String(maximum)))) }
        if !policy.triggers.isEmpty {
            members.append(("triggers", .object(policy.triggers.map { ($0.name, trigger($0)) })))
        }
        members.append(("rules", .array(policy.rules.map(rule))))
        return .object(members)
    }

    private static func trigger(_ trigger: PromptTrigger) -> JSONValue {
        switch trigger.source {
        case let .collection(collection, outcome):
            var members: [(String, JSONValue)] = [("collection", .string(collection))]
            if let outcome { members.append(("outcome", .string(outcome.rawValue))) }
            return .object(members)
        case let .meter(meter): return .object([("meter", .string(meter))])
        }
    }

    private static func content(_ override: PromptContentOverride) -> JSONValue {
        var members: [(String, JSONValue)] = []
        if let title = override.title { members.append(("title", .string(title))) }
        if let message = override.message { members.append(("message", .string(message))) }
        if let benefits = override.benefits { members.append(("benefits", .array(benefits.map(JSONValue.string)))) }
        if let primary = override.primaryAction { members.append(("primary_action", .string(primary))) }
        if let secondary = override.secondaryAction { members.append(("secondary_action", .string(secondary))) }
        if let style = override.style { members.append(("style", .string(style))) }
        return .object(members)
    }

    private static func rule(_ rule: PromptRule) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("context", .string(rule.context)),
            ("kind", .string(rule.kind.rawValue)),
            ("priority", .string(rule.priority.rawValue)),
            ("once", .bool(rule.isOnce)),
            ("when", .array(rule.conditions.map(condition))),
            (
                "content",
                .object([
                    ("title", .string(rule.content.title)),
                    ("message", .string(rule.content.message)),
                    ("benefits", .array(rule.content.benefits.map(JSONValue.string))),
                    ("primary_action", .string(rule.content.primaryAction)),
                    ("secondary_action", .string(rule.content.secondaryAction)),
                    ("style", .string(rule.content.style)),
                ])
            ),
        ]
        if let reshow = rule.reshowAfter { members.append(("reshow_after", .string(reshow.description))) }
        if let trigger = rule.trigger { members.append(("trigger", .string(trigger))) }
        return .object(members)
    }

    private static func condition(_ condition: Condition) -> JSONValue {
        func comparison(_ comparison: Comparison) -> (String, JSONValue) {
            (comparison.comparator.rawValue, .number(comparison.value))
        }
        switch condition {
        case let .counter(action, value): return .object([("counter", .string(action)), comparison(value)])
        case let .daysSinceFirstSeen(value): return .object([("days_since_first_seen", .null), comparison(value)])
        case let .state(state): return .object([("state", .string(state.rawValue))])
        case let .limitReached(collection, outcome):
            var members: [(String, JSONValue)] = [("limit_reached", .string(collection))]
            if let outcome { members.append(("outcome", .string(outcome.rawValue))) }
            return .object(members)
        case let .limitRemaining(collection, value):
            return .object([("limit_remaining", .string(collection)), comparison(value)])
        case let .meterPercentUsed(meter, value):
            return .object([("meter_percent_used", .string(meter)), comparison(value)])
        case let .meterRemaining(meter, value):
            return .object([("meter_remaining", .string(meter)), comparison(value)])
        case let .meterExhausted(meter): return .object([("meter_exhausted", .string(meter))])
        }
    }

    private static func experiment(_ experiment: Experiment) -> JSONValue {
        .object([
            ("seed", .string(experiment.seed)),
            ("coverage", .number(experiment.coverage)),
            (
                "variants",
                .array(
                    experiment.variants.map { variant in
                        var members: [(String, JSONValue)] = [
                            ("name", .string(variant.name)), ("weight", .number(variant.weight)),
                        ]
                        if let cooldown = variant.promptCooldown {
                            members.append(("prompt_cooldown", .string(cooldown.description)))
                        }
                        if let contexts = variant.enabledContexts {
                            members.append(("contexts", .array(contexts.map(JSONValue.string))))
                        }
                        if !variant.contentOverrides.isEmpty {
                            members.append(
                                (
                                    "content",
                                    .object(
                                        variant.contentOverrides.sorted { $0.key < $1.key }.map {
                                            ($0.key, content($0.value))
                                        })
                                ))
                        }
                        return .object(members)
                    })
            ),
        ])
    }

    private static func step(_ step: MigrationStep) -> JSONValue {
        var members: [(String, JSONValue)] = [("name", .string(step.name))]
        if !step.collections.isEmpty { members.append(("collections", .array(step.collections.map(JSONValue.string)))) }
        return .object(members)
    }

    private static func dataMigration(_ migration: DataMigration) -> JSONValue {
        switch migration {
        case let .renameCollection(from, to):
            return .object([("rename_collection", .object([("from", .string(from)), ("to", .string(to))]))])
        case let .renameField(collection, from, to):
            return .object([
                (
                    "rename_field",
                    .object([("collection", .string(collection)), ("from", .string(from)), ("to", .string(to))])
                )
            ])
        }
    }
}
