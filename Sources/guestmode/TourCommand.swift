import ArgumentParser
import Foundation
import GuestModeKit

struct Tour: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Walk each profile end to end on a temporary store and narrate what happens.",
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
            throw GuestModeError(.notFound, code: "no_templates", "no profile templates found; searched \(catalog.directories.map(\.path).joined(separator: ", "))")
        }
        let names = try profile.map { name in
            guard templates.contains(where: { $0.name == name }) else {
                throw GuestModeError(.notFound, code: "profile_not_found", "no template named '\(name)'; known: \(templates.map(\.name).joined(separator: ", "))")
            }
            return [name]
        } ?? templates.map(\.name)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("guestmode-tour-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        var narrator = Narrator(output: global.output)
        let start = try global.currentTime()
        for name in names {
            let source = try catalog.load(name)
            let path = directory.appendingPathComponent("\(name).sqlite").path
            narrator.heading("\(name): \(source.profile.summary)")
            try GuestMode.initialize(storePath: path, source: source, replacing: false, now: start)
            narrator.say("guestmode init --profile \(name)", "a store bound to \(name) v\(source.profile.version)")
            let engine = try GuestMode.open(storePath: path)
            try TourWalk(engine: engine, start: start).run(narrating: &narrator)
        }
        if global.json { try global.output.json(narrator.steps) }
    }
}

/// Collects the tour's steps; prints them as it goes unless --json.
struct Narrator {
    struct Step: Encodable { var profile: String?; var command: String; var outcome: String }

    var output: Output
    var steps: [Step] = []
    var currentProfile: String?

    mutating func heading(_ text: String) {
        currentProfile = String(text.prefix { $0 != ":" })
        if output.isJSON || output.isQuiet { return }
        if !steps.isEmpty { output.line() }
        output.line(output.bold("== \(text)"))
    }

    mutating func say(_ command: String, _ outcome: String) {
        steps.append(Step(profile: currentProfile, command: command, outcome: outcome))
        if output.isJSON || output.isQuiet { return }
        output.line("  \(output.dim("$")) \(command)")
        output.line("    \(outcome)")
    }
}

/// The walk through one profile, driven by what the profile declares.
struct TourWalk {
    var engine: GuestMode
    var start: Date

    func run(narrating narrator: inout Narrator) throws {
        let profile = engine.profile
        let guestCaps = profile.tier(.guest).caps.sorted { $0.key < $1.key }
            .map { "\($0.key) ≤ \($0.value)" }
        narrator.say(
            "guestmode profile show",
            "guests: \(guestCaps.isEmpty ? "no record caps" : guestCaps.joined(separator: ", ")); "
                + "\(profile.meters.count) meters, \(profile.plans.count) plans, \(profile.prompts.rules.count) prompt rules")
        for meter in profile.meters {
            let allowance = profile.tier(.guest).allowance(for: meter.name).map { formatAmount($0) } ?? "unlimited"
            narrator.say("guestmode profile show  # meter \(meter.name)", "a guest gets \(allowance) \(meter.unit), reset \(meter.reset.rawValue)")
        }
    }
}
