import Foundation
import Testing

@testable import GuestModeKit

@Suite struct PurgeSpoolTests {
    /// Candidates with ids of any length and script, fractional-second times
    /// and record counts.
    static func sample(_ count: Int, from start: Int = 0) -> [PurgeCandidate] {
        (start..<(start + count)).map { index in
            PurgeCandidate(
                id: index % 3 == 0 ? "g\(index)" : "ゲスト-\(index)-with-a-longer-id",
                lastSeenAt: Date(timeIntervalSinceReferenceDate: 815_000_000.123 + Double(index) * 0.001),
                records: index % 7)
        }
    }

    func contents(of spool: PurgeSpool) throws -> [PurgeCandidate] {
        var read: [PurgeCandidate] = []
        try spool.forEach { read.append($0) }
        return read
    }

    /// In memory, spilled after every few candidates, or after each one.
    @Test(arguments: [1 << 20, 64, 1])
    func candidatesComeBackExactlyAndInOrderAsOftenAsAsked(memoryLimit: Int) throws {
        let candidates = Self.sample(2_000)
        let spool = PurgeSpool(memoryLimit: memoryLimit)
        for candidate in candidates { try spool.append(candidate) }
        #expect(spool.count == candidates.count)
        #expect(try contents(of: spool) == candidates)
        #expect(try contents(of: spool) == candidates, "read again for the report after the deletion")
    }

    /// A purge decides its chunks in the order of the ids and reports by last
    /// activity: a spool sorted by activity gives the candidates back by
    /// time, then id byte by byte, however they came and wherever it spilled.
    @Test(arguments: [1 << 20, 256, 1])
    func aSpoolSortedByActivityGivesTheCandidatesBackByTimeThenID(memoryLimit: Int) throws {
        var candidates = Self.sample(3_000)
        // Many share a time (to the millisecond, as the store keeps it).
        for index in candidates.indices where index % 4 == 0 {
            candidates[index].lastSeenAt = candidates[index / 2].lastSeenAt
        }
        var generator = SystemRandomNumberGenerator()
        let spool = PurgeSpool(sortedByActivity: true, memoryLimit: memoryLimit)
        for candidate in candidates.shuffled(using: &generator) { try spool.append(candidate) }
        let expected = candidates.sorted {
            $0.lastSeenAt != $1.lastSeenAt
                ? $0.lastSeenAt < $1.lastSeenAt : Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8))
        }
        #expect(spool.count == expected.count)
        #expect(try contents(of: spool) == expected)
    }
}
