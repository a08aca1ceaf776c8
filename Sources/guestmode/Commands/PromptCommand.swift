import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct PromptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prompt",
        abstract: "Decide which sign-in prompt to show, record what users did with it, and show their history.",
        subcommands: [Next.self, Record.self, History.self, Reset.self]
    )

    struct Next: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "next",
            abstract: "Print the one prompt to show a user now, or exit 13 when none is due.",
            discussion: """
                Rules are checked against the user's counters, days since first seen, state, collection limits, \
                meters, raised triggers and prompt history, with the cooldown and window cap of the profile (or of \
                the user's experiment variant). Among eligible prompts the highest priority wins; among equal \
                priorities the one declared first. The content is the variant's copy when the user's variant \
                rewrites it, with placeholders filled from the user's state. Nothing is recorded: report what the \
                user saw with 'prompt record'. With --json, exit 13 still prints the decision document on stdout.
                """
        )

        /// `prompt next USER [--trigger T] [--explain]` without ArgumentParser's reflection (`QuickCommand`).
        static let quick = QuickCommand(
            path: ["prompt", "next"], operands: 1...1, options: ["--trigger": .value, "--explain": .flag]
        ) { line in
            var command = Next()
            command.global = line.global
            command.user = line.operands[0]
            command.trigger = try line.value("--trigger")
            command.explain = line.flag("--explain")
            return command
        }

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("The user id.", valueName: "user"))
        var user: String

        @Option(
            name: .long,
            help: ArgumentHelp(
                "The moment the app is at; rules with a trigger are offered only when it is named here.",
                valueName: "context"))
        var trigger: String?

        @Flag(
            name: .long,
            help: "Also say which rule decided and, for every rule, why it is or is not due.")
        var explain = false

        func run() throws {
            let engine = try global.openEngine()
            let explanation = try engine.explainPrompt(user: user, trigger: trigger, now: try global.currentTime())
            let output = global.output
            guard let offer = explanation.offer else {
                let reason = explanation.quiet ?? .noEligibleRule
                try output.data(explanation) { if explain { printRules(explanation) } }
                throw GuestModeError(reason.code, "no prompt due for \(user): \(reason.explanation)")
            }
            try output.data(explain ? AnyEncodable(explanation) : AnyEncodable(offer)) {
                output.line("\(output.bold(offer.context))  \(offer.priority.rawValue)")
                output.line(offer.content.title)
                output.line(offer.content.message)
                for benefit in offer.content.benefits { output.line("  - \(benefit)") }
                output.line(
                    "[\(offer.content.primaryAction)]  [\(offer.content.secondaryAction)]  style: \(offer.content.style)"
                )
                for variant in offer.variants {
                    output.detail("experiment \(variant.experiment): variant \(variant.variant ?? "none")")
                }
                if explain {
                    output.line("")
                    output.line("decided by: \(offer.context)")
                    printRules(explanation)
                }
            }
        }

        /// One line per rule: context, verdict, reason.
        func printRules(_ explanation: PromptExplanation) {
            global.output.table(
                explanation.rules.map { [$0.context, $0.priority.rawValue, $0.verdict.rawValue, $0.message] },
                header: ["CONTEXT", "PRIORITY", "VERDICT", "REASON"])
        }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Undo a user's \"never ask again\" so prompts may be offered again.",
            discussion: """
                Moves a user whose prompt state is never_ask to dismissed and records a prompt_reset event; \
                "never" outcomes recorded before the reset no longer silence prompts. Cooldowns, once-only \
                prompts and the rest of the history still apply. A user who had not said "never" is left as is \
                (exit 0, reset: false).
                """
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("The user id.", valueName: "user"))
        var user: String

        func run() throws {
            let engine = try global.openEngine()
            let result = try engine.resetPrompts(user: user, now: try global.currentTime())
            try global.output.result(result) {
                global.output.line(
                    result.wasReset
                        ? "reset prompts for \(user): \"never\" undone; prompt state \(result.promptState.rawValue)"
                        : "\(user) had not said never; prompt state \(result.promptState.rawValue) unchanged")
            }
        }
    }

    struct Record: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "record",
            abstract: "Record what a user did with a prompt: shown, dismissed, later, never or completed.",
            discussion: """
                'never' silences every prompt for the user forever; 'completed' moves the user's prompt state to \
                authenticated. With --from, a log of NDJSON lines {"user","context","outcome","at"} (the form \
                'replay --decisions' writes) is recorded in one transaction: all lines or none.
                """
        )

        /// `prompt record USER CONTEXT OUTCOME` without ArgumentParser's reflection (`QuickCommand`); `--from`
        /// is left to ArgumentParser.
        static let quick = QuickCommand(path: ["prompt", "record"], operands: 3...3) { line in
            var command = Record()
            command.global = line.global
            command.user = line.operands[0]
            command.context = line.operands[1]
            command.outcome = try line.operand(2, as: PromptOutcome.self)
            command.from = nil
            return command
        }

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("The user id.", valueName: "user"))
        var user: String?

        @Argument(help: ArgumentHelp("The prompt context.", valueName: "context"))
        var context: String?

        @Argument(help: ArgumentHelp("shown, dismissed, later, never or completed.", valueName: "outcome"))
        var outcome: PromptOutcome?

        @Option(
            name: .long,
            help: ArgumentHelp("Record a log of outcomes from a file, or - for standard input.", valueName: "file"))
        var from: String?

        func validate() throws {
            if from != nil {
                if user != nil { throw ValidationError("give either USER CONTEXT OUTCOME or --from FILE, not both") }
            } else if user == nil || context == nil || outcome == nil {
                throw ValidationError("missing USER CONTEXT OUTCOME (or --from FILE)")
            }
        }

        func run() throws {
            let engine = try global.openEngine()
            if let from {
                let records = try PromptRecord.parseLog(try readInput(from), origin: from == "-" ? "stdin" : from)
                let count = try engine.recordPrompts(records)
                struct Recorded: Encodable { var recorded: Int }
                return try global.output.result(Recorded(recorded: count), text: "recorded \(count) prompt outcomes")
            }
            guard let user, let context, let outcome else { return }
            let recorded = try engine.recordPrompt(outcome, context: context, user: user, now: try global.currentTime())
            try global.output.result(recorded) {
                global.output.line(
                    "recorded \(outcome.rawValue) of \(context) for \(user); prompt state \(recorded.promptState.rawValue)"
                )
            }
        }
    }

    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "history", abstract: "List a user's prompt outcomes, oldest first.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var listing: ListingOptions

        @Argument(help: ArgumentHelp("The user id.", valueName: "user"))
        var user: String

        func run() throws {
            let engine = try global.openEngine()
            let history = try engine.promptHistory(user: user)
            if listing.resolved(global) == .table {
                global.output.note("prompt state: \(history.promptState.rawValue)")
            }
            try listing.render(
                document: history, items: history.outcomes, header: ["AT", "CONTEXT", "OUTCOME"],
                rows: history.outcomes.map { [Timestamp.format($0.at), $0.context, $0.outcome.rawValue] },
                global: global)
        }
    }
}

/// Lets one `output.json` call print either of two document types.
private struct AnyEncodable: Encodable {
    let encodeValue: (any Encoder) throws -> Void
    init(_ value: some Encodable) { encodeValue = value.encode }
    func encode(to encoder: any Encoder) throws { try encodeValue(encoder) }
}
