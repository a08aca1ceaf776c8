import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit

struct TourCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tour",
        abstract: "Walk each profile end to end on a temporary store, running and checking every command it shows.",
        discussion: """
            The tour is the first thing to run: it creates a throwaway store per profile, drives it the way an \
            app would, and explains each decision. Your own store (--store) is never touched. With PROFILE, \
            only that profile's walk runs.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Only this template.", valueName: "profile"))
    var profile: String?

    func run() throws {
        let catalog = global.catalog()
        let templates = try catalog.templates()
        if templates.isEmpty {
            throw GuestModeError(
                .noTemplates,
                "no profile templates found; searched \(catalog.directories.map(\.path).joined(separator: ", "))")
        }
        let names =
            try profile.map { name in
                guard templates.contains(where: { $0.name == name }) else {
                    throw GuestModeError(
                        .profileNotFound,
                        "no template named '\(name)'; known: \(templates.map(\.name).joined(separator: ", "))")
                }
                return [name]
            } ?? templates.map(\.name)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "guestmode-tour-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let tour = TourRunner(
            executable: executableURL(), directory: directory, start: try global.currentTime(),
            output: global.output, brokenStep: FaultHooks.brokenTourStep)
        for name in names {
            let source = try catalog.load(name)
            tour.begin(profile: name, summary: source.profile.summary)
            do {
                try TourWalks.walk(source.profile, on: tour)
            } catch let failure as TourRunner.Failure {
                ConsoleStream.error.write(failure.description + "\n")
                throw ExitCode(1)
            }
        }
        if global.json { try global.output.json(tour.steps) }
    }
}
