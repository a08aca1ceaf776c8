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

    /// A purge whose transaction is run again starts from an empty spool,
    /// and one read can be followed by more candidates.
    @Test(arguments: [1 << 20, 64])
    func emptyingForgetsEverythingAndAppendingContinuesAfterARead(memoryLimit: Int) throws {
        let spool = PurgeSpool(memoryLimit: memoryLimit)
        for candidate in Self.sample(500) { try spool.append(candidate) }
        try spool.removeAll()
        #expect(spool.count == 0)
        #expect(try contents(of: spool).isEmpty)
        let first = Self.sample(300, from: 1_000)
        for candidate in first { try spool.append(candidate) }
        #expect(try contents(of: spool) == first)
        let more = Self.sample(300, from: 2_000)
        for candidate in more { try spool.append(candidate) }
        #expect(try contents(of: spool) == first + more)
        #expect(spool.count == 600)
    }
}
