import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct ExperimentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "experiment",
        abstract: "Assign users to the profile's experiments.",
        subcommands: [Assign.self]
    )

    struct Assign: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "assign",
            abstract: "Print a user's variant in one experiment or in all of them, assigning it on first use.",
            discussion: """
                The variant comes from GrowthBook's hash version 2 of the experiment's seed and the user id, so a \
                GrowthBook SDK on the device computes the same one. Once assigned it is stored and kept, even if \
                the profile's weights change. A user outside the experiment's coverage gets no variant. \
                See guestmode-experiment(1) for the algorithm.
                """
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("The user id.", valueName: "user"))
        var user: String

        @Argument(help: ArgumentHelp("One experiment of the profile (default: all of them).", valueName: "experiment"))
        var experiment: String?

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Put the user in this variant, replacing any assignment (needs an experiment).", valueName: "name"))
        var variant: String?

        func validate() throws {
            if variant != nil && experiment == nil {
                throw ValidationError(
                    "--variant needs the experiment it belongs to: experiment assign USER EXPERIMENT --variant NAME")
            }
        }

        func run() throws {
            let engine = try global.openEngine()
            let now = try global.currentTime()
            let assignments: [ExperimentAssignment]
            if let variant, let experiment {
                assignments = [try engine.forceVariant(variant, of: experiment, user: user, now: now)]
            } else {
                assignments = try engine.assignExperiments(user: user, named: experiment, now: now)
            }
            struct Assigned: Encodable { var user: String; var assignments: [ExperimentAssignment] }
            try global.output.data(Assigned(user: user, assignments: assignments)) {
                if assignments.isEmpty {
                    global.output.note("profile '\(engine.profile.name)' has no experiments")
                    return
                }
                global.output.table(
                    assignments.map { assignment in
                        [
                            assignment.experiment, assignment.variant ?? "(not in experiment)",
                            String(format: "%.4f", assignment.bucket),
                            assignment.assignedAt.map(Timestamp.format) ?? "-",
                            assignment.isNew ? "new" : (assignment.variant == nil ? "-" : "kept"),
                        ]
                    },
                    header: ["EXPERIMENT", "VARIANT", "BUCKET", "ASSIGNED", "STATUS"])
            }
        }
    }
}
