import Foundation
import GRDB

/// What to do with a user in the archive who is already in the store.
public enum ConflictPolicy: String, CaseIterable, Codable, Sendable {
    /// Refuse the whole import.
    case fail
    /// Keep the store's data for that user and ignore the archive's.
    case skip
    /// Delete the store's data for that user and take the archive's.
    case replace
}

public struct BackupImportReport: Codable, Sendable {
    public var archive: String
    public var dryRun: Bool
    /// The format version the archive was written in; older ones are upgraded while read.
    public var formatVersion: Int
    public var profile: String
    public var added: [String]
    public var replaced: [String]
    public var skipped: [String]
    /// Rows written (or, in a dry run, that would be written) per table.
    public var rows: [String: Int]
    /// Rows whose AUTOINCREMENT id was taken by another user's row and got a new one.
    public var renumbered: Int
}

extension GuestMode {
    /// Imports an archive in one durable transaction: every entry is hashed
    /// and checked against the manifest before the transaction commits, so
    /// any failure leaves the store untouched. A dry run does all of that and
    /// rolls back.
    public func importBackup(
        from path: String, onConflict: ConflictPolicy, dryRun: Bool, limits: ArchiveLimits = .standard
    ) throws -> BackupImportReport {
        try importBackup(from: path, onConflict: onConflict, dryRun: dryRun, limits: limits, chain: .standard)
    }

    func importBackup(
        from path: String, onConflict: ConflictPolicy, dryRun: Bool, limits: ArchiveLimits, chain: ArchiveMigrationChain
    ) throws -> BackupImportReport {
        try store.writeDurably { db in
            // Rows may arrive before the users row they refer to in a hand-made archive; check at the end instead.
            try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
            var session = ImportSession(path: path, profile: profile, policy: onConflict)
            let walk = try ArchiveWalk.read(
                path: path, depth: .full, limits: limits, chain: chain,
                onHeader: { try session.begin($0, db) },
                onRow: { try session.insert($1, into: $0, at: $2, db) })
            try walk.requireMatchingManifest(path: path)
            try session.finish(db)
            let report = BackupImportReport(
                archive: path, dryRun: dryRun, formatVersion: walk.writtenVersion,
                profile: "\(walk.header.profile.name) v\(walk.header.profile.version)",
                added: session.added, replaced: session.replaced, skipped: session.skipped.sorted(),
                rows: session.inserted, renumbered: session.renumbered)
            return (report, !dryRun)
        }
    }
}

/// The state of one import while the archive streams through it.
private struct ImportSession {
    let path: String
    let profile: Profile
    let policy: ConflictPolicy
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

    init(path: String, profile: Profile, policy: ConflictPolicy) {
        self.path = path
        self.profile = profile
        self.policy = policy
    }

    mutating func begin(_ header: BackupHeader, _ db: Database) throws {
        guard header.profile.name == profile.name else {
            throw GuestModeError.badData(
                "the archive '\(path)' holds data of profile '\(header.profile.name)' but the store is bound to '\(profile.name)'; import it into a store initialised with that profile",
                code: "profile_mismatch")
        }
        owners = Set(header.users)
        guestOwner = header.guestOwner
        var present: [String] = []
        for user in header.users {
            if let created = try String.fetchOne(db, sql: "SELECT created_at FROM users WHERE id = ?", arguments: [user]) {
                existingCreation[user] = created
                present.append(user)
            } else {
                added.append(user)
            }
        }
        if let guestOwner {
            let hasRecords = try Bool.fetchOne(
                db, sql: "SELECT EXISTS (SELECT 1 FROM records WHERE owner_id = ?)", arguments: [guestOwner]) ?? false
            if hasRecords { present.append(guestOwner) } else { added.append(guestOwner) }
        }
        guard !present.isEmpty else { return }
        switch policy {
        case .fail:
            throw GuestModeError.conflict(
                "the store already has \(present.map { $0 == guestOwner ? "records of the guest owner '\($0)'" : "user '\($0)'" }.joined(separator: ", ")) from the archive '\(path)'; use --on-conflict skip to keep the store's data or --on-conflict replace to take the archive's. Nothing was changed",
                code: "user_exists")
        case .skip:
            skipped = Set(present)
        case .replace:
            replaced = present
            for table in BackupTable.all.reversed() {
                try db.execute(
                    sql: "DELETE FROM \(table.name) WHERE \(table.ownerColumn) IN (\(present.map { _ in "?" }.joined(separator: ", ")))",
                    arguments: StatementArguments(present))
            }
        }
    }

    mutating func insert(_ row: [String: CellValue], into table: BackupTable, at location: RowLocation, _ db: Database) throws {
        guard let owner = row[table.ownerColumn]?.text,
              owners.contains(owner) || (table.name == "records" && owner == guestOwner)
        else {
            throw GuestModeError.badData(
                "the archive '\(path)' has a row at \(location.description) whose \(table.ownerColumn) is not a user listed in header.json; nothing was changed",
                code: "foreign_row")
        }
        if table.name == "users" {
            guard usersSeen.insert(owner).inserted else {
                throw GuestModeError.badData(
                    "the archive '\(path)' has user '\(owner)' twice (\(location.description)); nothing was changed", code: "bad_row")
            }
            if let created = existingCreation[owner], row["created_at"]?.text != created {
                throw GuestModeError.conflict(
                    "user '\(owner)' in the archive '\(path)' was created at \(row["created_at"]?.text ?? "an unknown time") but the store's user '\(owner)' was created at \(created): they are different users with the same id. Nothing was changed",
                    code: "different_user")
            }
        }
        if skipped.contains(owner) { return }
        let known = try columnNames(of: table.name, db)
        var values = row
        if let unknown = values.keys.sorted().first(where: { !known.contains($0) }) {
            throw GuestModeError.badData(
                "the archive '\(path)' has a column '\(unknown)' in \(table.name) at \(location.description) that this store does not have; nothing was changed",
                code: "bad_row")
        }
        if table.hasSurrogateID, case .integer(let id) = values["id"],
           try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(table.name) WHERE id = ?)", arguments: [id]) == true {
            values["id"] = nil
            renumbered += 1
        }
        let ordered = values.sorted { $0.key < $1.key }
        let statement = try db.cachedStatement(
            sql: "INSERT INTO \(table.name) (\(ordered.map(\.key).joined(separator: ", "))) VALUES (\(ordered.map { _ in "?" }.joined(separator: ", ")))")
        do {
            try statement.execute(arguments: StatementArguments(ordered.map(\.value.databaseValue)))
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw try constraintFailure(error, table: table, row: values, location: location, db)
        }
        inserted[table.name, default: 0] += 1
    }

    func finish(_ db: Database) throws {
        let expected = Set(added).union(replaced).subtracting(guestOwner.map { [$0] } ?? [])
        if let missing = expected.subtracting(usersSeen).sorted().first {
            throw GuestModeError.badData(
                "the archive '\(path)' lists user '\(missing)' in header.json but has no users row for them; nothing was changed",
                code: "missing_user_row")
        }
        if let violation = try Row.fetchOne(db, sql: "PRAGMA foreign_key_check") {
            throw GuestModeError.badData(
                "the archive '\(path)' has rows in \(violation[0] as String? ?? "a table") that refer to users it does not contain; nothing was changed",
                code: "foreign_row")
        }
    }

    private mutating func columnNames(of table: String, _ db: Database) throws -> Set<String> {
        if let cached = columns[table] { return cached }
        let names = Set(try db.columns(in: table).map(\.name))
        columns[table] = names
        return names
    }

    private func constraintFailure(
        _ error: DatabaseError, table: BackupTable, row: [String: CellValue], location: RowLocation, _ db: Database
    ) throws -> GuestModeError {
        if table.name == "identities", let provider = row["provider"]?.text, let subject = row["subject"]?.text,
           let holder = try String.fetchOne(
               db, sql: "SELECT user_id FROM identities WHERE provider = ? AND subject = ?", arguments: [provider, subject]) {
            return GuestModeError.conflict(
                "the identity \(provider)/\(subject) of user '\(row["user_id"]?.text ?? "?")' in the archive '\(path)' already belongs to user '\(holder)' in the store; nothing was changed",
                code: "identity_already_exists")
        }
        let detail = error.message ?? "\(error)"
        if error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE || error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY {
            return GuestModeError.conflict(
                "the row at \(location.description) of '\(path)' collides with a row already in the store or earlier in the archive (\(detail)); nothing was changed",
                code: "row_conflict")
        }
        return GuestModeError.badData(
            "the row at \(location.description) of '\(path)' is not valid for table \(table.name) (\(detail)); nothing was changed",
            code: "bad_row")
    }
}

private extension CellValue {
    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .integer(let value): value.databaseValue
        case .real(let value): value.databaseValue
        case .text(let value): value.databaseValue
        }
    }
}

extension SQLiteStore {
    /// Runs `body` in one immediate transaction with synchronous=FULL, so a
    /// committed import survives a power cut; `body` says whether to commit.
    func writeDurably<T>(_ body: (Database) throws -> (value: T, commit: Bool)) throws -> T {
        do {
            return try database.writer.writeWithoutTransaction { db in
                let previous = try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? 1
                try db.execute(sql: "PRAGMA synchronous = FULL")
                defer { try? db.execute(sql: "PRAGMA synchronous = \(previous)") }
                var value: T?
                try db.inTransaction(.immediate) {
                    let outcome = try body(db)
                    value = outcome.value
                    return outcome.commit ? .commit : .rollback
                }
                guard let value else {
                    throw GuestModeError(.internalFailure, code: "internal", "the import transaction ended without a result")
                }
                return value
            }
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path ?? ":memory:")
        }
    }
}
