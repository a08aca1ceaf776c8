import Foundation
import GuestModeKit

extension PostgresTransaction {
    func promptFacts(
        of userID: String, reading history: PromptHistoryRead
    ) throws -> (
        facts: PromptFacts, user: User
    )? {
        // Three reads that need nothing of each other: one round trip.
        try facts(of: userID, from: connection.execute(Self.factStatements(of: userID, reading: history))[...])
    }

    /// `promptFacts` and `promptInputs` in one round trip: the inputs'
    /// reads need nothing of the facts', and are dropped for a user not found.
    func promptFactsAndInputs(
        of userID: String, reading history: PromptHistoryRead, collections: [String],
        meters: [(meter: Meter, since: Date?)], flagPrefix: String, lastEventOf action: String?, at now: Date
    ) throws -> (facts: PromptFacts, user: User, inputs: PromptInputs)? {
        let factStatements = Self.factStatements(of: userID, reading: history)
        let inputStatements = Self.inputStatements(
            of: userID, collections: collections, meters: meters, flagPrefix: flagPrefix, lastEventOf: action, at: now)
        let answers = try connection.execute(factStatements + inputStatements)[...]
        guard let found = try facts(of: userID, from: answers.prefix(factStatements.count)) else { return nil }
        let inputs = try Self.inputs(
            from: answers.dropFirst(factStatements.count), collections: collections, meters: meters,
            lastEventOf: action)
        return (found.facts, found.user, inputs)
    }

    /// The user, its counters and its prompt outcomes, in that order.
    private static func factStatements(
        of userID: String, reading history: PromptHistoryRead
    ) -> [(sql: String, parameters: [PostgresValue?])] {
        let user = [PostgresValue(userID)]
        let outcomes: (String, [PostgresValue?])
        switch history {
        case .all: outcomes = (Self.promptOutcomesSQL, user)
        case .decision(let shownAfter?): outcomes = (Self.decisionOutcomesSQL, user + [PostgresValue(shownAfter)])
        case .decision(nil): outcomes = (Self.decisionOutcomesWithoutWindowSQL, user)
        }
        return [
            ("SELECT * FROM users WHERE id = $1", user),
            ("SELECT action, total FROM counters WHERE user_id = $1", user),
            outcomes,
        ]
    }

    /// The answers to `factStatements`, in the order they were sent.
    private func facts(
        of userID: String, from answers: ArraySlice<PostgresRows>
    ) throws -> (facts: PromptFacts, user: User)? {
        var answers = answers
        guard let row = answers.removeFirst().first else { return nil }
        var counters: [String: Int] = [:]
        for counter in answers.removeFirst() {
            counters[try counter.string("action")] = try counter.int("total")
        }
        let found = try store.user(from: row)
        let facts = PromptFacts(
            userID: userID, userState: found.state, promptState: try row.decode("prompt_state", as: PromptState.self),
            firstSeen: found.createdAt, counters: counters,
            history: try Self.promptOutcomes(from: answers.removeFirst()))
        return (facts, found)
    }

    func promptState(of userID: String, locking: Bool) throws -> PromptState? {
        try connection.execute(
            "SELECT prompt_state FROM users WHERE id = $1\(locking ? " FOR UPDATE" : "")", [PostgresValue(userID)]
        ).first?.decode("prompt_state", as: PromptState.self)
    }

    /// A few thousand users a statement, locked in id order as every
    /// multi-user transaction locks them, so two such transactions never
    /// deadlock.
    func promptStates(of userIDs: [String], locking: Bool) throws -> [String: PromptState] {
        let sorted = userIDs.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var states: [String: PromptState] = [:]
        for batch in PostgresTransaction.batches(of: sorted) {
            for row in try connection.execute(
                """
                SELECT id, prompt_state FROM users WHERE id = ANY($1::text[])
                ORDER BY id COLLATE "C"\(locking ? " FOR UPDATE" : "")
                """,
                [PostgresStore.userIDArray(batch)])
            {
                states[try row.string("id")] = try row.decode("prompt_state", as: PromptState.self)
            }
        }
        return states
    }

    func setPromptState(of userID: String, to state: PromptState) throws {
        try connection.execute(
            "UPDATE users SET prompt_state = $1 WHERE id = $2", [PostgresValue(state.rawValue), PostgresValue(userID)])
    }

    func setPromptStates(_ states: [String: PromptState]) throws {
        let userIDs = states.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for batch in PostgresTransaction.batches(of: userIDs) {
            try connection.execute(
                """
                UPDATE users AS u SET prompt_state = v.state
                FROM unnest($1::text[], $2::text[]) AS v (id, state)
                WHERE u.id = v.id
                """,
                [
                    PostgresStore.userIDArray(batch),
                    PostgresStore.userIDArray(batch.compactMap { states[$0]?.rawValue }),
                ])
        }
    }

    func promptOutcomes(of userID: String) throws -> [PromptHistoryEntry] {
        try Self.promptOutcomes(from: connection.execute(Self.promptOutcomesSQL, [PostgresValue(userID)]))
    }

    private static let promptOutcomesSQL =
        "SELECT context, outcome, at FROM prompt_outcomes WHERE user_id = $1 ORDER BY at COLLATE \"C\", id"

    /// The outcomes a decision reads (`PromptHistoryRead.decision`): each context's latest, the latest
    /// `never`, and the `shown` ones after $2; a row asked for twice is read once.
    private static let decisionOutcomesSQL = decisionOutcomesSQL(
        window: "UNION ALL (SELECT id FROM prompt_outcomes WHERE user_id = $1 AND outcome = 'shown' AND at > $2)")
    private static let decisionOutcomesWithoutWindowSQL = decisionOutcomesSQL(window: "")

    private static func decisionOutcomesSQL(window: String) -> String {
        """
        SELECT context, outcome, at FROM prompt_outcomes WHERE id IN (
            (SELECT DISTINCT ON (context) id FROM prompt_outcomes WHERE user_id = $1
             ORDER BY context, at COLLATE "C" DESC, id DESC)
            UNION ALL
            (SELECT id FROM prompt_outcomes WHERE user_id = $1 AND outcome = 'never'
             ORDER BY at COLLATE "C" DESC, id DESC LIMIT 1)
            \(window)
        )
        ORDER BY at COLLATE "C", id
        """
    }

    private static func promptOutcomes(from rows: PostgresRows) throws -> [PromptHistoryEntry] {
        try rows.map { row in
            PromptHistoryEntry(
                context: try row.string("context"), outcome: try row.decode("outcome", as: PromptOutcome.self),
                at: try row.date("at"))
        }
    }

    func appendPromptOutcome(_ entry: PromptHistoryEntry, of userID: String) throws {
        try connection.execute(
            "INSERT INTO prompt_outcomes (user_id, context, outcome, at) VALUES ($1, $2, $3, $4)",
            [
                PostgresValue(userID), PostgresValue(entry.context), PostgresValue(entry.outcome.rawValue),
                PostgresValue(entry.at),
            ])
    }

    /// One COPY: the rows get their ids in the log's order.
    func appendPromptOutcomes(_ records: [PromptRecord]) throws {
        guard !records.isEmpty else { return }
        try connection.copy(
            "COPY prompt_outcomes (user_id, context, outcome, at) FROM STDIN",
            rows: records.map { record in
                [
                    PostgresValue(record.user), PostgresValue(record.context), PostgresValue(record.outcome.rawValue),
                    PostgresValue(record.at),
                ]
            })
    }

    func userFlags(of userID: String, prefix: String) throws -> [String: Date] {
        let statement = Self.flags(of: userID, prefix: prefix)
        return try Self.flags(in: connection.execute(statement.sql, statement.parameters))
    }

    /// The statement reading the user's flags that start with `prefix`; `flags(in:)` reads its answer.
    private static func flags(of userID: String, prefix: String) -> (sql: String, parameters: [PostgresValue?]) {
        (
            "SELECT flag, set_at FROM user_flags WHERE user_id = $1 AND left(flag, $2::int) = $3",
            [PostgresValue(userID), PostgresValue(prefix.unicodeScalars.count), PostgresValue(prefix)]
        )
    }

    private static func flags(in rows: PostgresRows) throws -> [String: Date] {
        var flags: [String: Date] = [:]
        for row in rows { flags[try row.string("flag")] = try row.date("set_at") }
        return flags
    }

    func raiseUserFlag(_ flag: String, of userID: String, at time: Date) throws {
        try connection.execute(
            """
            INSERT INTO user_flags (user_id, flag, set_at) VALUES ($1, $2, $3)
            ON CONFLICT (user_id, flag) DO UPDATE
            SET set_at = greatest(user_flags.set_at COLLATE "C", excluded.set_at COLLATE "C")
            """,
            [PostgresValue(userID), PostgresValue(flag), PostgresValue(time)])
    }

    func lastEventTime(of userID: String, action: String) throws -> Date? {
        let statement = Self.lastEvent(of: userID, action: action)
        return try connection.execute(statement.sql, statement.parameters).first?.optionalDate("at")
    }

    private static func lastEvent(of userID: String, action: String) -> (sql: String, parameters: [PostgresValue?]) {
        (
            "SELECT max(at COLLATE \"C\") AS at FROM events WHERE user_id = $1 AND action = $2",
            [PostgresValue(userID), PostgresValue(action)]
        )
    }

    /// Every read of `promptInputs` in one round trip; the answers come back in the order they were sent.
    func promptInputs(
        of userID: String, collections: [String], meters: [(meter: Meter, since: Date?)], flagPrefix: String,
        lastEventOf action: String?, at now: Date
    ) throws -> PromptInputs {
        let statements = Self.inputStatements(
            of: userID, collections: collections, meters: meters, flagPrefix: flagPrefix, lastEventOf: action, at: now)
        return try Self.inputs(
            from: connection.execute(statements)[...], collections: collections, meters: meters, lastEventOf: action)
    }

    private static func inputStatements(
        of userID: String, collections: [String], meters: [(meter: Meter, since: Date?)], flagPrefix: String,
        lastEventOf action: String?, at now: Date
    ) -> [(sql: String, parameters: [PostgresValue?])] {
        var statements: [(sql: String, parameters: [PostgresValue?])] = []
        if !collections.isEmpty || !meters.isEmpty {
            statements.append(PostgresStore.planGrantsMayBeInForce(of: userID, at: now))
        }
        statements += collections.map { Self.recordCount(of: userID, in: $0) }
        for (meter, since) in meters {
            statements.append(
                Self.usageTotals(of: userID, meter: meter.name, span: MeterTotalSpan(of: meter), from: since))
            statements.append(Self.grants(of: userID, meter: meter.name))
        }
        statements.append(Self.flags(of: userID, prefix: flagPrefix))
        if let action { statements.append(Self.lastEvent(of: userID, action: action)) }
        return statements
    }

    /// The answers to `inputStatements`, in the order they were sent.
    private static func inputs(
        from answers: ArraySlice<PostgresRows>, collections: [String], meters: [(meter: Meter, since: Date?)],
        lastEventOf action: String?
    ) throws -> PromptInputs {
        var answers = answers
        let needsTier = !collections.isEmpty || !meters.isEmpty
        var inputs = PromptInputs(
            plans: try needsTier ? answers.removeFirst().map(PostgresStore.planGrant) : [], flags: [:],
            lastEventTime: nil)
        for collection in collections { inputs.recordCounts[collection] = try Self.count(in: answers.removeFirst()) }
        for (meter, _) in meters {
            var used = MeterAmount.zero
            for row in answers.removeFirst() { used = used.addingTotal(try Self.usageTotal(row)) }
            inputs.meterUsage[meter.name] = used
            inputs.meterGrants[meter.name] = try answers.removeFirst().map(Self.grantRow)
        }
        inputs.flags = try Self.flags(in: answers.removeFirst())
        if action != nil { inputs.lastEventTime = try answers.removeFirst().first?.optionalDate("at") }
        return inputs
    }

    /// How many users one statement locks or updates.
    private static let batchSize = 2000

    private static func batches(of userIDs: [String]) -> [[String]] {
        stride(from: 0, to: userIDs.count, by: batchSize).map {
            Array(userIDs[$0..<min($0 + batchSize, userIDs.count)])
        }
    }
}
