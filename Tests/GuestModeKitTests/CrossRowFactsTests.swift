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

    /// 3,000 users, each with events of two actions spread over the whole
    /// archive and the counters that sum them: spilled after about every
    /// 40 facts, or kept in memory.
    @Test(arguments: [1 << 20, 2_048])
    func aConsistentArchiveOfManyUsersPasses(memoryLimit: Int) throws {
        let facts = CrossRowFacts(memoryLimit: memoryLimit)
        for pass in 1...3 {
            for user in 0..<3_000 {
                try facts.noteEvent(user: "u\(user)", action: "opened", count: Int64(pass), location: "e\(pass)")
                if pass == 1 {
                    try facts.noteEvent(user: "u\(user)", action: "viewed", count: 5, location: "e")
                    try facts.noteUser("u\(user)", state: user % 2 == 0 ? .linked : .anonymous, location: "u")
                    try facts.noteUnique("name\(user)", in: "credentials.username", message: "m", location: "c")
                }
            }
        }
        for user in stride(from: 0, to: 3_000, by: 2) { try facts.noteIdentity(of: "u\(user)", location: "i") }
        for user in 0..<3_000 {
            try facts.noteCounter(user: "u\(user)", action: "opened", total: 6, location: "c")
            try facts.noteCounter(user: "u\(user)", action: "viewed", total: 5, location: "c")
        }
        #expect(failure(facts) == nil)
    }

    @Test(arguments: [1 << 20, 256])
    func eachKindOfViolationIsFound(memoryLimit: Int) throws {
        func facts(_ note: (CrossRowFacts) throws -> Void) throws -> String? {
            let facts = CrossRowFacts(memoryLimit: memoryLimit)
            for user in 0..<50 { try facts.noteUser("filler\(user)", state: .anonymous, location: "f") }
            try note(facts)
            return failure(facts)
        }
        #expect(
            try facts {
                try $0.noteUnique("7", in: "events.id", message: "events.id 7 twice", location: "line 2")
                try $0.noteUnique("7", in: "events.id", message: "events.id 7 twice", location: "line 9")
            } == "duplicate at line 9: events.id 7 twice")
        #expect(
            try facts {
                try $0.noteEvent(user: "u", action: "a", count: 600, location: "line 1")
                try $0.noteEvent(user: "u", action: "a", count: 600, location: "line 2")
                try $0.noteCounter(user: "u", action: "a", total: 1_000, location: "line 3")
            } == "invalid at line 2: the counts of 'a' events of user 'u' add up past the largest total, 1000")
        #expect(
            try facts { try $0.noteUser("u", state: .linked, location: "line 4") }
                == "inconsistent at line 4: user 'u' is linked but the archive has no identity for them")
        #expect(
            try facts {
                try $0.noteIdentity(of: "u", location: "line 1")
                try $0.noteUser("u", state: .anonymous, location: "line 5")
            } == "inconsistent at line 5: user 'u' is anonymous but the archive has an identity for them")
        #expect(
            try facts {
                try $0.noteEvent(user: "u", action: "a", count: 2, location: "line 1")
                try $0.noteCounter(user: "u", action: "a", total: 3, location: "line 6")
            }
                == "inconsistent at line 6: the counter of 'a' for user 'u' is 3 but the archive's events of that action count 2"
        )
        #expect(
            try facts { try $0.noteEvent(user: "u", action: "a", count: 2, location: "line 7") }
                == "inconsistent at line 7: user 'u' has events of 'a' (2 in all) but the archive has no counter for them"
        )
    }

    /// Of several violations, the one reported is the one the row-by-row
    /// checker met first: a repetition before anything found only at the
    /// end, the earliest repetition of all, then states by user.
    @Test(arguments: [1 << 20, 256])
    func theFirstViolationIsReported(memoryLimit: Int) throws {
        let facts = CrossRowFacts(memoryLimit: memoryLimit)
        try facts.noteUser("b", state: .linked, location: "users 2")
        try facts.noteUser("a", state: .linked, location: "users 1")
        try facts.noteEvent(user: "a", action: "x", count: 1, location: "events 1")
        try facts.noteUnique("late", in: "s", message: "late twice", location: "row 1")
        try facts.noteUnique("early", in: "s", message: "early twice", location: "row 2")
        try facts.noteUnique("early", in: "s", message: "early twice", location: "row 3")
        try facts.noteUnique("late", in: "s", message: "late twice", location: "row 4")
        #expect(failure(facts) == "duplicate at row 3: early twice")

        let states = CrossRowFacts(memoryLimit: memoryLimit)
        try states.noteEvent(user: "a", action: "x", count: 1, location: "events 1")
        try states.noteUser("b", state: .linked, location: "users 2")
        try states.noteUser("a", state: .linked, location: "users 1")
        #expect(
            failure(states) == "inconsistent at users 1: user 'a' is linked but the archive has no identity for them")
    }
}
