import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct MeterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meter",
        abstract: "Meter usage against the tier's allowance: record, gate and report.",
        discussion: """
            Call 'meter check' before a paid API call: it exits 0 when the amount fits and 12 when the meter \
            is exhausted, and records nothing (with --raise-prompt, a refusal raises the meter's prompt \
            triggers as a refused use does). 'meter use' records usage (once per --id) and reports each \
            warning threshold the first time it is crossed; a use that does not fit is refused whole, exit 12, \
            unless overage is allowed (--overage allow, or the meter's 'overage: allow' in the profile): then \
            usage that already happened is recorded in full, the meter reads exhausted, and the exit status is \
            still 12, with the usage recorded. 'meter grant' gives a user extra allowance on top of the \
            tier's (a referral bonus, a refund); usage draws on grants first, the one that expires soonest \
            first, and the gate and warnings see the total.
            """,
        subcommands: [Use.self, Check.self, Status.self, Grant.self, Grants.self, RevokeGrant.self]
    )

    struct Use: ParsableCommand {
        // The usage is written out: generated, the amount read `.allUnrecognized` (see `MeterCommand.amount`)
        // would show as `[<amount> ...]`. SignedValueTests checks it names every argument.
        static let configuration = CommandConfiguration(
            commandName: "use", abstract: "Record usage of a meter.",
            usage: """
                guestmode meter use [--store <path|uri>] [--schema <name>] [--now <time>] [--json] [--quiet] \
                [--verbose] <user> <meter> <amount> [--id <key>] [--overage <allow|refuse>]
                """)

        /// `meter use USER METER AMOUNT [--id K] [--overage O]` without ArgumentParser's reflection
        /// (`QuickCommand`); an amount beginning with `-` is left to ArgumentParser.
        static let quick = QuickCommand(
            path: ["meter", "use"], operands: 2...3, options: ["--id": .value, "--overage": .value]
        ) { line in
            var command = Use()
            command.global = line.global
            command.user = line.operands[0]
            command.meter = line.operands[1]
            command.amount = Array(line.operands.dropFirst(2))
            command.id = try line.value("--id")
            command.overage = try line.value("--overage")
            return command
        }

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user id.") var user: String
        @Argument(help: "The meter.") var meter: String
        @Argument(
            parsing: .allUnrecognized,
            help: ArgumentHelp(
                "How much was used, in the meter's unit: a plain decimal such as 12.2 (at most 6 decimals).",
                valueName: "amount"))
        var amount: [String] = []

        @Option(
            help: ArgumentHelp(
                "An idempotency key: a repeated key records once; the key with another amount is refused (exit 14).",
                valueName: "key"))
        var id: String?

        @Option(
            help: ArgumentHelp(
                "Usage past the allowance: refuse records nothing; allow records it in full and exits 12 with the usage recorded (default: the meter's overage in the profile, else refuse).",
                valueName: "allow|refuse"))
        var overage: MeterOverage?

        func validate() throws {
            if try MeterCommand.amount(amount) == nil { throw ValidationError("missing expected argument '<amount>'") }
        }

        func run() throws {
            let amount = try MeterAmount.parse(try MeterCommand.amount(self.amount) ?? "")
            let result = try global.openEngine().useMeter(
                user: user, meter: meter, amount: amount, key: id, overage: overage,
                now: try global.currentTime())
            // The warnings are data (a script acts on them), so --quiet keeps them.
            try global.output.data(result) {
                for warning in result.warnings {
                    global.output.line(
                        "\(warning.level.rawValue): \(warning.meter) passed \(formatAmount(warning.percent))% of its allowance"
                    )
                }
                let verb =
                    result.isOverage
                    ? "recorded (overage)"
                    : result.isRecorded
                        ? "recorded"
                        : result.isDuplicate ? "already recorded (id \(id ?? ""))" : "refused"
                global.output.say("\(verb) \(amount) \(result.status.unit): \(result.status.summary)")
            }
            if let refusal = result.refusal { throw refusal.failure }
        }
    }

    struct Check: ParsableCommand {
        // Written out as `use`'s is.
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Gate a call: exit 0 if the amount fits, 12 if not. Records nothing.",
            usage: """
                guestmode meter check [--store <path|uri>] [--schema <name>] [--now <time>] [--json] [--quiet] \
                [--verbose] <user> <meter> [<amount>] [--raise-prompt]
                """)

        /// `meter check USER METER [AMOUNT] [--raise-prompt]` without ArgumentParser's reflection
        /// (`QuickCommand`).
        static let quick = QuickCommand(
            path: ["meter", "check"], operands: 2...3, options: ["--raise-prompt": .flag]
        ) { line in
            var command = Check()
            command.global = line.global
            command.user = line.operands[0]
            command.meter = line.operands[1]
            command.amount = Array(line.operands.dropFirst(2))
            command.raisePrompt = line.flag("--raise-prompt")
            return command
        }

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user id.") var user: String
        @Argument(help: "The meter.") var meter: String
        @Argument(
            parsing: .allUnrecognized,
            help: ArgumentHelp(
                "The amount about to be used, a plain decimal (default: anything left).", valueName: "amount"))
        var amount: [String] = []

        @Flag(
            help:
                "Have a refusal raise the meter's prompt triggers and its meter.exhausted webhook, as a refused 'meter use' does (a write); without it the check records and raises nothing."
        )
        var raisePrompt = false

        func validate() throws { _ = try MeterCommand.amount(amount) }

        func run() throws {
            let amount = try MeterCommand.amount(self.amount).map(MeterAmount.parse)
            let engine = try global.openEngine()
            let now = try global.currentTime()
            let decision =
                raisePrompt
                ? try engine.checkMeterRaisingPrompt(user: user, meter: meter, amount: amount, now: now)
                : try engine.checkMeter(user: user, meter: meter, amount: amount, now: now)
            try global.output.result(decision) {
                if decision.isAllowed { global.output.line("allowed: \(decision.status.summary)") }
            }
            if let refusal = decision.refusal { throw refusal.failure }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show used, remaining, percent and level of a user's meters.")

        /// `meter status USER [METER] [--format F]` without ArgumentParser's reflection (`QuickCommand`).
        static let quick = QuickCommand(path: ["meter", "status"], operands: 1...2, options: ["--format": .value]) {
            line in
            var command = Status()
            command.global = line.global
            command.listing = try ListingOptions(line)
            command.user = line.operands[0]
            command.meter = line.operands.dropFirst().first
            return command
        }

        @OptionGroup var global: GlobalOptions

        @OptionGroup var listing: ListingOptions

        @Argument(help: "The user id.") var user: String
        @Argument(help: "Only this meter.") var meter: String?

        func run() throws {
            let engine = try global.openEngine()
            let now = try global.currentTime()
            let statuses =
                try meter.map { [try engine.meterStatus(user: user, meter: $0, now: now)] }
                ?? engine.meterStatuses(user: user, now: now)
            try listing.render(
                statuses, header: ["METER", "TIER", "USED", "ALLOWANCE", "REMAINING", "PERCENT", "LEVEL", "GRANTED"],
                rows: statuses.map { status in
                    [
                        status.meter, status.tier.rawValue, status.used.description,
                        status.allowance?.description ?? "unlimited", status.remaining?.description ?? "unlimited",
                        status.percentUsed.map { "\(formatAmount($0.rounded()))%" } ?? "-", status.level.rawValue,
                        status.granted.description,
                    ]
                },
                dataRows: statuses.map { status in
                    [
                        status.meter, status.tier.rawValue, status.used.description,
                        status.allowance?.description ?? "", status.remaining?.description ?? "",
                        Listing.number(status.percentUsed), status.level.rawValue, status.granted.description,
                    ]
                }, global: global)
        }
    }

    /// The amount operand. It is read `.allUnrecognized`, the strategy that
    /// keeps a negative amount (`-5`, which ArgumentParser would take for an
    /// option) so that `MeterAmount` refuses it as an amount ("must be
    /// positive"); whatever else comes with it is refused as ArgumentParser
    /// refuses it.
    static func amount(_ words: [String]) throws -> String? {
        var amount: String?
        for word in words where word != "--" {
            if word.hasPrefix("-") && !isNegativeNumber(word) { throw ValidationError("unknown option '\(word)'") }
            guard amount == nil else { throw ValidationError("unexpected argument '\(word)'") }
            amount = word
        }
        return amount
    }

    private static func isNegativeNumber(_ word: String) -> Bool {
        guard word.hasPrefix("-"), let next = word.dropFirst().first else { return false }
        return next.isASCII && (next.isNumber || next == ".")
    }
}
