import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeKit

struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Export, import, verify and inspect backup archives; queue and push continuous backups.",
        discussion: "See guestmode-backup(1) for the archive format and the limits applied to archives being read.",
        subcommands: [Export.self, Import.self, Verify.self, Inspect.self, Queue.self, Push.self, Key.self]
    )

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write users' data to an archive (atomically, mode 0600).",
            discussion:
                "The format follows --format, else the --out extension (.gmbackup or .tar.zst, .tar.gz, .zip), else tar.zst."
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The users to export.")
        var users: [String] = []

        @Flag(name: .long, help: "Export every user, and records not yet adopted by one.")
        var all = false

        @Option(
            name: .long, help: ArgumentHelp("The archive to write; - writes it to standard output.", valueName: "file"))
        var out: String

        @Option(name: .long, help: ArgumentHelp("tar.zst (default), tar.gz or zip.", valueName: "format"))
        var format: ArchiveFormat?

        @Option(
            name: .long,
            help: ArgumentHelp("Compression level: 1-19 for tar.zst, 1-9 for tar.gz, 0-9 for zip.", valueName: "n"))
        var level: Int?

        @Flag(
            name: .long,
            help: "Encrypt the archive (ChaCha20-Poly1305) with a key derived from the deployment's backup key.")
        var encrypt = false

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Encrypt with the passphrase in this file (first line; - for standard input) instead of the deployment's key.",
                valueName: "file"))
        var passphraseFile: String?

        func validate() throws {
            if passphraseFile != nil && !encrypt { throw ValidationError("--passphrase-file needs --encrypt") }
            if out == "-" && isatty(STDOUT_FILENO) == 1 {
                throw ValidationError("--out - writes the archive to standard output, which is a terminal; redirect it")
            }
            if all && !users.isEmpty { throw ValidationError("give either USER… or --all, not both") }
            if !all && users.isEmpty { throw ValidationError("name the users to export, or pass --all") }
            if let level {
                switch format ?? ArchiveFormat.named(by: out) ?? .tarZstd {
                case .tarZstd: try requireInRange(level, 1...19, "--level for tar.zst")
                case .tarGzip: try requireInRange(level, 1...9, "--level for tar.gz")
                case .zip: try requireInRange(level, 0...9, "--level for zip")
                }
            }
            if let format, let named = ArchiveFormat.named(by: out), named != format {
                throw ValidationError(
                    "--out '\(out)' is named like a \(named.rawValue) archive but --format is \(format.rawValue); make them agree"
                )
            }
        }

        func run() throws {
            let engine = try global.openEngine()
            let chosen = format ?? ArchiveFormat.named(by: out) ?? .tarZstd
            let output = global.output
            let key = try global.backupKeyCreatingIfMissing()
            var encryption: BackupEncryption?
            if let passphraseFile {
                encryption = .passphrase(try readPassphrase(passphraseFile))
            } else if encrypt {
                encryption = .deploymentKey(key)
            }
            // `--out -`: written to a private temporary file first (atomic, verified layout), then sent to stdout.
            let destination = out == "-" ? try StandardStream.temporaryFile(suffix: ".partial") : out
            defer { if out == "-" { unlink(destination) } }
            if out == "-" { unlink(destination) }
            let progress = Progress("backup export", unit: "rows", global: global)
            var summary = try engine.exportBackup(
                all ? .all : .users(users), to: destination, format: chosen, level: level,
                now: try global.currentTime(),
                toolVersion: GuestModeVersion.current, signingKey: key, encryption: encryption,
                progress: { done, total in progress.update(done: done, total: total) })
            progress.finish()
            if out == "-" {
                // Nothing but the archive on stdout: the summary goes to stderr.
                try StandardStream.send(destination)
                summary.archive = "-"
                if global.json {
                    FileHandle.standardError.write(Data((try Output.encode(summary) + "\n").utf8))
                    return
                }
                let rows = summary.tables.values.reduce(0, +)
                output.note(
                    "wrote the archive to standard output (\(summary.format.rawValue), \(counted(summary.users, "user")), \(counted(rows, "row")), \(counted(Int(summary.bytes), "byte")))"
                )
                return
            }
            if global.json { return try output.json(summary) }
            guard !global.quiet else { return }
            let rows = summary.tables.values.reduce(0, +)
            let sealed =
                summary.encryption.map {
                    ", encrypted with the \($0 == "passphrase" ? "passphrase" : "deployment key")"
                } ?? ""
            output.line(
                "wrote \(summary.archive) (\(summary.format.rawValue), \(counted(summary.users, "user")), \(counted(rows, "row")), \(counted(Int(summary.bytes), "byte")), signed\(sealed))"
            )
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import an archive into the store, all or nothing.",
            discussion:
                "Every entry is checked against the manifest before anything is committed; any failure changes nothing."
        )

        @OptionGroup var global: GlobalOptions
        @OptionGroup(title: "Limits on the archive being read") var limits: ArchiveLimitOptions

        @Argument(help: ArgumentHelp("The archive to import; - reads it from standard input.", valueName: "file"))
        var file: String

        @Flag(name: .long, help: "Report what would be added, replaced or skipped; change nothing.")
        var dryRun = false

        @Option(
            name: .long,
            help: ArgumentHelp(
                "For users already in the store: fail (default), skip them, or replace their data.", valueName: "policy"
            ))
        var onConflict: ConflictPolicy = .fail

        @Flag(
            name: .long,
            help:
                "Also take plans, meter usage, identities, credentials and upgrade locks from an archive this deployment did not sign."
        )
        var trustUnsigned = false

        @Option(
            name: .long,
            help: ArgumentHelp(
                "The passphrase of an archive encrypted with one (first line of the file; - for standard input).",
                valueName: "file"))
        var passphraseFile: String?

        func validate() throws { try requireOneStandardInput(file, passphraseFile) }

        func run() throws {
            let keys = BackupKeys(
                deployment: try global.backupKey(), passphrase: try passphraseFile.map(readPassphrase))
            let source = try ArchiveSource(file)
            defer { source.close() }
            let signature = try source.naming {
                try BackupArchive.requireIntact(path: source.path, limits: limits.archiveLimits, keys: keys)
            }
            let engine = try global.openEngine()
            let progress = Progress("backup import", unit: "rows", global: global)
            var report = try source.naming {
                try engine.importBackup(
                    from: source.path, onConflict: onConflict, dryRun: dryRun, limits: limits.archiveLimits,
                    keys: keys, trustUnsigned: trustUnsigned, signature: signature,
                    progress: { progress.update(done: $0, total: nil) })
            }
            if source.isStandardInput { report.archive = "-" }
            let imported = report.rows.values.reduce(0, +)
            progress.finish(done: imported, total: imported)
            let output = global.output
            if !report.skippedTables.isEmpty {
                let who = report.signature == .unsigned ? "is not signed" : "is signed by another deployment"
                output.note(
                    "the archive \(who): left out \(report.skippedTables.joined(separator: ", ")) (import with --trust-unsigned to take them, or share this deployment's key with 'guestmode backup key')"
                )
            }
            if !report.unlinked.isEmpty {
                output.note("imported as guests, without their identities: \(report.unlinked.joined(separator: ", "))")
            }
            if global.json { return try output.json(report) }
            guard !global.quiet else { return }
            let verb = dryRun ? "would import" : "imported"
            let rows = report.rows.values.reduce(0, +)
            output.line(
                "\(verb) \(counted(rows, "row")) from \(report.archive) (\(report.profile), format \(report.formatVersion))"
            )
            for (label, users) in [("added", report.added), ("replaced", report.replaced), ("skipped", report.skipped)]
            where !users.isEmpty {
                output.line("  \(label): \(users.map { $0.isEmpty ? "guest owner \"\"" : $0 }.joined(separator: ", "))")
            }
            for (table, count) in report.rows.sorted(by: { $0.key < $1.key }) {
                output.line("  \(table.padding(toLength: 24, withPad: " ", startingAt: 0)) \(count)")
            }
            if report.renumbered > 0 {
                output.note(
                    "\(counted(report.renumbered, "row")) got new ids because theirs were taken by other users' rows")
            }
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Check an archive against its manifest.",
            discussion:
                "Without --full: names, order, entry types, sizes and limits. With --full: also the SHA-256 of every entry and every row. Exits 0 only when everything checked out, 65 otherwise."
        )

        @OptionGroup var global: GlobalOptions
        @OptionGroup(title: "Limits on the archive being read") var limits: ArchiveLimitOptions

        @Argument(help: ArgumentHelp("The archive to check; - reads it from standard input.", valueName: "file"))
        var file: String

        @Flag(name: .long, help: "Hash every entry and parse every row.")
        var full = false

        @Option(
            name: .long,
            help: ArgumentHelp(
                "The passphrase of an archive encrypted with one (first line of the file; - for standard input).",
                valueName: "file"))
        var passphraseFile: String?

        func validate() throws { try requireOneStandardInput(file, passphraseFile) }

        func run() throws {
            let keys = BackupKeys(
                deployment: try global.backupKey(), passphrase: try passphraseFile.map(readPassphrase))
            let source = try ArchiveSource(file)
            defer { source.close() }
            var report = try source.naming {
                try BackupArchive.verify(path: source.path, full: full, limits: limits.archiveLimits, keys: keys)
            }
            if source.isStandardInput { report.archive = "-" }
            report.errors = report.errors.map(source.relabel)
            let output = global.output
            if global.json {
                try output.json(report)
            } else if report.ok {
                if !global.quiet {
                    let rows = report.tables.values.reduce(0, +)
                    output.line(
                        "ok: \(file) (\(full ? "full" : "structural") check, \(report.profile ?? ""), \(counted(report.users ?? 0, "user")), \(counted(report.entries, "entry", "entries")), \(counted(rows, "row")), \(describeSignature(report.signature, keyID: report.signatureKeyId))\(report.encrypted ? ", encrypted" : ""))"
                    )
                }
            } else {
                for error in report.errors { output.line(error) }
            }
            if !report.ok {
                throw GuestModeError(
                    .badData, code: .verifyFailed,
                    "the archive '\(file)' failed verification (\(report.errors.count) \(report.errors.count == 1 ? "problem" : "problems"))"
                )
            }
        }
    }

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "inspect", abstract: "Show an archive's header and manifest.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup(title: "Limits on the archive being read") var limits: ArchiveLimitOptions

        @Argument(help: ArgumentHelp("The archive to describe; - reads it from standard input.", valueName: "file"))
        var file: String

        @Option(
            name: .long,
            help: ArgumentHelp(
                "The passphrase of an archive encrypted with one (first line of the file; - for standard input).",
                valueName: "file"))
        var passphraseFile: String?

        func validate() throws { try requireOneStandardInput(file, passphraseFile) }

        func run() throws {
            let keys = BackupKeys(
                deployment: try global.backupKey(), passphrase: try passphraseFile.map(readPassphrase))
            let source = try ArchiveSource(file)
            defer { source.close() }
            var inspection = try source.naming {
                try BackupArchive.inspect(path: source.path, limits: limits.archiveLimits, keys: keys)
            }
            if source.isStandardInput { inspection.archive = "-" }
            let output = global.output
            if global.json { return try output.json(inspection) }
            let header = inspection.header
            output.line("archive:   \(inspection.archive)")
            output.line(
                "format:    \(header.format) version \(header.formatVersion) (written by guestmode \(header.toolVersion))"
            )
            output.line("profile:   \(header.profile.name) v\(header.profile.version)")
            output.line("created:   \(header.created)")
            output.line("signature: \(describeSignature(inspection.signature, keyID: inspection.signatureKeyId))")
            output.line("encrypted: \(inspection.encrypted ? "yes" : "no")")
            output.line(
                "users:     \(header.users.count)\(header.users.isEmpty ? "" : " (\(header.users.prefix(10).joined(separator: ", "))\(header.users.count > 10 ? ", …" : ""))")"
            )
            if let guestOwner = header.guestOwner {
                output.line("also:      records of the guest owner \"\(guestOwner)\"")
            }
            output.line("tables:")
            for (table, count) in inspection.manifest.tables.sorted(by: { $0.key < $1.key }) {
                output.line("  \(table.padding(toLength: 24, withPad: " ", startingAt: 0)) \(count)")
            }
            output.line("entries:")
            output.table(
                inspection.manifest.entries.map {
                    [$0.name, "\($0.size)", $0.rows.map(String.init) ?? "-", $0.sha256]
                },
                header: ["name", "bytes", "rows", "sha256"])
        }
    }

    struct Queue: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "queue", abstract: "List users waiting in the backup outbox.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var listing: ListingOptions

        func run() throws {
            let entries = try global.openEngine().backupQueue()
            let output = global.output
            let format = listing.resolved(global)
            if entries.isEmpty && format == .table {
                if !global.quiet { output.note("the backup queue is empty") }
                return
            }
            try listing.render(
                entries, header: ["USER_ID", "QUEUED_AT", "ATTEMPTS", "NEXT_ATTEMPT_AT", "LAST_ERROR"],
                rows: entries.map {
                    [$0.userId, $0.queuedAt, "\($0.attempts)", $0.nextAttemptAt ?? "now", $0.lastError ?? ""]
                },
                dataRows: entries.map {
                    [$0.userId, $0.queuedAt, "\($0.attempts)", $0.nextAttemptAt ?? "", $0.lastError ?? ""]
                }, global: global)
        }
    }

    struct Push: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "push",
            abstract: "Write each queued user's archive into a directory and drain the queue.",
            discussion:
                "An entry leaves the queue only once its archive is on disk. When the destination cannot be written the entry stays, with its attempt count and next retry time, and the command exits 75."
        )

        @OptionGroup var global: GlobalOptions

        @Option(name: .long, help: ArgumentHelp("The destination directory.", valueName: "dir"))
        var to: String

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Stop retrying an entry automatically once it has failed this many times (default 8).", valueName: "n"))
        var maxAttempts = 8

        @Flag(name: .long, help: "Try every entry now, even those whose next retry time has not come.")
        var retryNow = false

        @Flag(name: .long, help: "Encrypt each archive with a key derived from the deployment's backup key.")
        var encrypt = false

        func validate() throws {
            try requireInRange(maxAttempts, 1...1_000, "--max-attempts")
        }

        func run() throws {
            let engine = try global.openEngine()
            let key = try global.backupKeyCreatingIfMissing()
            let progress = Progress("backup push", unit: "users", global: global)
            let report = try engine.pushBackups(
                to: to, maxAttempts: maxAttempts, retryNow: retryNow, now: try global.currentTime(),
                toolVersion: GuestModeVersion.current, signingKey: key, encryption: encrypt ? .deploymentKey(key) : nil,
                progress: { progress.update(done: $0, total: $1) })
            progress.finish()
            let output = global.output
            if global.json {
                try output.json(report)
            } else if !global.quiet {
                for pushed in report.pushed {
                    output.line(
                        "pushed \(pushed.user) -> \(pushed.archive)\(pushed.requeued ? " (changed meanwhile; still queued)" : "")"
                    )
                }
                for failed in report.failed {
                    output.line(
                        "failed \(failed.user): \(failed.error) (attempt \(failed.attempts); next at \(failed.nextAttemptAt))"
                    )
                }
                for entry in report.waiting {
                    output.line("waiting \(entry.userId) until \(entry.nextAttemptAt ?? "now")")
                }
                for entry in report.held {
                    output.line(
                        "held \(entry.userId) after \(entry.attempts) failed attempts; push with a higher --max-attempts to retry"
                    )
                }
                for user in report.dropped { output.line("dropped \(user): the user no longer exists") }
                for stale in report.removedStale { output.note("removed \(stale), left by an interrupted push") }
                if report.pushed.isEmpty && report.failed.isEmpty && report.waiting.isEmpty && report.held.isEmpty
                    && report.dropped.isEmpty
                {
                    output.note("nothing to push")
                }
            }
            if report.needsRetry {
                throw GuestModeError(
                    .tryAgainLater, code: .pushIncomplete,
                    "\(report.failed.count + report.held.count) queued \(report.failed.count + report.held.count == 1 ? "backup was" : "backups were") not delivered to '\(to)'; they stay queued, push again later"
                )
            }
        }
    }
}

extension BackupCommand {
    struct Key: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "key",
            abstract: "Move the deployment's backup key to another machine of the same deployment.",
            discussion:
                "The key signs every archive this deployment writes and decrypts archives exported with --encrypt. It lives in <store>.key (mode 0600) or at $GUESTMODE_BACKUP_KEY_FILE.",
            subcommands: [Export.self, Import.self])

        struct Export: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "export",
                abstract:
                    "Write the backup key to a file (mode 0600) or to standard output; the only command that prints it."
            )

            @OptionGroup var global: GlobalOptions

            @Option(
                name: .long, help: ArgumentHelp("Where to write the key; - for standard output.", valueName: "file"))
            var out: String

            func run() throws {
                guard let key = try global.backupKey() else {
                    throw GuestModeError.notFound(
                        "no backup key at '\(global.backupKeyPath)'; 'guestmode init' or the first 'guestmode backup export' creates one",
                        code: .backupKeyNotFound)
                }
                if out == "-" {
                    FileHandle.standardOutput.write(Data(key.fileText.utf8))
                    return
                }
                try key.write(to: out, exclusive: false)
                if global.json {
                    struct Exported: Encodable { var keyFile: String; var keyId: String }
                    return try global.output.json(Exported(keyFile: out, keyId: key.id))
                }
                global.output.note("wrote the backup key \(key.id) to \(out) (mode 0600); keep it secret")
            }
        }

        struct Import: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "import",
                abstract: "Install a backup key exported from another machine of this deployment.")

            @OptionGroup var global: GlobalOptions

            @Argument(help: ArgumentHelp("The key file to read; - for standard input.", valueName: "file"))
            var file: String

            @Flag(
                name: .long, help: "Replace a different key already in place (archives it signed stop being trusted).")
            var force = false

            func run() throws {
                let key = try BackupKey.parse(
                    try readSecretFile(file, what: "the key file"), source: file == "-" ? "standard input" : "'\(file)'")
                let path = global.backupKeyPath
                // Installing is how a key named by GUESTMODE_BACKUP_KEY_FILE comes to exist: its absence is expected here.
                let existing = try BackupKey.load(path: path)
                if let existing, existing != key, !force {
                    throw GuestModeError.conflict(
                        "a different backup key (\(existing.id)) is already at '\(path)'",
                        code: .keyExists)
                }
                if existing != key { try key.write(to: path, exclusive: false) }
                if global.json {
                    struct Imported: Encodable { var keyFile: String; var keyId: String; var changed: Bool }
                    return try global.output.json(Imported(keyFile: path, keyId: key.id, changed: existing != key))
                }
                if !global.quiet {
                    global.output.line(
                        existing == key
                            ? "the backup key \(key.id) is already at \(path)"
                            : "installed the backup key \(key.id) at \(path)")
                }
            }
        }
    }
}

/// Reads a passphrase: the first line of a file, or of standard input for `-`.
/// Standard input can feed the archive or the passphrase, not both.
func requireOneStandardInput(_ file: String, _ passphraseFile: String?) throws {
    if file == "-" && passphraseFile == "-" {
        throw ValidationError("the archive and --passphrase-file cannot both be read from standard input (-)")
    }
}

func readPassphrase(_ path: String) throws -> [UInt8] {
    var bytes = Array(try readSecretFile(path, what: "the passphrase file"))
    if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) { bytes = Array(bytes[..<newline]) }
    if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
    guard !bytes.isEmpty else {
        throw GuestModeError.usage("the passphrase file '\(path)' is empty", code: .passphraseRequired)
    }
    return bytes
}

/// A key or passphrase: standard input for `-`, else a regular file (never a
/// FIFO, a device or a directory; see `RegularFile`).
func readSecretFile(_ path: String, what: String) throws -> Data {
    if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
    guard let data = try RegularFile.read(path, what: what) else {
        throw GuestModeError(.notFound, code: .fileNotFound, "no file '\(path)' (\(what))")
    }
    return data
}

func describeSignature(_ status: SignatureStatus?, keyID: String?) -> String {
    switch status {
    case .thisDeployment: "signed by this deployment"
    case .anotherDeployment: "signed by another deployment (key \(keyID ?? "?"))"
    case .unsigned: "unsigned"
    case nil: "signature unknown"
    }
}

/// Bounds on an archive being read, so a hostile one cannot exhaust memory or disk.
struct ArchiveLimitOptions: ParsableArguments {
    private static let defaults = ArchiveLimits.standard

    @Option(
        name: .long,
        help: ArgumentHelp("Refuse archives with more entries (default \(defaults.maximumEntries)).", valueName: "n"))
    var maxEntries = defaults.maximumEntries

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Refuse an entry that expands past this many bytes (default \(defaults.maximumEntrySize)).",
            valueName: "bytes"))
    var maxEntrySize = defaults.maximumEntrySize

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Refuse archives that expand past this many bytes in all (default \(defaults.maximumTotalSize)).",
            valueName: "bytes"))
    var maxTotalSize = defaults.maximumTotalSize

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Refuse archives that expand more than this many times their compressed size (default \(defaults.maximumRatio)).",
            valueName: "n"))
    var maxRatio = defaults.maximumRatio

    func validate() throws {
        if maxEntries < 1 || maxEntrySize < 1 || maxTotalSize < 1 || maxRatio < 1 {
            throw ValidationError("archive limits must be positive numbers")
        }
    }

    var archiveLimits: ArchiveLimits {
        var limits = ArchiveLimits.standard
        limits.maximumEntries = maxEntries
        limits.maximumEntrySize = maxEntrySize
        limits.maximumTotalSize = maxTotalSize
        limits.maximumRatio = maxRatio
        return limits
    }
}
