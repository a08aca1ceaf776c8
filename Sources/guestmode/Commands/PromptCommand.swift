import ArgumentParser
import Foundation
import GuestModeKit

struct PromptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prompt",
        abstract: "Decide which sign-in prompt to show, record what users did with it, and show their history.",
        subcommands: [Next.self, Record.self, History.self]
    )

    struct Next: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "next",
            abstract: "Print the one prompt to show a user now, or exit 13 when none is due.",
            discussion: """
                Rules are checked against the user's counters, days since first seen, state and prompt history, \
                with the cooldown and window cap of the profile (or of the user's experiment variant). Among \
                eligible prompts the highest priority wins; among equal priorities the one declared first. \
                Nothing is recorded: report what the user saw with 'prompt record'.
                """
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("The user id.", valueName: "user"))
        var user: String

        @Option(
            name: .long,
            help: ArgumentHelp(
                "The moment the app is at; rules with a trigger are offered only when it is named here.",
                valueName: "context"))
        var trigger: String?

        func run() throws {
            let engine = try global.openEngine()
            let offer: PromptOffer
            switch try engine.nextPrompt(for: user, trigger: trigger, now: try global.currentTime()) {
            case let .show(shown): offer = shown
            case let .nothingDue(reason):
                throw GuestModeError(.nothingDue, code: reason.code, "no prompt due for \(user): \(reason.explanation)")
            }
            if global.json { return try global.output.json(offer) }
            let output = global.output
            output.line("\(output.bold(offer.context))  \(offer.priority.rawValue)")
            output.line(offer.content.title)
            output.line(offer.content.message)
            for benefit in offer.content.benefits { output.line("  - \(benefit)") }
            output.line(
                "[\(offer.content.primaryAction)]  [\(offer.content.secondaryAction)]  style: \(offer.content.style)")
            for variant in offer.variants {
                output.detail("experiment \(variant.experiment): variant \(variant.variant ?? "none")")
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
                if global.json {
                    struct Recorded: Encodable { var recorded: Int }
                    return try global.output.json(Recorded(recorded: count))
                }
                if !global.quiet { global.output.line("recorded \(count) prompt outcomes") }
                return
            }
            guard let user, let context, let outcome else { return }
            let recorded = try engine.recordPrompt(outcome, context: context, for: user, now: try global.currentTime())
            if global.json { return try global.output.json(recorded) }
            if !global.quiet {
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

        @Argument(help: ArgumentHelp("The user id.", valueName: "user"))
        var user: String

        func run() throws {
            let engine = try global.openEngine()
            let history = try engine.promptHistory(for: user)
            if global.json { return try global.output.json(history) }
            if !global.quiet { global.output.note("prompt state: \(history.promptState.rawValue)") }
            global.output.table(
                history.outcomes.map { [Timestamp.format($0.at), $0.context, $0.outcome.rawValue] },
                header: ["AT", "CONTEXT", "OUTCOME"])
        }
    }
}
