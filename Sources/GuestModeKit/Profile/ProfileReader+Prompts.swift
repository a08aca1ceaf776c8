import Foundation
import Yams

// `prompts`: the rules, their conditions, triggers and content.
extension ProfileReader {
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
            switch (fields["collection"], fields["meter"]) {
            case let (collectionNode?, nil):
                guard let collection = name(collectionNode, "\(what) collection") else { continue }
                if !promptScope.collections.contains(collection) {
                    report(
                        collectionNode, "\(what) names unknown collection '\(collection)'; declare it under collections"
                    )
                }
                var outcome: CapOutcome?
                if let outcomeNode = fields["outcome"] {
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
                if let outcomeNode = fields["outcome"] {
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
        let context = name(fields["context"], "prompt context") ?? ""
        let what = "prompt '\(context)'"
        let priority = choice(fields["priority"], "\(what) priority", as: PromptPriority.self) ?? .low
        let once = boolean(fields["once"], "\(what) once") ?? false
        let reshow = span(fields["reshow_after"], "\(what) reshow_after")
        let trigger = name(fields["trigger"], "\(what) trigger")
        let kind = fields["kind"].map { choice($0, "\(what) kind", as: PromptKind.self) ?? .signIn } ?? .signIn
        var conditions: [Condition] = []
        for item in sequence(fields["when"], "\(what) when") ?? [] {
            if let condition = readCondition(item, what, actions: actions, freeForm: freeForm) {
                conditions.append(condition)
            }
        }
        let content = readContent(fields["content"], what)
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
        let outcomeNode = fields["outcome"]
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
}
