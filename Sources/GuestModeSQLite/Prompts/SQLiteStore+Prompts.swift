import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: PromptStore {
    public func promptFacts(userID: String) throws -> PromptFacts? {
        try read { db in try SQLiteStore.promptFacts(db, userID: userID) }
    }

    public func promptSnapshot(userID: String, profile: Profile, now: Date) throws -> PromptFacts? {
        try read { db in
            guard var facts = try SQLiteStore.promptFacts(db, userID: userID), let user = try findUser(userID, db)
            else { return nil }
            for collection in profile.collections {
                facts.limits[collection.name] = try collectionLimit(
                    of: user, collection: collection.name, profile: profile, now: now, db)
            }
            for meter in profile.meters {
                let used = try SQLiteTransaction(store: self, db: db).meterUsage(
                    of: userID, meter: meter.name, since: meter.reset.periodStart(containing: now))
                facts.meters[meter.name] = profile.meterStatus(
                    meter, tier: try tier(of: user, profile: profile, now: now, db), used: used, now: now)
            }
            for row in try Row.fetchAll(
                db, sql: "SELECT flag, set_at FROM user_flags WHERE user_id = ? AND substr(flag, 1, ?) = ?",
                arguments: [userID, PromptTrigger.flagPrefix.count, PromptTrigger.flagPrefix])
            {
                let flag: String = try row.decode(forColumn: "flag")
                facts.raisedTriggers[String(flag.dropFirst(PromptTrigger.flagPrefix.count))] = try row.time("set_at")
            }
            facts.resetAt = try StoredTime.fetchOne(
                db, sql: "SELECT max(at) FROM events WHERE user_id = ? AND action = ?",
                arguments: [userID, PromptTrigger.resetEventAction]
            )?.date
            return facts
        }
    }

    public func recordPromptOutcome(
        _ entry: PromptHistoryEntry, userID: String, queuesBackup: Bool
    ) throws
        -> PromptState?
    {
        try write { db in
            guard let state = try SQLiteStore.recordPromptOutcome(db, entry, userID: userID) else { return nil }
            if queuesBackup { try enqueueBackup(db, userID: userID, now: entry.at) }
            return state
        }
    }

    public func recordPromptOutcomes(_ records: [PromptRecord], queuesBackup: Bool) throws {
        try write { db in
            for record in records {
                let entry = PromptHistoryEntry(context: record.context, outcome: record.outcome, at: record.at)
                guard try SQLiteStore.recordPromptOutcome(db, entry, userID: record.user) != nil else {
                    throw GuestModeError.notFound(
                        "no user '\(record.user)' in this store; nothing was recorded", code: .userNotFound)
                }
                if queuesBackup { try enqueueBackup(db, userID: record.user, now: record.at) }
            }
        }
    }

    public func raisePromptTriggers(_ names: [String], userID: String, at time: Date) throws -> Bool {
        try write { db in
            guard try findUser(userID, db) != nil else { return false }
            for name in names {
                try db.execute(
                    sql: """
                        INSERT INTO user_flags (user_id, flag, set_at) VALUES (?, ?, ?)
                        ON CONFLICT(user_id, flag) DO UPDATE SET set_at = max(set_at, excluded.set_at)
                        """,
                    arguments: [userID, PromptTrigger.flagPrefix + name, Timestamp.format(time)])
            }
            return true
        }
    }

    public func resetPromptState(userID: String, at time: Date, queuesBackup: Bool) throws -> Bool? {
        try write { db in
            guard
                let current = try StoredCase<PromptState>.fetchOne(
                    db, sql: "SELECT prompt_state FROM users WHERE id = ?", arguments: [userID])?.value
            else { return nil }
            guard current == .neverAsk else { return false }
            try db.execute(
                sql: "UPDATE users SET prompt_state = ? WHERE id = ?",
                arguments: [PromptState.dismissed.rawValue, userID])
            try appendSystemEvent(
                user: userID, action: PromptTrigger.resetEventAction, properties: ["previous_state": current.rawValue], at: time,
                db)
            if queuesBackup { try enqueueBackup(db, userID: userID, now: time) }
            return true
        }
    }

    static func promptFacts(_ db: Database, userID: String) throws -> PromptFacts? {
        // Cached statements: replays ask this once per event.
        guard
            let user = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT state, prompt_state, created_at FROM users WHERE id = ?"),
                arguments: [userID])
        else { return nil }
        var counters: [String: Int] = [:]
        // Copied rows, not a cursor: a cursor's live row reads text in an INTEGER column as 0.
        for row in try Row.fetchAll(
            db.cachedStatement(sql: "SELECT action, total FROM counters WHERE user_id = ?"), arguments: [userID])
        {
            counters[try row.decode(forColumn: "action")] = try row.decode(forColumn: "total")
        }
        let history = try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT context, outcome, at FROM prompt_outcomes WHERE user_id = ? ORDER BY at, id"),
            arguments: [userID]
        ).map { row in
            PromptHistoryEntry(
                context: try row.decode(forColumn: "context"),
                outcome: try row.decode("outcome", as: PromptOutcome.self), at: try row.time("at"))
        }
        return PromptFacts(
            userID: userID,
            userState: try user.decode("state", as: UserState.self),
            promptState: try user.decode("prompt_state", as: PromptState.self),
            firstSeen: try user.time("created_at"), counters: counters, history: history)
    }

    static func recordPromptOutcome(_ db: Database, _ entry: PromptHistoryEntry, userID: String) throws -> PromptState?
    {
        guard
            let current = try StoredCase<PromptState>.fetchOne(
                db.cachedStatement(sql: "SELECT prompt_state FROM users WHERE id = ?"), arguments: [userID])
        else { return nil }
        let state = current.value.after(entry.outcome)
        try db.cachedStatement(sql: "INSERT INTO prompt_outcomes (user_id, context, outcome, at) VALUES (?, ?, ?, ?)")
            .execute(arguments: [userID, entry.context, entry.outcome.rawValue, Timestamp.format(entry.at)])
        try db.cachedStatement(sql: "UPDATE users SET prompt_state = ? WHERE id = ?")
            .execute(arguments: [state.rawValue, userID])
        return state
    }
}
