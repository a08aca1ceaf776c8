import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeKit

struct TourCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tour",
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
            throw GuestModeError(
                .notFound, code: .noTemplates,
                "no profile templates found; searched \(catalog.directories.map(\.path).joined(separator: ", "))")
        }
        let names =
            try profile.map { name in
                guard templates.contains(where: { $0.name == name }) else {
                    throw GuestModeError(
                        .notFound, code: .profileNotFound,
                        "no template named '\(name)'; known: \(templates.map(\.name).joined(separator: ", "))")
                }
                return [name]
            } ?? templates.map(\.name)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "guestmode-tour-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        var narrator = Narrator(output: global.output)
        let start = try global.currentTime()
        for name in names {
            let source = try catalog.load(name)
            let path = directory.appendingPathComponent("\(name).sqlite").path
            narrator.heading("\(name): \(source.profile.summary)")
            try StoreLocation.sqlite(path: path).create(profile: source, replacing: false, now: start)
            narrator.say("guestmode init --profile \(name)", "a store bound to \(name) v\(source.profile.version)")
            let engine = try GuestMode.opening(try StoreLocation.sqlite(path: path).open(), at: path)
            try TourWalk(engine: engine, start: start, directory: directory, catalog: catalog).run(narrating: &narrator)
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

/// The walk through one profile. What it shows is decided by what the
/// profile declares (caps, meters, plans), never by the profile's name.
struct TourWalk {
    var engine: GuestMode
    var start: Date
    /// The tour's scratch directory, for backups and fresh stores.
    var directory: URL
    var catalog: ProfileCatalog

    private var profile: Profile { engine.profile }

    func run(narrating narrator: inout Narrator) throws {
        let guestCaps = profile.tier(.guest).caps.sorted { $0.key < $1.key }.map { "\($0.key) ≤ \($0.value)" }
        narrator.say(
            "guestmode profile show",
            "guests: \(guestCaps.isEmpty ? "no record caps" : guestCaps.joined(separator: ", ")); "
                + "\(profile.meters.count) meters, \(profile.plans.count) plans, \(profile.prompts.rules.count) prompt rules"
        )

        let guest = try engine.createGuest(device: "tour-phone", now: start)
        narrator.say("guestmode guest new --device tour-phone", "a guest: \(guest.id) (anonymous, no account needed)")
        try walkEvents(guest.id, &narrator)
        for collection in profile.collections where profile.tier(.guest).cap(for: collection.name) != nil {
            try walkCap(guest.id, collection: collection.name, &narrator)
        }
        for meter in profile.meters where profile.tier(.guest).allowance(for: meter.name) != nil {
            try walkMeter(meter, &narrator)
        }
        try walkIdentityConflict(&narrator)
        try walkPrompts(&narrator)
        try walkMigration(&narrator)
        try walkBackup(guest.id, &narrator)
    }

    private func walkEvents(_ user: String, _ narrator: inout Narrator) throws {
        for action in profile.actions.prefix(2) {
            let result = try engine.track(
                TrackedEvent(user: user, action: action, at: start, count: 2, idempotencyKey: "tour-\(action)"),
                now: start)
            narrator.say(
                "guestmode track \(short(user)) \(action) --count 2 --id tour-\(action)",
                "counter \(action) = \(result.total)")
            let again = try engine.track(
                TrackedEvent(user: user, action: action, at: start, count: 2, idempotencyKey: "tour-\(action)"),
                now: start)
            narrator.say(
                "guestmode track \(short(user)) \(action) --count 2 --id tour-\(action)",
                "a retried report with the same id counts once: still \(again.total)")
        }
    }

    private func walkCap(_ user: String, collection: String, _ narrator: inout Narrator) throws {
        let cap = profile.tier(.guest).cap(for: collection) ?? 0
        for index in 1...cap {
            _ = try engine.putRecord(
                user: user, collection: collection, key: "item-\(index)", json: #"{"n":\#(index)}"#, now: start)
        }
        narrator.say(
            "guestmode record put \(short(user)) \(collection) item-1 … item-\(cap)",
            "\(cap) records stored, the guest cap")
        let over = try engine.putRecord(
            user: user, collection: collection, key: "item-\(cap + 1)", json: "{}", now: start)
        narrator.say(
            "guestmode record put \(short(user)) \(collection) item-\(cap + 1)",
            "refused: \(over.outcome.rawValue) (exit \(over.outcome.failureKind?.exitStatus ?? 0)); nothing stored")
        _ = try engine.link(
            user: user, provider: profile.identity.providers[0], subject: "tour-\(user)", email: nil, now: start)
        let records = try engine.records(user: user, collection: collection).count
        narrator.say(
            "guestmode link \(short(user)) --provider \(profile.identity.providers[0]) --subject …",
            "the same user id is now an account and still has its \(records) \(collection)")
        let asAccount = try engine.putRecord(
            user: user, collection: collection, key: "item-\(cap + 1)", json: "{}", now: start)
        narrator.say(
            "guestmode record put \(short(user)) \(collection) item-\(cap + 1)",
            asAccount.outcome == .allowed
                ? "stored: accounts may keep more"
                : "refused: \(asAccount.outcome.rawValue) (exit \(asAccount.outcome.failureKind?.exitStatus ?? 0))")
        if asAccount.outcome != .allowed,
            let plan = profile.plans.first(where: { profile.tier($0.tier).cap(for: collection) == nil })
        {
            _ = try engine.grantPlan(user: user, plan: plan.name, trial: nil, until: nil, now: start)
            let lifted = try engine.putRecord(
                user: user, collection: collection, key: "item-\(cap + 1)", json: "{}", now: start)
            narrator.say(
                "guestmode plan grant \(short(user)) \(plan.name) && guestmode record put …",
                "\(plan.name) (\(plan.price) \(plan.currency) per \(plan.billingPeriod)) lifts the cap: \(lifted.outcome.rawValue), stored without a cap"
            )
        }
    }

    private func walkMeter(_ meter: Meter, _ narrator: inout Narrator) throws {
        let guest = try engine.createGuest(device: nil, now: start)
        let allowance = profile.tier(.guest).allowance(for: meter.name) ?? 0
        narrator.say(
            "guestmode guest new",
            "a second guest, \(short(guest.id)), with \(formatAmount(allowance)) \(meter.unit) of \(meter.name)")
        var used = 0.0
        for target in meter.warnings.map({ allowance * $0.percent / 100 }) + [allowance] {
            let amount = (target - used).rounded(.up)
            guard amount > 0 else { continue }
            let result = try engine.useMeter(
                user: guest.id, meter: meter.name, amount: MeterAmount(approximating: amount), key: nil, now: start)
            used = result.status.used.doubleValue
            let warnings = result.warnings.map { "\($0.level.rawValue) at \(formatAmount($0.percent))%" }
            narrator.say(
                "guestmode meter use \(short(guest.id)) \(meter.name) \(formatAmount(amount))",
                "\(formatAmount(used))/\(formatAmount(allowance)) used, level \(result.status.level.rawValue)"
                    + (warnings.isEmpty ? "" : "; fired once: \(warnings.joined(separator: ", "))"))
        }
        let gate = try engine.checkMeter(user: guest.id, meter: meter.name, amount: 1, now: start)
        narrator.say(
            "guestmode meter check \(short(guest.id)) \(meter.name) 1",
            gate.isAllowed ? "allowed" : "exhausted (exit 12): the app must not make the paid call")
        guard let plan = profile.plans.first(where: { $0.trial != nil }), let trial = plan.trial else { return }
        _ = try engine.grantPlan(user: guest.id, plan: plan.name, trial: trial, until: nil, now: start)
        let during = try engine.checkMeter(user: guest.id, meter: meter.name, amount: 10, now: start)
        narrator.say(
            "guestmode plan grant \(short(guest.id)) \(plan.name) --trial '\(trial)'",
            "during the trial the gate says \(during.isAllowed ? "allowed" : "exhausted") (tier \(during.status.tier.rawValue))"
        )
        _ = try engine.link(
            user: guest.id, provider: profile.identity.providers[0], subject: "tour-meter-\(guest.id)", email: nil,
            now: start)
        narrator.say(
            "guestmode link \(short(guest.id)) --provider \(profile.identity.providers[0]) --subject …",
            "the plan bought as a guest stays with the account: tier \(try engine.tier(of: guest.id, now: start).rawValue)"
        )
        let after = TimeSpan(amount: 1, unit: .days).added(to: trial.added(to: start))
        let expired = try engine.checkMeter(user: guest.id, meter: meter.name, amount: 1, now: after)
        narrator.say(
            "guestmode --now \(Timestamp.format(after)) meter check \(short(guest.id)) \(meter.name) 1",
            "after the trial: tier \(expired.status.tier.rawValue), \(expired.isAllowed ? "allowed" : "exhausted again (exit 12)")"
        )
    }

    private func walkIdentityConflict(_ narrator: inout Narrator) throws {
        let provider = profile.identity.providers[0]
        let owner = try engine.createGuest(device: nil, now: start)
        _ = try engine.link(user: owner.id, provider: provider, subject: "tour-shared", email: nil, now: start)
        let other = try engine.createGuest(device: nil, now: start)
        if let action = profile.actions.first {
            _ = try engine.track(TrackedEvent(user: other.id, action: action, at: start), now: start)
        }
        do {
            _ = try engine.link(user: other.id, provider: provider, subject: "tour-shared", email: nil, now: start)
        } catch let error as GuestModeError where error.code == .identityAlreadyExists {
            let state = try engine.user(other.id).state
            narrator.say(
                "guestmode link \(short(other.id)) --provider \(provider) --subject tour-shared",
                "exit 14 identity_already_exists: that identity belongs to another user; the guest stays \(state.rawValue) with its data"
            )
        }
    }

    /// A guest earns a sign-in prompt by what it does; the policy's cooldown
    /// and "never ask again" then keep it quiet. Variants come first, since
    /// an experiment can change the strategy.
    private func walkPrompts(_ narrator: inout Narrator) throws {
        guard
            let rule = profile.prompts.rules.sorted(by: { $0.priority > $1.priority }).first(where: { rule in
                rule.trigger == nil
                    && rule.conditions.allSatisfy {
                        if case .daysSinceFirstSeen = $0 { return false }
                        return true
                    }
            })
        else { return }
        let guest = try engine.createGuest(device: nil, now: start)
        for assignment in try engine.assignExperiments(for: guest.id, named: nil, now: start) {
            narrator.say(
                "guestmode experiment assign \(short(guest.id)) \(assignment.experiment)",
                "variant \(assignment.variant ?? "none (outside coverage)"), bucket \(String(format: "%.4f", assignment.bucket)) (GrowthBook hash v2: the same on every device)"
            )
        }
        for case .counter(let action, let comparison) in rule.conditions {
            let count = max(1, Int(comparison.value))
            _ = try engine.track(TrackedEvent(user: guest.id, action: action, at: start, count: count), now: start)
            narrator.say("guestmode track \(short(guest.id)) \(action) --count \(count)", "\(action) = \(count)")
        }
        func next(at time: Date) throws -> String {
            switch try engine.nextPrompt(for: guest.id, trigger: nil, now: time) {
            case let .show(offer):
                return "show \(offer.context) (\(offer.priority.rawValue)): \"\(offer.content.title)\""
            case let .nothingDue(reason): return "exit 13, " + reason.explanation
            }
        }
        narrator.say("guestmode prompt next \(short(guest.id))", try next(at: start))
        _ = try engine.recordPrompt(.shown, context: rule.context, for: guest.id, now: start)
        narrator.say(
            "guestmode prompt record \(short(guest.id)) \(rule.context) shown",
            "recorded; asking again at once would nag")
        narrator.say(
            "guestmode prompt next \(short(guest.id))", try next(at: TimeSpan(amount: 1, unit: .hours).added(to: start))
        )
        _ = try engine.recordPrompt(.never, context: rule.context, for: guest.id, now: start)
        let month = TimeSpan(amount: 30, unit: .days).added(to: start)
        narrator.say(
            "guestmode prompt record \(short(guest.id)) \(rule.context) never; guestmode --now +30d prompt next …",
            try next(at: month))
        let totals = try engine.promptsReport(ReportPeriod()).total
        narrator.say(
            "guestmode report prompts",
            "shown \(totals.shown), never \(totals.never), completed \(totals.completed) (computed in SQL over the store)"
        )
    }

    /// A guest signs in to an account that already exists: the migration
    /// moves everything, step by step, after a backup.
    private func walkMigration(_ narrator: inout Narrator) throws {
        guard let collection = profile.collections.first(where: { profile.tier(.guest).cap(for: $0.name) != 0 }) else {
            return
        }
        let account = try engine.createGuest(device: nil, now: start)
        _ = try engine.link(
            user: account.id, provider: profile.identity.providers[0], subject: "tour-account", email: nil, now: start)
        _ = try engine.putRecord(
            user: account.id, collection: collection.name, key: "shared", json: #"{"from":"account"}"#, now: start)
        let later = TimeSpan(amount: 1, unit: .hours).added(to: start)
        let guest = try engine.createGuest(device: nil, now: later)
        _ = try engine.putRecord(
            user: guest.id, collection: collection.name, key: "shared", json: #"{"from":"guest"}"#, now: later)
        _ = try engine.putRecord(user: guest.id, collection: collection.name, key: "only-guest", json: "{}", now: later)
        let plan = try engine.planMigration(guest: guest.id, to: account.id, now: later)
        narrator.say(
            "guestmode migrate \(short(guest.id)) --to \(short(account.id)) --dry-run",
            "plan: " + plan.steps.map { "\($0.name) (\($0.rows))" }.joined(separator: " → ")
                + "; \(plan.conflicts.count) conflict on '\(collection.name)/shared'")
        let report = try engine.migrate(
            guest: guest.id, to: account.id, resuming: false, now: later,
            takeBackup: { users in
                let path = directory.appendingPathComponent("migrate-\(profile.name).gmbackup").path
                _ = try engine.exportBackup(
                    .users(users), to: path, format: .tarZstd, now: later, toolVersion: GuestModeVersion.current)
                return path
            })
        let conflict = report.conflicts.first.map { ConflictText.describe($0) } ?? "no conflicts"
        narrator.say(
            "guestmode migrate \(short(guest.id)) --to \(short(account.id))",
            "backup first, then \(report.journal.steps.count) journaled steps; the guest is gone, the account has "
                + "\(try engine.records(user: account.id, collection: collection.name).count) \(collection.name); \(conflict)"
        )
    }

    /// A user's backup: exported, verified, damaged on purpose, and restored
    /// into an empty store.
    private func walkBackup(_ user: String, _ narrator: inout Narrator) throws {
        let archive = directory.appendingPathComponent("\(profile.name)-user.gmbackup")
        // The tour's own deployment key: the restore below trusts what this export signed.
        let key = BackupKey.generate()
        let summary = try engine.exportBackup(
            .users([user]), to: archive.path, format: .tarZstd, now: start, toolVersion: GuestModeVersion.current,
            signingKey: key)
        narrator.say(
            "guestmode backup export \(short(user)) --out \(archive.lastPathComponent)",
            "\(summary.bytes) bytes, \(summary.tables.values.reduce(0, +)) rows, mode 0600, written to a temporary file and renamed"
        )
        let verified = try BackupArchive.verify(path: archive.path, full: true, keys: BackupKeys(deployment: key))
        narrator.say(
            "guestmode backup verify --full \(archive.lastPathComponent)",
            verified.ok ? "ok: every entry matches the manifest" : "damaged")
        var bytes = try Data(contentsOf: archive)
        bytes[bytes.count / 2] ^= 0xFF
        let damaged = directory.appendingPathComponent("\(profile.name)-damaged.gmbackup")
        try bytes.write(to: damaged)
        let broken = try BackupArchive.verify(path: damaged.path, full: true)
        narrator.say(
            "guestmode backup verify --full \(damaged.lastPathComponent)  # one byte flipped",
            broken.ok ? "unexpectedly ok" : "refused (exit 65): \(broken.errors.first ?? "damaged")")
        let freshPath = directory.appendingPathComponent("\(profile.name)-restored.sqlite").path
        let freshStore = StoreLocation.sqlite(path: freshPath)
        try freshStore.create(profile: try catalog.load(profile.name), replacing: false, now: start)
        let fresh = try GuestMode.opening(try freshStore.open(), at: freshPath)
        let imported = try fresh.importBackup(
            from: archive.path, onConflict: .fail, dryRun: false, keys: BackupKeys(deployment: key))
        narrator.say(
            "guestmode --store restored.sqlite backup import \(archive.lastPathComponent)",
            "restored \(imported.added.count) user with \(imported.rows.values.reduce(0, +)) rows in one transaction")
    }

    private func short(_ id: String) -> String { String(id.prefix(8)) }
}
