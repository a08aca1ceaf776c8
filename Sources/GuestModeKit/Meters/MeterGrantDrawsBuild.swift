import Foundation

// The kept grant draws of an existing store. The step that added their
// table (SQLite v14, PostgreSQL pg13) shipped adding it empty; the next one
// (v15, pg14) is SQL and cannot replay a ledger (the replay takes the bound
// profile), so it only records that a store holding grants owes the build
// (meta key `OwedGrantDraws.metaKey`); the engine builds it as the end of
// the migration: `guestmode db migrate`, or the first
// opening that migrates (every command, `guestmode serve`'s start, an app's
// `GuestMode(store:)`). The mark is read with the bound profile, so an
// opening asks the store nothing more.
//
// Each batch of holders is one transaction that builds their rows by the
// replay (`rebuildGrantDraws`, the one way a row is made) and moves the mark
// on, or removes it after the last: a build stopped anywhere leaves rows
// that are each the replay's, reads that replay what is not built yet, and a
// mark the next migration resumes from. Memory is one batch, whatever the
// store holds.

/// The mark of a build of kept grant draws the store owes (`MeterRows.owedGrantDraws`).
package enum OwedGrantDraws {
    /// The key of the `meta` row that holds the mark; its value is where the
    /// build has got to (`position(after:)`), "" before the first holder.
    package static let metaKey = "meter_grant_draws_owed"

    /// Holders built per transaction: a few thousand statements, one short lock.
    package static let batchSize = 200

    /// The mark of a build that has built everything up to `holder`: the
    /// user id's length in UTF-8 bytes, a colon, the user id, then the meter,
    /// so any id reads back whole.
    static func position(after holder: MeterGrantHolder) -> String {
        "\(holder.userID.utf8.count):\(holder.userID)\(holder.meter)"
    }

    /// The holder a mark names; nil for "" (the start) or a mark that does
    /// not read back, which restarts the build: building a row again is harmless.
    static func holder(at position: String) -> MeterGrantHolder? {
        guard let colon = position.firstIndex(of: ":"), let count = Int(position[..<colon]), count >= 0 else {
            return nil
        }
        let rest = Array(position[position.index(after: colon)...].utf8)
        guard rest.count >= count, let userID = String(bytes: rest[..<count], encoding: .utf8),
            let meter = String(bytes: rest[count...], encoding: .utf8)
        else { return nil }
        return MeterGrantHolder(userID: userID, meter: meter)
    }
}

/// What `GuestMode.migrate` did: the schema steps applied and the kept rows built.
package struct StoreMigration: Sendable, Equatable {
    /// The schema steps applied, oldest first.
    package var applied: [String]
    /// The (user, meter) pairs whose kept grant draws were built.
    package var grantDrawsBuilt: Int

    package init(applied: [String], grantDrawsBuilt: Int) {
        self.applied = applied
        self.grantDrawsBuilt = grantDrawsBuilt
    }
}

/// How far `GuestMode.migrate` has got, for a progress display.
package enum StoreMigrationProgress: Sendable, Equatable {
    /// A schema step was applied.
    case applied(String)
    /// This many kept rows of grant draws are built so far.
    case builtGrantDraws(Int)
}

extension GuestMode {
    /// Migrates `store`: applies its pending schema steps, then builds what
    /// they left owed (`buildOwedGrantDraws`), also when an earlier migration
    /// stopped before its end. `location` names the store in messages;
    /// `faults` are a test's. A store with nothing to do is not written to.
    ///
    /// ```swift
    /// let done = try GuestMode.migrate(store: store, location: "app.guestmode") { print($0) }
    /// // done.applied == ["v15-meter-grant-draws-owed"], done.grantDrawsBuilt == 1200
    /// ```
    package static func migrate(
        store: any GuestStore, location: String, faults: EngineFaults = EngineFaults(),
        progress: (StoreMigrationProgress) -> Void = { _ in }
    ) throws -> StoreMigration {
        let applied = try store.applyPendingMigrations { progress(.applied($0)) }
        // A store bound to no profile has no grants; nor is its profile parsed unless a build is owed.
        guard try store.boundProfileWithCache()?.owesGrantDraws == true else {
            return StoreMigration(applied: applied, grantDrawsBuilt: 0)
        }
        var engine = try GuestMode(store: store, location: location)
        engine.faults = faults
        let built = try engine.buildOwedGrantDraws { progress(.builtGrantDraws($0)) }
        return StoreMigration(applied: applied, grantDrawsBuilt: built)
    }

    /// Builds the kept grant draws of every holder that has none, as
    /// `buildOwedGrantDraws` does after marking the whole build owed: for a
    /// store made by copying another's rows (`guestmode db copy`), which
    /// carries none, being derived.
    ///
    /// ```swift
    /// let built = try GuestMode(profile: engine.profile, store: copy).buildMissingGrantDraws()
    /// ```
    @discardableResult
    package func buildMissingGrantDraws(progress: (Int) -> Void = { _ in }) throws -> Int {
        // From the start, whatever mark the rows brought: the copy of a store part built holds none of its rows.
        try store.write { try $0.setOwedGrantDraws("") }
        return try buildOwedGrantDraws(progress: progress)
    }

    /// Builds the kept grant draws the store owes, from where an earlier
    /// build stopped: for each (user, meter) holding a grant of a meter of
    /// the profile and no kept row, the replay of its ledger
    /// (`rebuildGrantDraws`), `batchSize` holders per transaction. Returns
    /// how many rows it built; nothing when nothing is owed. `progress` is
    /// told the count after each batch.
    ///
    /// ```swift
    /// if engine.owedGrantDraws { try engine.buildOwedGrantDraws() }
    /// ```
    @discardableResult
    package func buildOwedGrantDraws(
        batchSize: Int = OwedGrantDraws.batchSize, progress: (Int) -> Void = { _ in }
    ) throws -> Int {
        var built = 0
        while true {
            let batch = try store.write { transaction -> (built: Int, isLast: Bool) in
                // Read again in each batch: another process may have moved the mark on or finished.
                guard let position = try transaction.owedGrantDraws() else { return (0, true) }
                let holders = try transaction.meterGrantHoldersWithoutDraws(
                    after: OwedGrantDraws.holder(at: position), limit: max(1, batchSize))
                // All the batch's users locked first, in the engine's order of ids (`existingUsers`), not the
                // page's (PostgreSQL's collation): every transaction that locks several takes them in one order.
                let users = try transaction.existingUsers(holders.map(\.userID), locking: true)
                var count = 0
                for holder in holders {
                    // A meter the profile no longer has is never read; a user deleted since has nothing to keep.
                    guard let meter = profile.meter(named: holder.meter), let user = users[holder.userID] else {
                        continue
                    }
                    let grants = try transaction.meterGrants(of: user.id, meter: meter.name)
                    guard !grants.isEmpty else { continue }
                    try transaction.rebuildGrantDraws(
                        of: user, meter: meter, grants: grants, plans: try transaction.planGrants(of: user.id),
                        profile: profile)
                    count += 1
                }
                guard let last = holders.last, holders.count >= max(1, batchSize) else {
                    try transaction.setOwedGrantDraws(nil)
                    return (count, true)
                }
                try transaction.setOwedGrantDraws(OwedGrantDraws.position(after: last))
                return (count, false)
            }
            built += batch.built
            progress(built)
            if batch.isLast { return built }
            try faults.afterGrantDrawsBatch()
        }
    }
}
