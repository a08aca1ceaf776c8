import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct ProfileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "List, show and validate profiles.",
        discussion: "The profile format is described in guestmode-profile(5).",
        subcommands: [List.self, Show.self, Validate.self, Apply.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the profile templates.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var listing: ListingOptions

        func run() throws {
            let templates = try global.catalog().templates()
            try listing.render(
                templates, header: ["NAME", "VERSION", "DESCRIPTION"],
                rows: templates.map { [$0.name, "v\($0.version)", $0.summary] },
                dataRows: templates.map { [$0.name, String($0.version), $0.summary] }, global: global)
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Show a resolved profile: the store's, or a template's or file's.",
            discussion: """
                Without an argument, shows the profile of the store (--store). Tier caps and allowances are \
                shown resolved: a tier inherits what it does not set from the tier below.
                """
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("A template name or a profile file.", valueName: "name|file"))
        var profile: String?

        func run() throws {
            let resolved: Profile
            if let profile {
                resolved = try global.catalog().load(profile).profile
            } else {
                resolved = try global.openEngine().profile
            }
            global.output.data(value: ProfileDocument.value(of: resolved)) {
                ProfileSummary(profile: resolved, output: global.output).print()
            }
        }
    }

    struct Validate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "validate",
            abstract: "Check a profile file and report every problem as file:line: message.",
            discussion: "Exits 0 when the profile is valid, 65 when it is not, 66 when the file does not exist."
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("The profile file or template name.", valueName: "file"))
        var file: String

        func run() throws {
            let source = try global.catalog().load(file)
            struct Valid: Encodable { var valid = true; var profile: String; var version: Int; var file: String }
            try global.output.result(
                Valid(profile: source.profile.name, version: source.profile.version, file: source.origin)
            ) {
                global.output.line("\(source.origin): valid profile \(source.profile.name) v\(source.profile.version)")
            }
        }
    }
}

extension ProfileCommand {
    struct Apply: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apply",
            abstract: "Move the store to a new version of its profile, all-or-nothing, showing the plan first.",
            discussion: """
                The new file must name the same profile with a higher version. Its 'upgrade' section declares \
                data migrations (rename_collection, rename_field) from the store's version; caps and \
                allowances simply take their new values. A collection dropped while it still holds records \
                refuses the upgrade (exit 65) and nothing changes.
                """
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("The new version of the profile.", valueName: "file"))
        var file: String

        @Flag(help: "Show the plan and change nothing.")
        var dryRun = false

        func run() throws {
            let engine = try global.openEngine()
            let source = try global.catalog().load(file)
            let plan = dryRun || !global.json ? try engine.planProfileUpgrade(to: source) : nil
            if let plan, !global.json { Apply.print(plan, output: global.output) }
            if dryRun {
                if global.json, let plan { try global.output.json(plan) }
                if let plan, !plan.isApplicable {
                    throw GuestModeError(
                        .profileUpgradeRefused,
                        "the upgrade cannot be applied: \(plan.refusals.joined(separator: "; "))")
                }
                return
            }
            let applied = try engine.applyProfileUpgrade(to: source, now: try global.currentTime())
            try global.output.result(applied) {
                global.output.line("applied: the store is now at \(applied.profile) v\(applied.toVersion)")
            }
        }

        static func print(_ plan: ProfileUpgradePlan, output: Output) {
            output.line("plan: \(plan.profile) v\(plan.fromVersion) → v\(plan.toVersion)")
            for step in plan.dataSteps { output.line("  \(step.description): \(counted(step.records, "record"))") }
            for change in plan.limitChanges { output.line("  limit \(change)") }
            for collection in plan.addedCollections { output.line("  new collection \(collection)") }
            for refusal in plan.refusals { output.line("  refused: \(refusal)") }
        }
    }
}

/// The human-readable form of a profile.
struct ProfileSummary {
    var profile: Profile
    var output: Output

    func print() {
        output.line(
            output.bold("profile \(profile.name) v\(profile.version)")
                + (profile.summary.isEmpty ? "" : " — \(profile.summary)"))
        output.line("collections:  \(profile.collections.map(\.name).joined(separator: ", "))")
        output.line(
            "actions:      \(profile.actions.joined(separator: ", "))\(profile.allowsFreeFormActions ? " (and any other)" : "")"
        )
        output.line(
            "identity:     \(profile.identity.providers.joined(separator: ", ")); at most \(profile.identity.maximumProvidersPerUser) per user"
        )
        output.line("tiers:")
        for tier in profile.tiers {
            var limits: [String] = profile.collections.compactMap { collection in
                tier.cap(for: collection.name).map { "\(collection.name) ≤ \($0)" }
            }
            limits += profile.meters.map { meter in
                tier.allowance(for: meter.name).map { "\(meter.name) \(formatAmount($0)) \(meter.unit)" }
                    ?? "\(meter.name) unlimited"
            }
            let description = limits.isEmpty ? "no caps" : limits.joined(separator: ", ")
            output.line(
                "  \(padded(tier.level.rawValue, to: 8)) \(description); when capped: \(tier.whenCapped.rawValue)"
            )
        }
        for meter in profile.meters {
            let warnings = meter.warnings.map { "\(formatAmount($0.percent))% \($0.level.rawValue)" }.joined(
                separator: ", ")
            output.line(
                "meter:        \(meter.name) (\(meter.unit), resets \(meter.reset.rawValue)\(warnings.isEmpty ? "" : "; warnings at \(warnings)"))"
            )
        }
        for plan in profile.plans {
            let trial = plan.trial.map { ", trial \($0)" } ?? ""
            output.line(
                "plan:         \(plan.name) \(plan.price) \(plan.currency) per \(plan.billingPeriod)\(trial) → \(plan.tier.rawValue)"
            )
        }
        let prompts = profile.prompts
        var caps: [String] = []
        if let cooldown = prompts.cooldown { caps.append("cooldown \(cooldown)") }
        if let window = prompts.window, let maximum = prompts.maximumShownPerWindow {
            caps.append("at most \(maximum) per \(window)")
        }
        output.line(
            "prompts:      \(prompts.rules.count) rules\(caps.isEmpty ? "" : "; " + caps.joined(separator: ", "))")
        for rule in prompts.rules.sorted(by: { $0.priority > $1.priority }) {
            output.line(
                "  \(rule.context) (\(rule.priority.rawValue)\(rule.isOnce ? ", once" : "")\(rule.trigger.map { ", on trigger \($0)" } ?? ""))"
            )
        }
        for experiment in profile.experiments {
            let variants = experiment.variants.map { "\($0.name) \(formatAmount($0.weight * 100))%" }.joined(
                separator: ", ")
            output.line("experiment:   \(experiment.name): \(variants)")
        }
        output.line(
            "backup:       \(profile.backup.format)\(profile.backup.queuesOnChange ? ", queued on every change" : "")")
        output.line("migration:    \(profile.migration.steps.map(\.name).joined(separator: " → "))")
        for endpoint in profile.webhooks.endpoints {
            output.line("webhook:      \(endpoint.name) → \(endpoint.url) (\(endpoint.events.count) event types)")
        }
    }
}
