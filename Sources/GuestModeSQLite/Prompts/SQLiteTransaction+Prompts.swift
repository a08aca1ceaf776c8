import Foundation
internal import GRDB
import GuestModeKit

// Cached statements: a replay reads the facts and records an outcome once
// per event, and a log of outcomes runs these once per outcome or user.
extension SQLiteTransaction {
    func promptFacts(
        of userID: String, reading history: PromptHistoryRead
    ) throws -> (
        facts: PromptFacts, user: User
    )? {
        let read: String
        switch history {
        case .all: read = "all"
        case .decision(let shownAfter): read = shownAfter.map { "decision after " + Timestamp.format($0) } ?? "decision"
        }
        return try remembered(
            "promptFacts", userID, read,
            cost: { $0.map { 256 + 64 * $0.facts.counters.count + 128 * $0.facts.history.count } ?? 0 }
        ) { try readPromptFacts(of: userID, reading: history) }
    }

    private func readPromptFacts(
        of userID: String, reading history: PromptHistoryRead
    ) throws -> (
        facts: PromptFacts, user: User
    )? {
        guard
            let (user, promptState) = try readOne(
                db.statement("SELECT * FROM users WHERE id = ?"), arguments: [userID],
                { row in (try SQLiteStore.user(from: row), try row.decode("prompt_state", as: PromptState.self)) })
        else { return nil }
        var counters: [String: Int] = [:]
        // Copied rows, not a cursor: a cursor's live row reads text in an INTEGER column as 0.
        for (action, total) in try readAll(
            db.statement("SELECT action, total FROM counters WHERE user_id = ?"), arguments: [userID],
            { row in (try row.decode(String.self, forColumn: "action"), try row.decode(Int.self, forColumn: "total")) })
        {
            counters[action] = total
        }
        let facts = PromptFacts(
            userID: userID, userState: user.state, promptState: promptState, firstSeen: user.createdAt,
            counters: counters, history: try promptOutcomes(of: userID, reading: history))
        return (facts, user)
    }

    private func promptOutcomes(
        of userID: String, reading history: PromptHistoryRead
    ) throws
        -> [PromptHistoryEntry]
    {
        guard case .decision(let shownAfter) = history else { return try promptOutcomes(of: userID) }
        // Newest first, so each context's first row is its latest and the first `never` the latest. A row
        // passed over is looked at as SQLite holds it (its context and outcome compared as bytes): decoding
        // every row cost 7 k instructions one, which a statement that finds the rows itself does not save
        // either (a GROUP BY sorts, and each of its passes looks every row up in the table).
        let statement = try db.statement(
            "SELECT context, outcome, at FROM prompt_outcomes WHERE user_id = ? ORDER BY at DESC, id DESC")
        guard bind([userID], to: statement) else { return try promptOutcomes(of: userID) }
        var newestFirst: [PromptHistoryEntry] = []
        var contextsSeen: [[UInt8]] = []
        var neverSeen = false
        var undecodable = false
        try forEachStep(of: statement) { row in
            guard !undecodable else { return }
            guard case .text(let context) = row.column(0), case .text(let outcomeText) = row.column(1) else {
                undecodable = true
                return
            }
            let latestOfContext = !contextsSeen.contains { $0.elementsEqual(context) }
            let latestNever = !neverSeen && outcomeText.elementsEqual("never".utf8)
            let shown = shownAfter != nil && outcomeText.elementsEqual("shown".utf8)
            guard latestOfContext || latestNever || shown else { return }
            guard case .text(let atText) = row.column(2), let at = Timestamp.parse(bytes: atText),
                let outcome = PromptOutcome(rawValue: String(decoding: outcomeText, as: UTF8.self))
            else {
                undecodable = true
                return
            }
            let shownInWindow = shown && shownAfter.map { at > $0 } == true
            guard latestOfContext || latestNever || shownInWindow else { return }
            if latestOfContext { contextsSeen.append(Array(context)) }
            if latestNever { neverSeen = true }
            newestFirst.append(
                PromptHistoryEntry(context: String(decoding: context, as: UTF8.self), outcome: outcome, at: at))
        }
        // A value this read cannot take: the whole history, which decides the same, and whose strict
        // decoding words what is wrong.
        if undecodable { return try promptOutcomes(of: userID) }
        return newestFirst.reversed()
    }

    func promptState(of userID: String, locking: Bool) throws -> PromptState? {
        try StoredCase<PromptState>.fetchOne(
            db.statement("SELECT prompt_state FROM users WHERE id = ?"), arguments: [userID]
        )?.value
    }

    func promptStates(of userIDs: [String], locking: Bool) throws -> [String: PromptState] {
        var states: [String: PromptState] = [:]
        for userID in userIDs {
            states[userID] = try promptState(of: userID, locking: locking)
        }
        return states
    }

    func setPromptState(of userID: String, to state: PromptState) throws {
        try db.statement("UPDATE users SET prompt_state = ? WHERE id = ?")
            .execute(arguments: [state.rawValue, userID])
    }

    func setPromptStates(_ states: [String: PromptState]) throws {
        for (userID, state) in states { try setPromptState(of: userID, to: state) }
    }

    func promptOutcomes(of userID: String) throws -> [PromptHistoryEntry] {
        try readAll(
            db.statement(
                "SELECT context, outcome, at FROM prompt_outcomes WHERE user_id = ? ORDER BY at, id"),
            arguments: [userID], Self.promptOutcome)
    }

    private static func promptOutcome(_ row: any StoredRow) throws -> PromptHistoryEntry {
        PromptHistoryEntry(
            context: try row.decode(forColumn: "context"), outcome: try row.decode("outcome", as: PromptOutcome.self),
            at: try row.time("at"))
    }

    func appendPromptOutcome(_ entry: PromptHistoryEntry, of userID: String) throws {
        try db.statement("INSERT INTO prompt_outcomes (user_id, context, outcome, at) VALUES (?, ?, ?, ?)")
            .execute(arguments: [userID, entry.context, entry.outcome.rawValue, Timestamp.format(entry.at)])
    }

    func appendPromptOutcomes(_ records: [PromptRecord]) throws {
        for record in records {
            try appendPromptOutcome(
                PromptHistoryEntry(context: record.context, outcome: record.outcome, at: record.at), of: record.user)
        }
    }

    func userFlags(of userID: String, prefix: String) throws -> [String: Date] {
        try remembered("userFlags", userID, prefix, cost: { 64 * $0.count }) {
            try readUserFlags(of: userID, prefix: prefix)
        }
    }

    private func readUserFlags(of userID: String, prefix: String) throws -> [String: Date] {
        var flags: [String: Date] = [:]
        for (flag, setAt) in try readAll(
            db.statement("SELECT flag, set_at FROM user_flags WHERE user_id = ? AND substr(flag, 1, ?) = ?"),
            arguments: [userID, prefix.unicodeScalars.count, prefix],
            { row in (try row.decode(String.self, forColumn: "flag"), try row.time("set_at")) })
        {
            flags[flag] = setAt
        }
        return flags
    }

    func raiseUserFlag(_ flag: String, of userID: String, at time: Date) throws {
        try db.execute(
            sql: """
                INSERT INTO user_flags (user_id, flag, set_at) VALUES (?, ?, ?)
                ON CONFLICT(user_id, flag) DO UPDATE SET set_at = max(set_at, excluded.set_at)
                """,
            arguments: [userID, flag, Timestamp.format(time)])
    }

    func lastEventTime(of userID: String, action: String) throws -> Date? {
        try remembered("lastEventTime", userID, action) {
            try readOne(
                db.statement("SELECT max(at) AS at FROM events WHERE user_id = ? AND action = ?"),
                arguments: [userID, action], { row in try row.optionalTime("at") }
            ) ?? nil
        }
    }
}
