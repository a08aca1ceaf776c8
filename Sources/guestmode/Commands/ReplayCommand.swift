import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit
import GuestModeSQLite

struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract:
            "Run an event log through a fresh in-memory store and the prompt policy, and report what would have been shown.",
        discussion: """
            FILE is NDJSON in the 'track --from' format; a line with "type": "record", "meter", "plan" or "link" is a \
            record put, a meter use, a plan grant or revoke, or a link to an account (guestmode-replay(1)). Each line is applied at its own \
            time by the same engine steps as the live command; after each one the policy is asked which prompt to \
            show that user then, over counters, limits, meters and raised triggers, and a prompt it offers is \
            counted as shown. Users are created at their first line. The store named by --store is never written: it only supplies the \
            profile, unless --profile names another one to try. A log with any bad line is refused whole (exit 65).
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The NDJSON event log; - reads standard input.", valueName: "file"))
    var file: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Replay under this template or profile file instead of the store's profile.", valueName: "name|file"))
    var profile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write each prompt shown as an NDJSON line for 'prompt record --from' to this file (- for stdout).",
            valueName: "file"))
    var decisions: String?

    func validate() throws {
        if decisions == "-" && global.json {
            throw ValidationError("--decisions - and --json would both write to stdout; write the decisions to a file")
        }
    }

    func run() throws {
        let output = global.output
        let (text, origin): (String, String)
        if let profile {
            let source = try global.catalog().load(profile)
            (text, origin) = (source.text, source.origin)
        } else {
            guard let bound = try global.storeLocation.boundProfile() else {
                throw GuestModeError(
                    .storeWithoutProfile,
                    "the store '\(global.storeDescription)' has no profile; name one with --profile")
            }
            (text, origin) = (bound.text, bound.origin)
        }
        // The log is read more than once (users first, then events), so standard input is spooled to a file.
        let log = file == "-" ? try StandardStream.spoolStandardInput(suffix: ".ndjson") : file
        defer { if file == "-" { unlink(log) } }
        guard FileManager.default.fileExists(atPath: log) else {
            throw GuestModeError(.fileNotFound, "no event log '\(file)'")
        }
        let sink = try DecisionSink(path: decisions, output: output, listing: !global.json && !global.quiet)
        let summary = try GuestMode.replay(
            log: URL(fileURLWithPath: log), label: file == "-" ? "<stdin>" : file, profileText: text, origin: origin,
            now: try global.currentTime(),
            scratchStore: SQLiteStore.inMemory, onDecision: sink.write)
        try sink.finish()
        try output.data(summary) {
            if sink.isListing { output.line() }
            output.line(
                "replayed \(counted(summary.events, "event"))"
                    + (summary.records > 0 ? ", \(counted(summary.records, "record put"))" : "")
                    + (summary.meterUses > 0 ? ", \(counted(summary.meterUses, "meter use"))" : "")
                    + (summary.planChanges > 0 ? ", \(counted(summary.planChanges, "plan change"))" : "")
                    + (summary.links > 0 ? ", \(counted(summary.links, "link"))" : "")
                    + " of \(counted(summary.users, "user")) under profile \(summary.profile): "
                    + "\(summary.promptsShown) prompts shown"
                    + (summary.duplicates > 0 ? ", \(summary.duplicates) duplicate events skipped" : ""))
            if global.quiet { return }
            output.line()
            output.table(PromptsReportTable.rows(summary.prompts), header: PromptsReportTable.header)
        }
    }
}

/// Where replay decisions go: an NDJSON file or stdout for `--decisions`,
/// else a human listing on stdout (unless JSON or quiet output is wanted).
final class DecisionSink {
    private let handle: FileHandle?
    private let encoder: JSONEncoder
    private var buffer = Data()
    private let output: Output
    let isListing: Bool

    init(path: String?, output: Output, listing: Bool) throws {
        self.output = output
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
        switch path {
        case nil:
            handle = nil
        case "-":
            handle = FileHandle.standardOutput
        case let path?:
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
                let opened = FileHandle(forWritingAtPath: path)
            else {
                throw GuestModeError(.cannotCreateOutput, "cannot create '\(path)'")
            }
            handle = opened
        }
        isListing = path == nil && listing
    }

    func write(_ record: PromptRecord) throws {
        if handle != nil {
            buffer.append(try encoder.encode(record))
            buffer.append(0x0A)
            if buffer.count > 1 << 16 { try flush() }
        } else if isListing {
            output.line("\(Timestamp.format(record.at))  \(record.user)  \(record.context)")
        }
    }

    func finish() throws {
        try flush()
        if let handle, handle !== FileHandle.standardOutput { try handle.close() }
    }

    private func flush() throws {
        guard let handle, !buffer.isEmpty else { return }
        do {
            try handle.write(contentsOf: buffer)
        } catch {
            throw GuestModeError(.ioError, "cannot write the decisions: \(error.localizedDescription)")
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
