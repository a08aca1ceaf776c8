import Foundation

/// Where the users of `GuestMode.importUsers` come from.
public enum UserImportFormat: String, CaseIterable, Codable, Sendable {
    /// The JSON file `firebase auth:export` writes.
    case firebase
    /// Supabase's `auth.users` and `auth.identities`, each exported by
    /// psql as CSV with a header, ordered by user id.
    case supabase
}

/// What an import of users did (or, in a dry run, would do).
public struct UserImportReport: Codable, Sendable, Equatable {
    /// The format the export was read as.
    public var format: UserImportFormat
    /// Accounts read from the export.
    public var accounts: Int
    /// Users created, anonymous or linked.
    public var usersCreated: Int
    /// Accounts already in the store with the same state and identities.
    public var unchanged: Int
    /// Of the users created, those without an identity.
    public var anonymous: Int
    /// Of the users created, those with at least one identity.
    public var linked: Int
    /// Identities linked to the users created.
    public var identities: Int
    /// Accounts whose password hash was left out: guestmode never imports
    /// password hashes or tokens.
    public var passwordHashesSkipped: Int
    /// True when nothing was written: the counts say what an import would do.
    public var isDryRun: Bool

    init(format: UserImportFormat, dryRun: Bool) {
        self.format = format
        accounts = 0
        usersCreated = 0
        unchanged = 0
        anonymous = 0
        linked = 0
        identities = 0
        passwordHashesSkipped = 0
        isDryRun = dryRun
    }
}

extension GuestMode {
    /// The most problems an import names before it stops looking.
    static let importProblemsNamed = 20

    /// How many accounts an import reads and writes together: on PostgreSQL a chunk costs a round trip for
    /// each of its questions and inserts, where an account at a time cost three (bench/results.md, "`user
    /// import` a chunk at a time").
    static let importChunkSize = 500
    /// The most bytes of accounts a chunk holds (`ImportedAccount.heldBytes`).
    static let importChunkBytes = 4 << 20

    /// Imports the users of another auth system, keeping their ids, so
    /// experiment buckets, counters and meters carry on. Each account
    /// becomes an anonymous guest (no identity) or a linked user with its
    /// identities; password hashes and tokens are never imported. An
    /// account already in the store with the same state and identities is
    /// left as it is, so a rerun of the same file changes nothing; one that
    /// differs, or an identity another user holds, is a conflict. All or
    /// nothing: every problem after the first is passed to `problem` as
    /// `file:line: reason` as it is found, and then the whole import is
    /// refused with the first problem (its code, its message and how many
    /// more there were) and nothing is stored. `progress` gets the accounts
    /// read so far.
    ///
    /// A Supabase export is two files: `url` holds `auth.users` and
    /// `identities` holds `auth.identities`.
    ///
    /// ```swift
    /// let report = try engine.importUsers(
    ///     from: URL(fileURLWithPath: "users.json"), format: .firebase, now: now)
    /// print("\(report.usersCreated) users kept their ids")
    /// ```
    public func importUsers(
        from url: URL, label: String? = nil, identities: URL? = nil, identitiesLabel: String? = nil,
        format: UserImportFormat, dryRun: Bool = false, now: Date, problem: (String) -> Void = { _ in },
        progress: (Int) -> Void = { _ in }
    ) throws -> UserImportReport {
        let label = label ?? url.path
        let forEachAccount: ((_ line: Int, _ account: () throws -> ImportedAccount) throws -> Void) throws -> Void
        switch (format, identities) {
        case (.firebase, nil):
            forEachAccount = { body in
                try FirebaseExportReader(url: url, label: label).forEachAccount { line, object in
                    try body(line) { try ImportedAccount(firebase: object, line: line) }
                }
            }
        case (.supabase, let identities?):
            let reader = SupabaseExportReader(
                users: url, usersLabel: label, identities: identities,
                identitiesLabel: identitiesLabel ?? identities.path)
            forEachAccount = reader.forEachAccount
        case (.firebase, _?):
            throw GuestModeError(.usage, "a Firebase export is one file; identities come with Supabase's")
        case (.supabase, nil):
            throw GuestModeError(
                .usage, "a Supabase export is two files: auth.users, and auth.identities beside it")
        }
        var report = UserImportReport(format: format, dryRun: dryRun)
        var problems: [GuestModeError] = []
        var problemCount = 0
        struct Rollback: Error {}
        do {
            try store.write { transaction in
                // A store may run the transaction again (a serialization retry): start afresh.
                report = UserImportReport(format: format, dryRun: dryRun)
                problems = []
                problemCount = 0
                func note(_ line: Int, _ error: GuestModeError) {
                    problemCount += 1
                    guard problems.count < Self.importProblemsNamed else { return }
                    let located = GuestModeError(error.code, "\(label):\(line): \(error.message)")
                    problems.append(located)
                    if problems.count > 1 { problem(located.message) }
                }
                var chunk: [ReadAccount] = []
                var chunkBytes = 0
                try forEachAccount { line, read in
                    report.accounts += 1
                    if report.accounts % 10_000 == 0 { progress(report.accounts) }
                    do {
                        let account = try read()
                        chunkBytes += account.heldBytes
                        try checkImported(account, now: now)
                        chunk.append(ReadAccount(line: line, account: .success(account)))
                    } catch let error as GuestModeError {
                        chunk.append(ReadAccount(line: line, account: .failure(error)))
                    }
                    // By bytes too: an account may hold a megabyte of identities.
                    if chunk.count == Self.importChunkSize || chunkBytes >= Self.importChunkBytes {
                        try importAccounts(chunk, into: transaction, report: &report, note: note)
                        chunk.removeAll(keepingCapacity: true)
                        chunkBytes = 0
                    }
                }
                try importAccounts(chunk, into: transaction, report: &report, note: note)
                progress(report.accounts)
                if !problems.isEmpty || dryRun { throw Rollback() }
            }
        } catch is Rollback {
            guard let first = problems.first else { return report }
            let more = problemCount > 1 ? " (and \(problemCount - 1) more)" : ""
            throw GuestModeError(first.code, "\(first.message)\(more); nothing was imported")
        }
        return report
    }

    /// An account as read from the export and checked (`checkImported`), or why it could not be either.
    struct ReadAccount {
        var line: Int
        var account: Result<ImportedAccount, GuestModeError>
    }

    /// A chunk of accounts read and checked, in the import's transaction, each created, found unchanged, or
    /// refused (passed to `note` with its line) without writing anything, in the file's order. An account is
    /// judged against the store and every account before it in the file, as if each had been stored on its
    /// own: the chunk's users, their identities and the owners of the identities the accounts bring are asked
    /// for once, and what the chunk creates is kept beside them as it goes.
    private func importAccounts(
        _ chunk: [ReadAccount], into transaction: any StoreTransaction, report: inout UserImportReport,
        note: (Int, GuestModeError) -> Void
    ) throws {
        guard !chunk.isEmpty else { return }
        let accounts = chunk.compactMap { try? $0.account.get() }
        let stored = try transaction.users(accounts.map(\.id), locking: true)
        let storedIdentities = stored.isEmpty ? [:] : try transaction.identities(ofUsers: Array(stored.keys))
        let keys = accounts.flatMap { account in account.identities.map(\.key) }
        var owners = keys.isEmpty ? [:] : try transaction.identityOwners(keys)
        var held: [String: (state: UserState, identities: [Identity])] = stored.mapValues { user in
            (user.state, storedIdentities[user.id] ?? [])
        }
        var users: [User] = []
        var identities: [(identity: Identity, userID: String)] = []
        var lines: [IdentityKey: Int] = [:]
        func described(_ state: UserState, _ identities: [Identity]) -> String {
            let names = identities.map { "\($0.provider) \($0.subject)" }.sorted()
            return "\(state.rawValue), \(names.isEmpty ? "no identity" : names.joined(separator: ", "))"
        }
        for read in chunk {
            let account: ImportedAccount
            switch read.account {
            case .failure(let error):
                note(read.line, error)
                continue
            case .success(let checked): account = checked
            }
            let state: UserState = account.identities.isEmpty ? .anonymous : .linked
            if let existing = held[account.id] {
                if described(existing.state, existing.identities) == described(state, account.identities) {
                    report.unchanged += 1
                } else {
                    note(
                        read.line,
                        GuestModeError(
                            .importConflict,
                            "user '\(account.id)' is already in the store with other data (\(described(existing.state, existing.identities))); the export has (\(described(state, account.identities)))"
                        ))
                }
                continue
            }
            if let taken = account.identities.first(where: { owners[$0.key] != nil }) {
                note(
                    read.line,
                    GuestModeError(
                        .importConflict,
                        "the \(taken.provider) identity of account '\(account.id)' already belongs to user '\(owners[taken.key] ?? "")'"
                    ))
                continue
            }
            users.append(
                User(
                    id: account.id, device: nil, state: state,
                    promptState: state == .linked
                        ? PromptState.authenticated.rawValue : PromptState.anonymous.rawValue,
                    createdAt: account.createdAt, lastSeenAt: account.lastSeenAt,
                    linkedAt: state == .linked ? account.createdAt : nil))
            held[account.id] = (state, account.identities)
            for identity in account.identities {
                identities.append((identity, account.id))
                owners[identity.key] = account.id
                lines[identity.key] = read.line
            }
            report.usersCreated += 1
            report.identities += account.identities.count
            if state == .linked { report.linked += 1 } else { report.anonymous += 1 }
            if account.hasPasswordHash { report.passwordHashesSkipped += 1 }
        }
        try transaction.insertUsers(users)
        for key in try transaction.insertIdentities(identities) {
            note(
                lines[key] ?? 0,
                GuestModeError(
                    .importConflict,
                    "the \(key.provider) identity of account '\(owners[key] ?? "")' was linked to another user meanwhile"
                ))
        }
    }

    /// What an account must be to be imported at all, whatever the store holds.
    private func checkImported(_ account: ImportedAccount, now: Date) throws {
        try TextRule.check(account.id, what: "the user id")
        guard account.id.count <= 128,
            !account.id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw GuestModeError(
                .invalidImportFile,
                "the user id must be 1 to 128 characters without control characters, not \(account.id.debugDescription)"
            )
        }
        guard account.createdAt <= now else {
            throw GuestModeError(
                .invalidImportFile,
                "account '\(account.id)' was created at \(Timestamp.format(account.createdAt)), after the current time \(Timestamp.format(now))"
            )
        }
        let providers = profile.identity.providers
        if let unknown = account.identities.first(where: { !providers.contains($0.provider) }) {
            throw GuestModeError(
                .invalidImportFile,
                "account '\(account.id)' has a \(unknown.provider) identity; this profile accepts: \(providers.joined(separator: ", ")) (identity.providers)"
            )
        }
        let allowed = profile.identity.maximumProvidersPerUser
        if account.identities.count > allowed {
            // Each provider named once, with how many it has: an account may list thousands.
            var byProvider: [(provider: String, count: Int)] = []
            for identity in account.identities {
                if let index = byProvider.firstIndex(where: { $0.provider == identity.provider }) {
                    byProvider[index].count += 1
                } else {
                    byProvider.append((identity.provider, 1))
                }
            }
            let named = byProvider.map { $0.count > 1 ? "\($0.count) \($0.provider)" : $0.provider }
            throw GuestModeError(
                .invalidImportFile,
                "account '\(account.id)' has \(account.identities.count) identities (\(named.joined(separator: ", "))); this profile allows \(allowed) per user (identity.max_providers_per_user)"
            )
        }
        if Set(account.identities.map(\.provider)).count < account.identities.count {
            throw GuestModeError(
                .invalidImportFile, "account '\(account.id)' has two identities of one provider")
        }
    }
}
