import Foundation
import Testing

@testable import GuestModeKit

/// The cross-row checks of an archive import, held in a temporary file:
/// whatever the order of the rows and however the facts spill into sorted
/// runs, each violation is found and the first one is the one reported.
@Suite struct CrossRowFactsTests {
    var wording: CrossRowFacts.Wording {
        CrossRowFacts.Wording(
            invalid: { location, message in GuestModeError(.badRow, "invalid at \(location): \(message)") },
            duplicate: { location, message in
                GuestModeError(.duplicateRow, "duplicate at \(location): \(message)")
            },
            inconsistent: { location, message in
                GuestModeError(.inconsistentRows, "inconsistent at \(location): \(message)")
            },
            maximumTotal: 1_000)
    }

    /// The message `check` throws, or nil when it passes.
    func failure(_ facts: CrossRowFacts) -> String? {
        do {
            try facts.check(wording)
            return nil
        } catch let error as GuestModeError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    private func at(_ line: Int, of entry: String = "x") -> CrossRowFacts.Place {
        CrossRowFacts.Place(entry: entry, line: line)
    }

    /// 3,000 users, each with events of two actions spread over the whole
    /// archive and the counters that sum them: spilled after about every
    /// 40 facts, or kept in memory.
    @Test(arguments: [1 << 20, 2_048])
    func aConsistentArchiveOfManyUsersPasses(memoryLimit: Int) throws {
        let facts = CrossRowFacts(memoryLimit: memoryLimit)
        for pass in 1...3 {
            for user in 0..<3_000 {
                try facts.noteEvent(
                    user: "u\(user)", action: "opened", count: Int64(pass), at: at(user, of: "e\(pass)"))
                if pass == 1 {
                    try facts.noteEvent(user: "u\(user)", action: "viewed", count: 5, at: at(user, of: "e"))
                    try facts.noteUser("u\(user)", state: user % 2 == 0 ? .linked : .anonymous, at: at(user, of: "u"))
                    try facts.noteUnique("name\(user)", in: .usernames, at: at(user, of: "c"))
                }
            }
        }
        for user in stride(from: 0, to: 3_000, by: 2) { try facts.noteIdentity(of: "u\(user)", at: at(user, of: "i")) }
        for user in 0..<3_000 {
            try facts.noteCounter(user: "u\(user)", action: "opened", total: 6, at: at(user, of: "c"))
            try facts.noteCounter(user: "u\(user)", action: "viewed", total: 5, at: at(user, of: "c"))
        }
        #expect(failure(facts) == nil)
    }

    @Test(arguments: [1 << 20, 256])
    func eachKindOfViolationIsFound(memoryLimit: Int) throws {
        func facts(_ note: (CrossRowFacts) throws -> Void) throws -> String? {
            let facts = CrossRowFacts(memoryLimit: memoryLimit)
            for user in 0..<50 { try facts.noteUser("filler\(user)", state: .anonymous, at: at(user, of: "f")) }
            try note(facts)
            return failure(facts)
        }
        #expect(
            try facts {
                try $0.noteUnique("7", in: .rowIDs(table: "events"), at: at(2))
                try $0.noteUnique("7", in: .rowIDs(table: "events"), at: at(9))
            } == "duplicate at line 9 of x: events.id 7 appears twice in the archive")
        #expect(
            try facts {
                try $0.noteUnique("email\0a@b.c", in: .identities, at: at(2))
                try $0.noteUnique("email\0a@b.c", in: .identities, at: at(3))
            } == "duplicate at line 3 of x: the identity email/a@b.c appears twice in the archive")
        #expect(
            try facts {
                try $0.noteUnique("u", in: .credentialOwners, at: at(2))
                try $0.noteUnique("u", in: .credentialOwners, at: at(4))
            } == "duplicate at line 4 of x: user 'u' has two credentials rows in the archive")
        #expect(
            try facts {
                try $0.noteUnique("ann", in: .usernames, at: at(2))
                try $0.noteUnique("ann", in: .usernames, at: at(5))
            } == "duplicate at line 5 of x: the username 'ann' appears twice in the archive")
        #expect(
            try facts {
                try $0.noteEvent(user: "u", action: "a", count: 600, at: at(1))
                try $0.noteEvent(user: "u", action: "a", count: 600, at: at(2))
                try $0.noteCounter(user: "u", action: "a", total: 1_000, at: at(3))
            } == "invalid at line 2 of x: the counts of 'a' events of user 'u' add up past the largest total, 1000")
        // A repeated counter, even one whose total disagrees with the events too: PostgreSQL builds the key that
        // would refuse it only after the rows of a restore.
        #expect(
            try facts {
                try $0.noteEvent(user: "u", action: "a", count: 2, at: at(1))
                try $0.noteCounter(user: "u", action: "a", total: 2, at: at(3))
                try $0.noteCounter(user: "u", action: "a", total: 5, at: at(4))
            } == "duplicate at line 4 of x: user 'u' has two counters rows of 'a' in the archive")
        #expect(
            try facts { try $0.noteUser("u", state: .linked, at: at(4)) }
                == "inconsistent at line 4 of x: user 'u' is linked but the archive has no identity for them")
        #expect(
            try facts {
                try $0.noteIdentity(of: "u", at: at(1))
                try $0.noteUser("u", state: .anonymous, at: at(5))
            } == "inconsistent at line 5 of x: user 'u' is anonymous but the archive has an identity for them")
        #expect(
            try facts {
                try $0.noteEvent(user: "u", action: "a", count: 2, at: at(1))
                try $0.noteCounter(user: "u", action: "a", total: 3, at: at(6))
            }
                == "inconsistent at line 6 of x: the counter of 'a' for user 'u' is 3 but the archive's events of that action count 2"
        )
        #expect(
            try facts { try $0.noteEvent(user: "u", action: "a", count: 2, at: at(7)) }
                == "inconsistent at line 7 of x: user 'u' has events of 'a' (2 in all) but the archive has no counter for them"
        )
    }

    /// Surrogate ids are noted at a fixed width: ids of different lengths
    /// never meet, a repeated one is named as the archive wrote it, and the
    /// earliest repetition is the one reported.
    @Test(arguments: [1 << 20, 512])
    func rowIDsAreComparedAsNumbers(memoryLimit: Int) throws {
        let distinct = CrossRowFacts(memoryLimit: memoryLimit)
        for id in 1...3_000 { try distinct.noteRowID(Int64(id), of: "events", at: at(id)) }
        try distinct.noteRowID(Int64.max, of: "events", at: at(3_001))
        try distinct.noteRowID(7, of: "counters", at: at(1, of: "y"))
        #expect(failure(distinct) == nil)

        let repeated = CrossRowFacts(memoryLimit: memoryLimit)
        for id in 1...3_000 { try repeated.noteRowID(Int64(id), of: "events", at: at(id)) }
        try repeated.noteRowID(1_234, of: "events", at: at(3_001))
        try repeated.noteRowID(10, of: "events", at: at(3_002))
        #expect(failure(repeated) == "duplicate at line 3001 of x: events.id 1234 appears twice in the archive")
    }

    /// Ids that rise are kept as runs rather than noted one by one. Whatever
    /// the order (rising with gaps, falling, more gaps than the runs may
    /// hold, two tables interleaved), the repetition reported is the first
    /// in the archive, as a set of every id seen would find it. Seeded, so
    /// a failure is found again.
    @Test(arguments: [(1 << 20, 4_096), (512, 3)])
    func risingIDsStillFindTheFirstRepetition(memoryLimit: Int, runLimit: Int) throws {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int64) -> Int64 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int64((seed >> 33) % UInt64(bound))
        }
        for round in 0..<200 {
            let facts = CrossRowFacts(memoryLimit: memoryLimit, risingRunLimit: runLimit)
            var seen: [String: Set<Int64>] = [:]
            var expected: String?
            var last: [String: Int64] = ["events": 0, "counters": 0]
            for line in 1...(20 + Int(next(200))) {
                let table = next(4) == 0 ? "counters" : "events"
                // Mostly the next id, sometimes a gap, now and then a fall that may repeat one.
                let id: Int64 =
                    switch next(10) {
                    case 0: 1 + next(max(1, last[table]!))
                    case 1, 2: last[table]! + 2 + next(5)
                    default: last[table]! + 1
                    }
                last[table] = max(last[table]!, id)
                if expected == nil, !seen[table, default: []].insert(id).inserted {
                    expected = "duplicate at line \(line) of x: \(table).id \(id) appears twice in the archive"
                }
                try facts.noteRowID(id, of: table, at: at(line))
                #expect(facts.keptRisingRuns <= 2 * runLimit)
            }
            #expect(failure(facts) == expected, "round \(round)")
        }
    }

    /// A repetition of a surrogate id and one of another kind: the earlier
    /// in the archive is reported, though the ids were kept as runs until
    /// the repeated one came.
    @Test(arguments: [1 << 20, 512])
    func aRepeatedIDAndAnotherRepetitionAreOrderedAsTheArchiveIs(memoryLimit: Int) throws {
        for idFirst in [true, false] {
            let facts = CrossRowFacts(memoryLimit: memoryLimit)
            try facts.noteUnique("ann", in: .usernames, at: at(1, of: "c"))
            for id in 1...100 { try facts.noteRowID(Int64(id), of: "events", at: at(id)) }
            try facts.noteUnique(idFirst ? "bob" : "ann", in: .usernames, at: at(2, of: "c"))
            try facts.noteRowID(50, of: "events", at: at(101))
            try facts.noteUnique("ann", in: .usernames, at: at(3, of: "c"))
            #expect(
                failure(facts)
                    == (idFirst
                        ? "duplicate at line 101 of x: events.id 50 appears twice in the archive"
                        : "duplicate at line 2 of c: the username 'ann' appears twice in the archive"))
        }
    }

    /// Of several violations, the one reported is the one the row-by-row
    /// checker met first: a repetition before anything found only at the
    /// end, the earliest repetition of all, then states by user.
    @Test(arguments: [1 << 20, 256])
    func theFirstViolationIsReported(memoryLimit: Int) throws {
        let facts = CrossRowFacts(memoryLimit: memoryLimit)
        try facts.noteUser("b", state: .linked, at: at(2, of: "users"))
        try facts.noteUser("a", state: .linked, at: at(1, of: "users"))
        try facts.noteEvent(user: "a", action: "x", count: 1, at: at(1, of: "events"))
        try facts.noteUnique("late", in: .usernames, at: at(1))
        try facts.noteUnique("early", in: .usernames, at: at(2))
        try facts.noteUnique("early", in: .usernames, at: at(3))
        try facts.noteUnique("late", in: .usernames, at: at(4))
        #expect(failure(facts) == "duplicate at line 3 of x: the username 'early' appears twice in the archive")

        let states = CrossRowFacts(memoryLimit: memoryLimit)
        try states.noteEvent(user: "a", action: "x", count: 1, at: at(1, of: "events"))
        try states.noteUser("b", state: .linked, at: at(2, of: "users"))
        try states.noteUser("a", state: .linked, at: at(1, of: "users"))
        #expect(
            failure(states)
                == "inconsistent at line 1 of users: user 'a' is linked but the archive has no identity for them")
    }

    /// Counters that disagree with their events are reported in archive
    /// order: by entry, as the archive gave them, then by line as a number
    /// ("line 9" before "line 10", which text order would put first).
    @Test(arguments: [1 << 20, 256])
    func theEarliestMismatchedCounterIsReported(memoryLimit: Int) throws {
        let facts = CrossRowFacts(memoryLimit: memoryLimit)
        try facts.noteEvent(user: "a", action: "x", count: 1, at: at(1, of: "tables/events.ndjson"))
        try facts.noteEvent(user: "b", action: "x", count: 1, at: at(2, of: "tables/events.ndjson"))
        try facts.noteEvent(user: "c", action: "x", count: 1, at: at(3, of: "tables/events.ndjson"))
        try facts.noteCounter(user: "a", action: "x", total: 5, at: at(10, of: "tables/counters.ndjson"))
        try facts.noteCounter(user: "b", action: "x", total: 5, at: at(9, of: "tables/counters.ndjson"))
        try facts.noteCounter(user: "c", action: "x", total: 5, at: at(1, of: "users/c/counters.ndjson"))
        #expect(
            failure(facts)
                == "inconsistent at line 9 of tables/counters.ndjson: the counter of 'x' for user 'b' is 5 but the archive's events of that action count 1"
        )
    }
}
