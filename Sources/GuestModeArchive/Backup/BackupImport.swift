import Foundation
import GuestModeKit

/// What to do with a user in the archive who is already in the store.
public enum ConflictPolicy: String, CaseIterable, Codable, Sendable {
    /// Refuse the whole import.
    case fail
    /// Keep the store's data for that user and ignore the archive's.
    case skip
    /// Delete the store's data for that user and take the archive's.
    case replace
}

/// What an import did, or with `isDryRun` would do.
public struct BackupImportReport: Codable, Sendable {
    /// The path of the archive read.
    public var archive: String
    /// True when nothing was written: the report says what an import would do.
    public var isDryRun: Bool
    /// The format version the archive was written in; older ones are upgraded while read.
    public var formatVersion: Int
    /// The archive's profile and version, as `name vN`.
    public var profile: String
    /// Users the import added.
    public var added: [String]
    /// Users whose data the import replaced.
    public var replaced: [String]
    /// Users the import left as the store had them.
    public var skipped: [String]
    /// Rows written (or, in a dry run, that would be written) per table.
    public var rows: [String: Int]
    /// Rows whose AUTOINCREMENT id was taken by another user's row and got a new one.
    public var renumbered: Int
    /// Who signed the archive.
    public var signature: SignatureStatus
    /// Tables whose rows were left out because the archive is not signed by
    /// this deployment (see `BackupTable.carriesTrust`).
    public var skippedTables: [String]
    /// Users imported as guests because their identities were left out.
    public var unlinked: [String]
}

extension GuestMode {
    /// Imports an archive in one durable transaction: every entry is hashed
    /// and checked against the manifest before the transaction commits, so
    /// any failure leaves the store untouched. A dry run does all of that and
    /// rolls back.
    ///
    /// Only an archive signed with this deployment's key (`keys.deployment`)
    /// brings in the tables that carry entitlements or identity; from any
    /// other archive they are left out (and reported) unless `trustUnsigned`.
    /// `signature` is what an earlier `BackupArchive.requireIntact` found;
    /// without it the archive is checked here first. Either way the import
    /// pass checks the signature again and rolls back if it changed.
    /// `now` is the current time: a row dated after it is refused, so an
    /// archive from a clock ahead of this one fails whole.
    /// `progress` hears the number of rows read so far as the archive streams through.
    public func importBackup(
        from path: String, onConflict: ConflictPolicy, dryRun: Bool, limits: ArchiveLimits = .standard,
        keys: BackupKeys = .none, trustUnsigned: Bool = false, signature: SignatureStatus? = nil, now: Date,
        progress: (_ rowsRead: Int) -> Void = { _ in }
    ) throws -> BackupImportReport {
        try importBackup(
            from: path, onConflict: onConflict, dryRun: dryRun, limits: limits, chain: .standard, keys: keys,
            trustUnsigned: trustUnsigned, signature: signature, now: now, progress: progress)
    }

    func importBackup(
        from path: String, onConflict: ConflictPolicy, dryRun: Bool, limits: ArchiveLimits,
        chain: ArchiveMigrationChain,
        keys: BackupKeys = .none, trustUnsigned: Bool = false, signature: SignatureStatus? = nil,
        now: Date, progress: (_ rowsRead: Int) -> Void = { _ in }
    ) throws -> BackupImportReport {
        let expected: SignatureStatus
        if let signature {
            expected = signature
        } else {
            let walk = try ArchiveWalk.read(path: path, depth: .structure, limits: limits, chain: chain, keys: keys)
            expected = try walk.signatureStatus(key: keys.deployment, path: path)
        }
        let trusted = trustUnsigned || expected == .thisDeployment
        return try store.importBackupRows(dryRun: dryRun) { rows in
            var session = ImportSession(
                path: path, profile: profile, policy: onConflict, rows: rows, trusted: trusted, now: now)
            var rowsRead = 0
            let walk = try ArchiveWalk.read(
                path: path, depth: .full, limits: limits, chain: chain, keys: keys,
                onHeader: { try session.begin($0) },
                onRow: {
                    try session.insert($1, into: $0, at: $2)
                    rowsRead += 1
                    progress(rowsRead)
                })
            try walk.requireMatchingManifest(path: path)
            let found = try walk.signatureStatus(key: keys.deployment, path: path)
            guard found == expected else {
                throw GuestModeError(
                    .damagedArchive,
                    "the archive '\(path)' changed while it was imported (its signature was \(expected.rawValue), now \(found.rawValue)); nothing was changed"
                )
            }
            try session.finish()
            return BackupImportReport(
                archive: path, isDryRun: dryRun, formatVersion: walk.writtenVersion,
                profile: "\(walk.header.profile.name) v\(walk.header.profile.version)",
                added: session.added, replaced: session.replaced, skipped: session.skipped.sorted(),
                rows: session.inserted, renumbered: session.renumbered, signature: found,
                skippedTables: session.untrustedRows.keys.sorted(), unlinked: session.unlinked.sorted())
        }
    }
}

/// The state of one import while the archive streams through it: the
/// conflict policy and the row-by-row checks, over the store's import writes.
private struct ImportSession {
    let path: String
    let profile: Profile
    let policy: ConflictPolicy
    let rows: any BackupRowImport
    var owners: Set<String> = []
    var guestOwner: String?
    var added: [String] = []
    var replaced: [String] = []
    var skipped: Set<String> = []
    /// When each user already in the store was created, to tell the same user from a different one with the same id.
    var existingCreation: [String: String] = [:]
    var usersSeen: Set<String> = []
    var inserted: [String: Int] = [:]
    var renumbered = 0
    var columns: [String: Set<String>] = [:]
    /// False for an archive not signed by this deployment: tables that carry
    /// trust are left out, and replaced users keep their own.
    let trusted: Bool
    /// Rows left out per table because the archive is not trusted.
    var untrustedRows: [String: Int] = [:]
    /// Users of an untrusted archive who come in as guests.
    var unlinked: Set<String> = []
    /// Users whose store users row (and trust tables) an untrusted replace keeps.
    var keptUsers: Set<String> = []

    /// Every row checked as if written through the command line (BackupRowValidation.swift).
    var validator: BackupRowValidator
    /// Calls of `rows.insert` so far, and the table and place of the latest
    /// ones (by call number modulo the size), for a refusal of a row the
    /// store held back (`BackupRowRefusal.insertion`).
    var insertions = 0
    var recentRows: [(table: BackupTable, location: RowLocation)?] = Array(
        repeating: nil, count: backupPendingRowLimit + 1)

    init(path: String, profile: Profile, policy: ConflictPolicy, rows: any BackupRowImport, trusted: Bool, now: Date) {
        self.path = path
        self.profile = profile
        self.policy = policy
        self.rows = rows
        self.trusted = trusted
        self.validator = BackupRowValidator(profile: profile, now: now, archive: path)
    }

    mutating func begin(_ header: BackupHeader) throws {
        guard header.profile.name == profile.name else {
            throw GuestModeError(
                .profileMismatch,
                "the archive '\(path)' holds data of profile '\(header.profile.name)' but the store is bound to '\(profile.name)'; import it into a store initialised with that profile"
            )
        }
        try ImportTrust.checkHeader(header, profile: profile, path: path, rows: rows)
        owners = Set(header.users)
        guestOwner = header.guestOwner
        var present: [String] = []
        for user in header.users {
            if let created = try rows.creationTime(ofUser: user) {
                existingCreation[user] = created
                present.append(user)
            } else {
                added.append(user)
            }
        }
        if let guestOwner {
            if try rows.hasRecords(ownedBy: guestOwner) { present.append(guestOwner) } else { added.append(guestOwner) }
        }
        guard !present.isEmpty else { return }
        switch policy {
        case .fail:
            throw GuestModeError(
                .userExists,
                "the store already has \(present.map { $0 == guestOwner ? "records of the guest owner '\($0)'" : "user '\($0)'" }.joined(separator: ", ")) from the archive '\(path)'; nothing was changed"
            )
        case .skip:
            skipped = Set(present)
        case .replace:
            replaced = present
            if trusted {
                try rows.deleteRows(ownedBy: present)
            } else {
                // Only user-owned content is replaced; the user row, identities and entitlements stay.
                keptUsers = Set(present)
                try rows.deleteRows(
                    ownedBy: present, in: BackupTable.all.filter { !$0.carriesTrust && $0.name != "users" })
            }
        }
    }

    mutating func insert(_ archived: [String: CellValue], into table: BackupTable, at location: RowLocation) throws {
        do {
            try insertRow(archived, into: table, at: location)
        } catch let refusal as BackupRowRefusal {
            // A row the store held back, refused while this one was read.
            throw heldBackFailure(refusal)
        }
    }

    private mutating func insertRow(
        _ archived: [String: CellValue], into table: BackupTable, at location: RowLocation
    )
        throws
    {
        guard let owner = archived[table.ownerColumn]?.text,
            owners.contains(owner) || (table.mayBelongToGuestOwner && owner == guestOwner)
        else {
            throw GuestModeError(
                .foreignRow,
                "the archive '\(path)' has a row at \(location.description) whose \(table.ownerColumn) is not a user listed in header.json; nothing was changed"
            )
        }
        var row = try validator.check(archived, table: table, entry: location.entry, line: location.line)
        if table.name == "users" {
            guard usersSeen.insert(owner).inserted else {
                throw GuestModeError(
                    .badRow,
                    "the archive '\(path)' has user '\(owner)' twice (\(location.description)); nothing was changed")
            }
            if let created = existingCreation[owner], row["created_at"]?.text != created {
                throw GuestModeError(
                    .differentUser,
                    "user '\(owner)' in the archive '\(path)' was created at \(row["created_at"]?.text ?? "an unknown time") but the store's user '\(owner)' was created at \(created): they are different users with the same id. Nothing was changed"
                )
            }
        }
        if skipped.contains(owner) { return }
        if table.name == "conflict_archive", case .integer(let journal)? = row["journal_id"],
            try rows.journalTarget(journal) != owner
        {
            // The journal stayed in the store where the merge ran: a number that names no merge into this
            // user here would point at nothing, or at another merge.
            row["journal_id"] = .null
        }
        if !trusted {
            if table.carriesTrust {
                untrustedRows[table.name, default: 0] += 1
                return
            }
            if table.name == "users" {
                if keptUsers.contains(owner) {
                    // Counted as seen for finish(): the store's row stays.
                    return
                }
                if row["state"] != nil, row["state"] != .text(UserState.anonymous.rawValue) {
                    row["state"] = .text(UserState.anonymous.rawValue)
                    if row["linked_at"] != nil { row["linked_at"] = .null }
                    unlinked.insert(owner)
                }
            }
        }
        let known = try columnNames(of: table)
        if let unknown = row.keys.sorted().first(where: { !known.contains($0) }) {
            throw GuestModeError(
                .badRow,
                "the archive '\(path)' has a column '\(unknown)' in \(table.name) at \(location.description) that this store does not have; nothing was changed"
            )
        }
        recentRows[insertions % recentRows.count] = (table, location)
        insertions += 1
        do {
            if try rows.insert(row, into: table) == .renumbered { renumbered += 1 }
        } catch let refusal as BackupRowRefusal where refusal.insertion == nil {
            throw failure(refusal, table: table, row: row, location: location)
        }
        inserted[table.name, default: 0] += 1
    }

    func finish() throws {
        do {
            try rows.flush()
        } catch let refusal as BackupRowRefusal {
            throw heldBackFailure(refusal)
        }
        try validator.finish()
        let expected = Set(added).union(replaced).subtracting(guestOwner.map { [$0] } ?? [])
        if let missing = expected.subtracting(usersSeen).sorted().first {
            throw GuestModeError(
                .missingUserRow,
                "the archive '\(path)' lists user '\(missing)' in header.json but has no users row for them; nothing was changed"
            )
        }
        if let table = try rows.tableWithDanglingReferences() {
            throw GuestModeError(
                .foreignRow,
                "the archive '\(path)' has rows in \(table) that refer to users it does not contain; nothing was changed"
            )
        }
    }

    private mutating func columnNames(of table: BackupTable) throws -> Set<String> {
        if let cached = columns[table.name] { return cached }
        let names = try rows.columns(of: table)
        columns[table.name] = names
        return names
    }

    /// The error for a refusal of a row the store held back, at that row's place.
    private func heldBackFailure(_ refusal: BackupRowRefusal) -> GuestModeError {
        guard let insertion = refusal.insertion, insertion < insertions, insertions - insertion <= recentRows.count,
            let held = recentRows[insertion % recentRows.count]
        else {
            return GuestModeError(
                .internalFailure,
                "the store refused a row it was given earlier and can no longer be placed (\(refusal.detail)); nothing was changed"
            )
        }
        return failure(refusal, table: held.table, row: [:], location: held.location)
    }

    private func failure(
        _ refusal: BackupRowRefusal, table: BackupTable, row: [String: CellValue], location: RowLocation
    ) -> GuestModeError {
        switch refusal.reason {
        case .identityTaken(let holder):
            GuestModeError(
                .identityAlreadyExists,
                "the identity \(row["provider"]?.text ?? "?")/\(row["subject"]?.text ?? "?") of user '\(row["user_id"]?.text ?? "?")' in the archive '\(path)' already belongs to user '\(holder)' in the store; nothing was changed"
            )
        case .duplicateKey where ImportTrust.duplicateIsInArchive(table):
            GuestModeError(
                .duplicateRow,
                "the archive '\(path)' has a duplicated row at \(location.description): it repeats the key of a row earlier in the archive (\(refusal.detail)); nothing was changed"
            )
        case .duplicateKey:
            GuestModeError(
                .rowConflict,
                "the row at \(location.description) of '\(path)' collides with a row already in the store or earlier in the archive (\(refusal.detail)); nothing was changed"
            )
        case .invalid:
            GuestModeError(
                .badRow,
                "the row at \(location.description) of '\(path)' is not valid for table \(table.name) (\(refusal.detail)); nothing was changed"
            )
        }
    }
}
