import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit

struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Export, import, verify and inspect backup archives; queue and push continuous backups.",
        discussion: "See guestmode-backup(1) for the archive format and the limits applied to archives being read.",
        subcommands: [Export.self, Import.self, Verify.self, Inspect.self, Queue.self, Push.self, Pull.self, Key.self]
    )
}

/// `--passphrase-file`, declared once for every backup subcommand; `Purpose`
/// words its help for what the command does with the passphrase.
struct PassphraseFileOption<Purpose: PassphrasePurpose>: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(Purpose.help, valueName: "file"))
    var passphraseFile: String?

    func read() throws -> [UInt8]? { try passphraseFile.map(readPassphrase) }
}

protocol PassphrasePurpose {
    static var help: String { get }
}

/// `backup export --encrypt`: the passphrase seals the archive.
enum EncryptingPassphrase: PassphrasePurpose {
    static let help =
        "Encrypt with the passphrase in this file (first line; - for standard input) instead of the deployment's key."
}

/// `backup import|verify|inspect`: the passphrase opens the archive.
enum DecryptingPassphrase: PassphrasePurpose {
    static let help = "The passphrase of an archive encrypted with one (first line of the file; - for standard input)."
}

extension PassphraseFileOption where Purpose == DecryptingPassphrase {
    /// The keys that open an archive: the deployment's, and the passphrase when given.
    func keys(_ global: GlobalOptions) throws -> BackupKeys {
        BackupKeys(deployment: try global.backupKey(), passphrase: try read())
    }

    /// Standard input can feed the archive or the passphrase, not both.
    func requireOneStandardInput(archive file: String) throws {
        if file == "-" && passphraseFile == "-" {
            throw ValidationError("the archive and --passphrase-file cannot both be read from standard input (-)")
        }
    }
}

/// Reads a passphrase: the first line of a file, or of standard input for `-`.
func readPassphrase(_ path: String) throws -> [UInt8] {
    var bytes = Array(try readSecretFile(path, what: "the passphrase file"))
    if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) { bytes = Array(bytes[..<newline]) }
    if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
    guard !bytes.isEmpty else {
        throw GuestModeError(.passphraseRequired, "the passphrase file '\(path)' is empty")
    }
    return bytes
}

/// A key or passphrase: standard input for `-`, else a regular file (never a
/// FIFO, a device or a directory; see `RegularFile`).
func readSecretFile(_ path: String, what: String) throws -> Data {
    if path == "-" { return try StandardStream.readStandardInput() }
    guard let data = try RegularFile.read(path, what: what) else {
        throw GuestModeError(.fileNotFound, "no file '\(path)' (\(what))")
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
