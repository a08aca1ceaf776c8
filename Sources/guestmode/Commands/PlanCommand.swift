import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct PlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Grant, revoke and show plans (entitlements).",
        discussion: """
            A plan in force lifts its holder to the plan's tier (see the profile's plans). Trials and \
            fixed terms end by the clock (--now). A plan granted to a guest stays when the guest links an \
            identity.
            """,
        subcommands: [Grant.self, Revoke.self, Status.self, Import.self]
    )

    struct Grant: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "grant",
            abstract: "Grant a plan, open-ended, as a trial, or until a time.")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user id.") var user: String
        @Argument(help: "The plan, as the profile names it.") var plan: String

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "A trial of this length: ISO 8601 (P1M, P7D, PT24H) or short (7d, 24h, 1 month); calendar months and years end on the same day of the month, UTC.",
                valueName: "duration"))
        var trial: String?

        @Option(
            parsing: .unconditional, help: ArgumentHelp("The plan ends at this time (ISO 8601).", valueName: "time"))
        var until: String?

        func validate() throws {
            if trial != nil && until != nil { throw ValidationError("give either --trial or --until, not both") }
            if let trial, case .failure(let refusal) = TimeSpan.parse(trial) {
                throw ValidationError("--trial: \(refusal)")
            }
            if let until, Timestamp.parse(until) == nil {
                throw ValidationError("--until '\(until)' is not an ISO 8601 time")
            }
        }

        func run() throws {
            let status = try global.openEngine().grantPlan(
                user: user, plan: plan, trial: trial.flatMap(TimeSpan.init(parsing:)),
                until: until.flatMap(Timestamp.parse), now: try global.currentTime())
            try global.output.result(status, text: "granted \(PlanCommand.describe(status))")
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "revoke", abstract: "Revoke a plan now.")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user id.") var user: String
        @Argument(help: "The plan.") var plan: String

        func run() throws {
            let status = try global.openEngine().revokePlan(user: user, plan: plan, now: try global.currentTime())
            try global.output.result(status, text: "revoked \(PlanCommand.describe(status))")
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show a user's plans: active, trial, expired or revoked, by --now.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var listing: ListingOptions

        @Argument(help: "The user id.") var user: String
        @Argument(help: "Only this plan.") var plan: String?

        func run() throws {
            let engine = try global.openEngine()
            let now = try global.currentTime()
            var plans = try engine.plans(user: user, now: now)
            if let plan {
                plans = plans.filter { $0.plan == plan }
                if plans.isEmpty {
                    throw GuestModeError(.planNotFound, "user '\(user)' never held plan '\(plan)'")
                }
            }
            struct Report: Encodable { var user: String; var tier: TierLevel; var plans: [PlanStatus] }
            let report = Report(user: user, tier: try engine.tier(user: user, now: now), plans: plans)
            if listing.resolved(global) == .table {
                global.output.note("tier \(report.tier.rawValue)")
            }
            try listing.render(
                document: report, items: plans, header: ["PLAN", "STATE", "TIER", "GRANTED", "ENDS", "REVOKED"],
                rows: plans.map { status in
                    [
                        status.plan, status.state.rawValue, status.tier.rawValue, Timestamp.format(status.grantedAt),
                        status.endsAt.map(Timestamp.format) ?? "", status.revokedAt.map(Timestamp.format) ?? "",
                    ]
                }, global: global)
        }
    }

    static func describe(_ status: PlanStatus) -> String {
        var text =
            "\(status.plan) \(status.state.rawValue) (tier \(status.tier.rawValue), granted \(Timestamp.format(status.grantedAt))"
        if let end = status.endsAt {
            text += ", \(status.state == .expired ? "ended" : "ends") \(Timestamp.format(end))"
        }
        if let revoked = status.revokedAt { text += ", revoked \(Timestamp.format(revoked))" }
        return text + ")"
    }
}
