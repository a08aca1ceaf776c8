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
    /// Users the import added: the first `listLimit` by id (the guest owner
    /// last), of `addedCount`.
    public var added: [String]
    /// How many users the import added.
    public var addedCount: Int
    /// Users whose data the import replaced: the first `listLimit` by id (the
    /// guest owner last), of `replacedCount`.
    public var replaced: [String]
    /// How many users the import replaced.
    public var replacedCount: Int
    /// Users the import left as the store had them: the first `listLimit` by id, of `skippedCount`.
    public var skipped: [String]
    /// How many users the import skipped.
    public var skippedCount: Int
    /// Rows written (or, in a dry run, that would be written) per table.
    public var rows: [String: Int]
    /// Rows whose AUTOINCREMENT id was taken by another user's row and got a new one.
    public var renumbered: Int
    /// Who signed the archive.
    public var signature: SignatureStatus
    /// Tables whose rows were left out because the archive is not signed by
    /// this deployment (see `BackupTable.carriesTrust`).
    public var skippedTables: [String]
    /// Users imported as guests because their identities were left out: the
    /// first `listLimit` by id, of `unlinkedCount`.
    public var unlinked: [String]
    /// How many users were imported as guests.
    public var unlinkedCount: Int

    /// The most users each list of the report names: an archive of millions
    /// of users is reported by its counts, not a list of millions.
    public static let listLimit = 1000
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
                path: path, depth: .full, limits: limits, chain: chain, keys: keys, listed: session.users,
                onHeader: { try session.begin($0) },
                onRow: { table, row, location in
                    try session.insert(consume row, into: table, at: location)
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
            let (added, replaced, skipped) = session.reportedUsers()
            return BackupImportReport(
                archive: path, isDryRun: dryRun, formatVersion: walk.writtenVersion,
                profile: "\(walk.header.profile.name) v\(walk.header.profile.version)",
                added: added.sample, addedCount: added.count, replaced: replaced.sample,
                replacedCount: replaced.count, skipped: skipped.sample, skippedCount: skipped.count,
                rows: session.inserted, renumbered: session.renumbered, signature: found,
                skippedTables: session.untrustedRows.keys.sorted(), unlinked: session.unlinked.sample,
                unlinkedCount: session.unlinked.count)
        }
    }
}

/// The users header.json lists, heard as the header streams: kept on disk
/// by `ListedUsers`, with the first that cannot be a user id.
private final class HeaderUsers: ListedUserSink {
    let listed = ListedUsers(sampleLimit: BackupImportReport.listLimit)
    let guestOwner: String
    /// The first listed user that is empty or the profile's guest owner, and where.
    var misfit: (index: Int, user: String)?

    init(guestOwner: String) { self.guestOwner = guestOwner }

    func add(_ user: String) throws {
        if misfit == nil, user.isEmpty || user == guestOwner { misfit = (listed.count, user) }
        try listed.add(user)
    }

    func restart() throws {
        listed.restart()
        misfit = nil
    }
}

/// The smallest `limit` ids of a set seen one by one, and how many it holds.
private struct SortedSample {
    let limit: Int
    private(set) var sample: [String] = []
    private(set) var count = 0

    init(limit: Int) { self.limit = limit }

    mutating func insert(_ user: String) {
        count += 1
        let place = sample.partitionPoint { !$0.utf8.lexicographicallyPrecedes(user.utf8) }
        guard place < limit else { return }
        sample.insert(user, at: place)
        if sample.count > limit { sample.removeLast() }
    }
}

extension Array {
    /// The first index whose element is in the second part (`belongs` true from there on).
    fileprivate func partitionPoint(_ belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

/// The state of one import while the archive streams through it: the
/// conflict policy and the row-by-row checks, over the store's import writes.
/// What it keeps does not grow with the archive: the listed users are on
/// disk (`ListedUsers`), the cross-row facts in a spool (`CrossRowFacts`).
private struct ImportSession {
    let path: String
    let profile: Profile
    let policy: ConflictPolicy
    let rows: any BackupRowImport
    let users: HeaderUsers
    var guestOwner: String?
    /// What becomes of the guest owner's records, when the archive carries them.
    var guestOwnerFate: ListedUsers.Fate?
    /// Rows written per table.
    var inserted: [String: Int] {
        guard let lastInserted else { return insertedBefore }
        return insertedBefore.merging([lastInserted.table: lastInserted.count], uniquingKeysWith: +)
    }
    /// Rows written per table, less the last table's run of rows, counted apart: a table's rows come together,
    /// and a dictionary's hashing a row was 1 % of an import.
    private var insertedBefore: [String: Int] = [:]
    private var lastInserted: (table: String, count: Int)?
    var renumbered = 0
    var columns: [String: Set<String>] = [:]
    /// The table and columns of the row last found to hold only the store's columns, in its order: apart, not
    /// an optional tuple, so that comparing a row with them copies neither (a retain and a release a row).
    var checkedTable = ""
    var checkedColumns: [String] = []
    /// False for an archive not signed by this deployment: tables that carry
    /// trust are left out, and replaced users keep their own.
    let trusted: Bool
    /// Rows left out per table because the archive is not trusted.
    var untrustedRows: [String: Int] = [:]
    /// Users of an untrusted archive who come in as guests.
    var unlinked = SortedSample(limit: BackupImportReport.listLimit)

    /// Every row checked as if written through the command line (BackupRowValidation.swift).
    var validator: BackupRowValidator
    /// Calls of `rows.insert` so far, and where the latest ones were read,
    /// for a refusal of a row the store held back
    /// (`BackupRowRefusal.insertion`): each call's line (by call number
    /// modulo the size), and the runs of calls from one entry of one table.
    /// A table and an entry's name copied for every call were a retain and
    /// a release each.
    var insertions = 0
    var recentLines = Array(repeating: 0, count: backupPendingRowLimit + 1)
    var recentRuns: [RecentRun] = []

    /// Calls from one entry of one table, from the call `start` on.
    struct RecentRun {
        let start: Int
        let table: BackupTable
        let entry: String
    }

    /// Users named in the refusal of an import into a store that has them.
    static let namedPresentUsers = 20

    init(path: String, profile: Profile, policy: ConflictPolicy, rows: any BackupRowImport, trusted: Bool, now: Date) {
        self.path = path
        self.profile = profile
        self.policy = policy
        self.rows = rows
        self.trusted = trusted
        self.users = HeaderUsers(guestOwner: profile.guestOwner)
        self.validator = BackupRowValidator(profile: profile, now: now, archive: path)
    }

    mutating func begin(_ header: BackupHeader) throws {
        guard header.profile.name == profile.name else {
            throw GuestModeError(
                .profileMismatch,
                "the archive '\(path)' holds data of profile '\(header.profile.name)' but the store is bound to '\(profile.name)'; import it into a store initialised with that profile"
            )
        }
        try ImportTrust.checkGuestOwner(header, profile: profile, path: path)
        guestOwner = header.guestOwner
        // Each listed user once, in id order: its fate under the policy. The
        // deletions of `replace` run in the import transaction, which any
        // refusal below rolls back.
        var present: [String] = []
        var presentCount = 0
        var toDelete: [String] = []
        let rows = rows
        let trusted = trusted
        func deletePending() throws {
            guard !toDelete.isEmpty else { return }
            if trusted {
                try rows.deleteRows(ownedBy: toDelete)
            } else {
                // Only user-owned content is replaced; the user row, identities and entitlements stay.
                try rows.deleteRows(
                    ownedBy: toDelete, in: BackupTable.all.filter { !$0.carriesTrust && $0.name != "users" })
            }
            toDelete.removeAll(keepingCapacity: true)
        }
        let policy = policy
        // A restore into a store without users: every listed user is added, and there is nothing to ask (a
        // statement for every thousand users, a round trip each on PostgreSQL).
        let storeHoldsUsers = try rows.holdsUsers()
        let repeated = try users.listed.classify { batch in
            let times = storeHoldsUsers ? try rows.creationTimes(ofUsers: batch) : [:]
            return try batch.map { user -> (ListedUsers.Fate, created: String?) in
                guard let created = times[user] else { return (.added, nil) }
                switch policy {
                case .fail:
                    presentCount += 1
                    if present.count < Self.namedPresentUsers { present.append(user) }
                    return (.replaced, created)
                case .skip:
                    return (.skipped, created)
                case .replace:
                    toDelete.append(user)
                    if toDelete.count >= 1000 { try deletePending() }
                    return (trusted ? .replaced : .kept, created)
                }
            }
        }
        try ImportTrust.checkList(misfit: users.misfit, repeated: repeated, profile: profile, path: path)
        try ImportTrust.checkGuestOwnerInStore(header, profile: profile, path: path, rows: rows)
        var guestOwnerPresent = false
        if let guestOwner {
            guestOwnerPresent = try rows.hasRecords(ownedBy: guestOwner)
            guestOwnerFate = .added
        }
        if guestOwnerPresent, let guestOwner {
            presentCount += 1
            present.append(guestOwner)
            switch policy {
            case .fail: break
            case .skip: guestOwnerFate = .skipped
            case .replace:
                guestOwnerFate = trusted ? .replaced : .kept
                toDelete.append(guestOwner)
            }
        }
        guard policy != .fail || presentCount == 0 else {
            let more = presentCount > present.count ? " and \(presentCount - present.count) more users" : ""
            throw GuestModeError(
                .userExists,
                "the store already has \(present.map { $0 == guestOwner ? "records of the guest owner '\($0)'" : "user '\($0)'" }.joined(separator: ", "))\(more) from the archive '\(path)'; nothing was changed"
            )
        }
        try deletePending()
    }

    /// The users added, replaced and skipped, for the report: the first by
    /// id and the count of each, the guest owner's records counted as one.
    func reportedUsers() -> (
        added: (sample: [String], count: Int), replaced: (sample: [String], count: Int),
        skipped: (sample: [String], count: Int)
    ) {
        let listed = users.listed
        func with(
            _ sample: [String], _ count: Int, _ fates: Set<ListedUsers.Fate>, sorted: Bool = false
        ) -> (
            sample: [String], count: Int
        ) {
            guard let guestOwner, let fate = guestOwnerFate, fates.contains(fate) else { return (sample, count) }
            var sample = sample
            if sorted {
                sample.insert(
                    guestOwner, at: sample.partitionPoint { !$0.utf8.lexicographicallyPrecedes(guestOwner.utf8) })
            } else {
                sample.append(guestOwner)
            }
            return (sample, count + 1)
        }
        return (
            added: with(listed.sample(.added), listed.count(.added), [.added]),
            replaced: with(
                listed.sample(.replaced) + listed.sample(.kept), listed.count(.replaced) + listed.count(.kept),
                [.replaced, .kept]),
            skipped: with(listed.sample(.skipped), listed.count(.skipped), [.skipped], sorted: true)
        )
    }

    mutating func insert(_ archived: consuming BackupRow, into table: BackupTable, at location: RowLocation) throws {
        do {
            try insertRow(archived, into: table, at: location)
        } catch let refusal as BackupRowRefusal {
            // A row the store held back, refused while this one was read.
            throw heldBackFailure(refusal)
        }
    }

    private mutating func insertRow(
        _ archived: consuming BackupRow, into table: BackupTable, at location: RowLocation
    )
        throws
    {
        guard let owner = archived[table.ownerColumn]?.text else { throw foreign(table, at: location) }
        let listedUsers = users.listed
        let listed = try listedUsers.entry(of: owner)
        guard listed != nil || (table.mayBelongToGuestOwner && owner == guestOwner) else {
            throw foreign(table, at: location)
        }
        let fate = listed?.fate ?? guestOwnerFate
        var row = try validator.check(consume archived, table: table, entry: location.entry, line: location.line)
        if table.name == "users" {
            guard let listed, listedUsers.markSeen(listed) else {
                throw GuestModeError(
                    .badRow,
                    "the archive '\(path)' has user '\(owner)' twice (\(location.description)); nothing was changed")
            }
            if let created = listed.created, row["created_at"]?.text != created {
                throw GuestModeError(
                    .differentUser,
                    "user '\(owner)' in the archive '\(path)' was created at \(row["created_at"]?.text ?? "an unknown time") but the store's user '\(owner)' was created at \(created): they are different users with the same id. Nothing was changed"
                )
            }
        }
        if fate == .skipped { return }
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
                if fate == .kept {
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
        // A table's rows share their columns: a row whose columns are the
        // last checked row's is known good without looking at them; any other is checked.
        let checkedBefore = checkedTable == table.name && checkedColumns == row.columns
        if !checkedBefore {
            let known = try columnNames(of: table)
            // Sorted only for the message, which names the first unknown column by name.
            if row.columns.contains(where: { !known.contains($0) }),
                let unknown = row.columns.sorted().first(where: { !known.contains($0) })
            {
                throw GuestModeError(
                    .badRow,
                    "the archive '\(path)' has a column '\(unknown)' in \(table.name) at \(location.description) that this store does not have; nothing was changed"
                )
            }
            checkedTable = table.name
            checkedColumns = row.columns
        }
        noteRecent(table, location)
        insertions += 1
        do {
            // A user whose users row came earlier has it in the store: written above, or the store's own kept.
            let ownerHasUsersRow: Bool
            if table.name != "users", let listed {
                ownerHasUsersRow = listedUsers.hasSeen(listed)
            } else {
                ownerHasUsersRow = false
            }
            if try rows.insert(row, into: table, ownerHasUsersRow: ownerHasUsersRow) == .renumbered { renumbered += 1 }
        } catch let refusal as BackupRowRefusal where refusal.insertion == nil {
            throw failure(refusal, table: table, row: row, location: location)
        }
        if lastInserted?.table == table.name {
            lastInserted!.count += 1
        } else {
            if let lastInserted { insertedBefore[lastInserted.table, default: 0] += lastInserted.count }
            lastInserted = (table.name, 1)
        }
    }

    func finish() throws {
        do {
            try rows.finishRows()
        } catch let refusal as BackupRowRefusal {
            throw heldBackFailure(refusal)
        }
        try validator.finish()
        if let missing = try users.listed.firstUnseen(among: [.added, .replaced, .kept]) {
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

    private func foreign(_ table: BackupTable, at location: RowLocation) -> GuestModeError {
        GuestModeError(
            .foreignRow,
            "the archive '\(path)' has a row at \(location.description) whose \(table.ownerColumn) is not a user listed in header.json; nothing was changed"
        )
    }

    private mutating func columnNames(of table: BackupTable) throws -> Set<String> {
        if let cached = columns[table.name] { return cached }
        let names = try rows.columns(of: table)
        columns[table.name] = names
        return names
    }

    /// The error for a refusal of a row the store held back, at that row's place.
    private func heldBackFailure(_ refusal: BackupRowRefusal) -> GuestModeError {
        guard let insertion = refusal.insertion, insertion < insertions, insertions - insertion <= recentLines.count,
            let run = recentRuns.last(where: { $0.start <= insertion })
        else {
            return GuestModeError(
                .internalFailure,
                "the store refused a row it was given earlier and can no longer be placed (\(refusal.detail)); nothing was changed"
            )
        }
        return failure(
            refusal, table: run.table, row: [:],
            location: RowLocation(entry: run.entry, line: recentLines[insertion % recentLines.count]))
    }

    /// Notes where the call `insertions` was read: its line, and a new run when its table or entry is not the
    /// last call's. Runs that began before the last `recentLines.count` calls and have another after them go.
    private mutating func noteRecent(_ table: BackupTable, _ location: RowLocation) {
        recentLines[insertions % recentLines.count] = location.line
        let sameRun = recentRuns.withUnsafeBufferPointer { runs in
            guard let last = runs.indices.last else { return false }
            return runs[last].table == table && runs[last].entry == location.entry
        }
        guard !sameRun else { return }
        recentRuns.append(RecentRun(start: insertions, table: table, entry: location.entry))
        while recentRuns.count > 1, recentRuns[1].start <= insertions - recentLines.count { recentRuns.removeFirst() }
    }

    private func failure(
        _ refusal: BackupRowRefusal, table: BackupTable, row: BackupRow, location: RowLocation
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
