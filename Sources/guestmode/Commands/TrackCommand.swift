import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct TrackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "track",
        abstract: "Record what a user did, one event or a whole NDJSON log.",
        discussion: """
            An event bumps the user's counter for the action by --count. A repeated --id (idempotency key) \
            is counted once, across runs. With --from, each line is a JSON object \
            {"user","action","at","count","id","props"}; every line is checked before anything is applied, \
            and one bad line means nothing of the file is applied (exit 65) unless --skip-invalid. Valid \
            lines are applied in batches inside one transaction: the log is applied whole or not at all, so a \
            run that was killed or cut off (exit 75) can simply be repeated.
            """
    )

    /// `track USER ACTION [--count N] [--id K] [--prop NAME=VALUE]` without ArgumentParser's reflection
    /// (`QuickCommand`); `--from` and a second `--prop` are left to ArgumentParser.
    static let quick = QuickCommand(
        path: ["track"], operands: 2...2,
        options: ["--count": .unconditionalValue, "--id": .value, "--prop": .value]
    ) { line in
        var command = TrackCommand()
        command.global = line.global
        command.user = line.operands[0]
        command.action = line.operands[1]
        command.count = try line.value("--count") ?? 1
        command.id = try line.value("--id")
        command.properties = try line.value("--prop").map { [$0] } ?? []
        command.from = nil
        command.skipInvalid = false
        command.createUsers = false
        return command
    }

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The user id.")
    var user: String?

    @Argument(help: "The action, one the profile declares.")
    var action: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("How many times the action happened.", valueName: "n"))
    var count = 1

    @Option(help: ArgumentHelp("An idempotency key: a repeated key counts once.", valueName: "key"))
    var id: String?

    @Option(
        name: .customLong("prop"), help: ArgumentHelp("A property of the event (repeatable).", valueName: "name=value"))
    var properties: [String] = []

    @Option(help: ArgumentHelp("Ingest an NDJSON event log; - reads standard input.", valueName: "file"))
    var from: String?

    @Flag(help: "With --from: apply the valid lines and report the invalid ones.")
    var skipInvalid = false

    @Flag(help: "With --from: create unknown users as guests first seen at their first event.")
    var createUsers = false

    func validate() throws {
        if from != nil {
            if user != nil || action != nil { throw ValidationError("give either USER ACTION or --from, not both") }
        } else {
            if user == nil || action == nil { throw ValidationError("missing USER and ACTION (or --from FILE)") }
            if skipInvalid || createUsers { throw ValidationError("--skip-invalid and --create-users go with --from") }
        }
        try requireInRange(count, 1...1_000_000_000, "--count")
        for property in properties {
            guard let equals = property.firstIndex(of: "=") else {
                throw ValidationError("--prop '\(property)' must be name=value")
            }
            if equals == property.startIndex {
                throw ValidationError("--prop '\(property)' has an empty name; write name=value")
            }
        }
    }

    func run() throws {
        let engine = try global.openEngine()
        let now = try global.currentTime()
        if let from { return try ingest(from, engine: engine, now: now) }
        guard let user, let action else { throw ValidationError("missing USER and ACTION (or --from FILE)") }
        var propertyMap: [String: EventProperty] = [:]
        for property in properties {
            let parts = property.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            propertyMap[String(parts[0])] = .string(parts.count > 1 ? String(parts[1]) : "")
        }
        let event = TrackedEvent(
            user: user, action: action, at: now, count: count, idempotencyKey: id, properties: propertyMap)
        let result = try engine.track(event, now: now)
        try global.output.result(result) {
            global.output.line(
                result.isCounted
                    ? "\(result.action) \(result.total)"
                    : "\(result.action) \(result.total) (already counted: id \(id ?? ""))")
        }
    }

    private func ingest(_ source: String, engine: GuestMode, now: Date) throws {
        let spool = source == "-" ? try spoolStandardInput() : nil
        defer { if let spool { try? FileManager.default.removeItem(at: spool) } }
        let url = spool ?? URL(fileURLWithPath: source)
        let label = source == "-" ? "<stdin>" : source
        let output = global.output
        let progress = Progress("track", unit: "events", global: global)
        let report = try engine.ingest(
            log: url, creatingUsers: createUsers, skippingInvalid: skipInvalid, now: now
        ) { done in progress.update(done: done, total: nil) }
        progress.finish(total: report.applied + report.duplicates)
        for problem in report.problems.prefix(100) {
            let hint = problem.isMissingUser ? " (use --create-users to create guests)" : ""
            ConsoleStream.error.write("\(label):\(problem.line): \(problem.message)\(hint)\n")
        }
        if report.problems.count > 100 {
            ConsoleStream.error.write("\(label): … and \(report.problems.count - 100) more invalid lines\n")
        }
        try output.result(report) {
            output.line(
                "\(counted(report.lines, "line")): \(report.applied) applied, \(report.duplicates) already counted, \(report.problems.count) invalid, \(counted(report.usersCreated, "user")) created"
            )
        }
        if !report.isApplied {
            throw GuestModeError(
                .invalidEventLog,
                "\(label): \(report.problems.count) invalid line\(report.problems.count == 1 ? "" : "s"); nothing was applied (fix them, or use --skip-invalid)"
            )
        }
    }

    /// Standard input can be read once; validation needs two passes. The
    /// spool is named after this process, so a later run can tell a spool
    /// left by a killed run (its process is gone) and remove it. Lines past
    /// the maximum length are refused while spooling, so an endless input
    /// never fills the disk.
    private func spoolStandardInput() throws -> URL {
        let directory = FileManager.default.temporaryDirectory
        StaleFiles.removeAbandoned(in: directory) { name in
            StaleFiles.ownerPID(of: name, prefix: "guestmode-track-", suffix: ".ndjson")
        }
        let url = directory.appendingPathComponent("guestmode-track-\(getpid())-\(UUID().uuidString).ndjson")
        guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forWritingAtPath: url.path)
        else {
            throw GuestModeError(
                .cannotSpool,
                "cannot create a temporary file in \(directory.path) (set TMPDIR to a writable directory)")
        }
        defer { try? handle.close() }
        var line = 1
        var lineLength = 0
        do {
            while let chunk = try StandardStream.readStandardInput(upTo: 1 << 20) {
                for byte in chunk {
                    if byte == 0x0A {
                        line += 1
                        lineLength = 0
                    } else {
                        lineLength += 1
                    }
                }
                if lineLength > EventLog.maximumLineLength {
                    throw GuestModeError(
                        .lineTooLong,
                        "<stdin>:\(line): the line is longer than \(EventLog.maximumLineLength) bytes, the most an event log line may hold; split the log into one event per line"
                    )
                }
                try handle.write(contentsOf: chunk)
            }
        } catch {
            try? FileManager.default.removeItem(at: url)
            if error is GuestModeError { throw error }
            throw GuestModeError(
                .ioError, "cannot spool standard input to \(url.path): \(error.localizedDescription)")
        }
        return url
    }
}
