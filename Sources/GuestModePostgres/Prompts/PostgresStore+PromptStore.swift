import Foundation
import GuestModeKit

extension PostgresStore: PromptStore {
    public func promptFacts(userID: String) throws -> PromptFacts? {
        try read { connection in try PostgresStore.promptFacts(connection, userID: userID) }
    }

    public func promptSnapshot(userID: String, profile: Profile, now: Date) throws -> PromptFacts? {
        try read { connection in
            guard var facts = try PostgresStore.promptFacts(connection, userID: userID),
                let user = try findUser(userID, connection)
            else { return nil }
            for collection in profile.collections {
                facts.limits[collection.name] = try collectionLimit(
                    of: user, collection: collection.name, profile: profile, now: now, connection)
            }
            for meter in profile.meters {
                let used = try PostgresTransaction(store: self, connection: connection).meterUsage(
                    of: userID, meter: meter.name, since: meter.reset.periodStart(containing: now))
                facts.meters[meter.name] = profile.meterStatus(
                    meter, tier: try tier(of: user, profile: profile, now: now, connection), used: used, now: now)
            }
            for row in try connection.execute(
                "SELECT flag, set_at FROM user_flags WHERE user_id = $1 AND left(flag, $2::int) = $3",
                [
                    PostgresValue(userID), PostgresValue(PromptTrigger.flagPrefix.count),
                    PostgresValue(PromptTrigger.flagPrefix),
                ])
            {
                let flag = try row.string("flag")
                facts.raisedTriggers[String(flag.dropFirst(PromptTrigger.flagPrefix.count))] = try row.date("set_at")
            }
            facts.resetAt = try connection.execute(
                "SELECT max(at COLLATE \"C\") AS at FROM events WHERE user_id = $1 AND action = $2",
                [PostgresValue(userID), PostgresValue(PromptTrigger.resetEventAction)]
            ).first?.optionalDate("at")
            return facts
        }
    }

    public func recordPromptOutcome(
        _ entry: PromptHistoryEntry, userID: String, queuesBackup: Bool
    ) throws
        -> PromptState?
    {
        try write { connection in
            guard let state = try PostgresStore.recordPromptOutcome(connection, entry, userID: userID) else {
                return nil
            }
            if queuesBackup { try enqueueBackup(userID: userID, now: entry.at, connection) }
            return state
        }
    }

    public func raisePromptTriggers(_ names: [String], userID: String, at time: Date) throws -> Bool {
        try write { connection in
            guard try findUser(userID, locking: true, connection) != nil else { return false }
            for name in names {
                try connection.execute(
                    """
                    INSERT INTO user_flags (user_id, flag, set_at) VALUES ($1, $2, $3)
                    ON CONFLICT (user_id, flag) DO UPDATE
                    SET set_at = greatest(user_flags.set_at COLLATE "C", excluded.set_at COLLATE "C")
                    """,
                    [PostgresValue(userID), PostgresValue(PromptTrigger.flagPrefix + name), PostgresValue(time)])
            }
            return true
        }
    }

    public func resetPromptState(userID: String, at time: Date, queuesBackup: Bool) throws -> Bool? {
        try write { connection in
            guard
                let row = try connection.execute(
                    "SELECT prompt_state FROM users WHERE id = $1 FOR UPDATE", [PostgresValue(userID)]
                ).first
            else { return nil }
            let current = try row.decode("prompt_state", as: PromptState.self)
            guard current == .neverAsk else { return false }
            try connection.execute(
                "UPDATE users SET prompt_state = $1 WHERE id = $2",
                [PostgresValue(PromptState.dismissed.rawValue), PostgresValue(userID)])
            try appendSystemEvent(
                user: userID, action: PromptTrigger.resetEventAction, properties: ["previous_state": current.rawValue],
                at: time, connection)
            if queuesBackup { try enqueueBackup(userID: userID, now: time, connection) }
            return true
        }
    }

    /// A log of outcomes in one transaction, in a constant number of round
    /// trips per few thousand users rather than three per outcome: every user
    /// named is locked (in id order, as any multi-user transaction locks, so
    /// two logs never deadlock), the states are folded in Swift exactly as
    /// one-by-one recording would move them, the outcomes are copied in log
    /// order (so their ids keep that order) and each user's state is written
    /// once.
    public func recordPromptOutcomes(_ records: [PromptRecord], queuesBackup: Bool) throws {
        guard !records.isEmpty else { return }
        try write { connection in
            let userIDs = Array(Set(records.map(\.user))).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            var states: [String: PromptState] = [:]
            for start in stride(from: 0, to: userIDs.count, by: PostgresStore.promptBatchSize) {
                let batch = Array(userIDs[start..<min(start + PostgresStore.promptBatchSize, userIDs.count)])
                for row in try connection.execute(
                    "SELECT id, prompt_state FROM users WHERE id = ANY($1::text[]) ORDER BY id COLLATE \"C\" FOR UPDATE",
                    [PostgresStore.userIDArray(batch)])
                {
                    states[try row.string("id")] = try row.decode("prompt_state", as: PromptState.self)
                }
            }
            // The first record (in log order) whose user is missing is the one reported.
            if let missing = records.first(where: { states[$0.user] == nil }) {
                throw GuestModeError.notFound(
                    "no user '\(missing.user)' in this store; nothing was recorded", code: .userNotFound)
            }
            for record in records {
                if let state = states[record.user] { states[record.user] = state.after(record.outcome) }
            }
            try connection.copy(
                "COPY prompt_outcomes (user_id, context, outcome, at) FROM STDIN",
                rows: records.map { record in
                    [
                        PostgresValue(record.user), PostgresValue(record.context),
                        PostgresValue(record.outcome.rawValue), PostgresValue(record.at),
                    ]
                })
            for start in stride(from: 0, to: userIDs.count, by: PostgresStore.promptBatchSize) {
                let batch = Array(userIDs[start..<min(start + PostgresStore.promptBatchSize, userIDs.count)])
                try connection.execute(
                    """
                    UPDATE users AS u SET prompt_state = v.state
                    FROM unnest($1::text[], $2::text[]) AS v (id, state)
                    WHERE u.id = v.id
                    """,
                    [
                        PostgresStore.userIDArray(batch),
                        PostgresStore.userIDArray(batch.map { states[$0]?.rawValue ?? PromptState.anonymous.rawValue }),
                    ])
            }
            if queuesBackup {
                // Each user's backup once, queued at their latest outcome of the log.
                var latest: [String: Date] = [:]
                for record in records { latest[record.user] = max(latest[record.user] ?? record.at, record.at) }
                for userID in userIDs {
                    if let at = latest[userID] { try enqueueBackup(userID: userID, now: at, connection) }
                }
            }
        }
    }

    /// How many users one statement of `recordPromptOutcomes` locks or updates.
    static let promptBatchSize = 2000

    /// What the prompt policy reads about one user, inside the caller's
    /// transaction (replays ask it once per event).
    static func promptFacts(_ connection: PostgresConnection, userID: String) throws -> PromptFacts? {
        guard
            let user = try connection.execute(
                "SELECT state, prompt_state, created_at FROM users WHERE id = $1", [PostgresValue(userID)]
            ).first
        else { return nil }
        var counters: [String: Int] = [:]
        for row in try connection.execute(
            "SELECT action, total FROM counters WHERE user_id = $1", [PostgresValue(userID)])
        {
            counters[try row.string("action")] = try row.int("total")
        }
        let history = try connection.execute(
            "SELECT context, outcome, at FROM prompt_outcomes WHERE user_id = $1 ORDER BY at COLLATE \"C\", id",
            [PostgresValue(userID)]
        ).map { row in
            PromptHistoryEntry(
                context: try row.string("context"), outcome: try row.decode("outcome", as: PromptOutcome.self),
                at: try row.date("at"))
        }
        return PromptFacts(
            userID: userID, userState: try user.decode("state", as: UserState.self),
            promptState: try user.decode("prompt_state", as: PromptState.self),
            firstSeen: try user.date("created_at"), counters: counters, history: history)
    }

    /// Appends one outcome and moves the user's prompt state, inside the
    /// caller's transaction; nil when the user does not exist. The user's
    /// row is locked first, so two outcomes recorded at once both count.
    static func recordPromptOutcome(
        _ connection: PostgresConnection, _ entry: PromptHistoryEntry, userID: String
    )
        throws -> PromptState?
    {
        guard
            let current = try connection.execute(
                "SELECT prompt_state FROM users WHERE id = $1 FOR UPDATE", [PostgresValue(userID)]
            ).first
        else { return nil }
        let state = try current.decode("prompt_state", as: PromptState.self).after(entry.outcome)
        try connection.execute(
            "INSERT INTO prompt_outcomes (user_id, context, outcome, at) VALUES ($1, $2, $3, $4)",
            [
                PostgresValue(userID), PostgresValue(entry.context), PostgresValue(entry.outcome.rawValue),
                PostgresValue(entry.at),
            ])
        try connection.execute(
            "UPDATE users SET prompt_state = $1 WHERE id = $2", [PostgresValue(state.rawValue), PostgresValue(userID)])
        return state
    }
}
