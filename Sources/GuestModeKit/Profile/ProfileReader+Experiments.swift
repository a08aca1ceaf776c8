import Foundation
import Yams

// `experiments`: variants, their weights and the prompt copy they rewrite.
extension ProfileReader {
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
}
