import Foundation
import Testing

@testable import GuestModeKit

/// A sorted spool gives its records back in key order, records of one key in
/// the order they were appended, however they arrived and however often they
/// spilled; records that arrive in order make one run.
@Suite struct RecordSpoolTests {
    /// Appends `keys` (each record's second field is its place in `keys`)
    /// and reads them back as (key, place) pairs.
    private func roundTrip(_ keys: [String], runLimit: Int) throws -> (read: [(String, Int)], runs: Int) {
        let spool = RecordSpool(
            holding: "test records", fileTag: "test", memoryLimit: runLimit, sorted: true, runLimit: runLimit)
        for (place, key) in keys.enumerated() {
            try spool.append { writer in
                writer.put(key)
                writer.put64(UInt64(place))
            }
        }
        var read: [(String, Int)] = []
        try spool.forEach { reader in read.append((try reader.string(), Int(try reader.uint64()))) }
        return (read, spool.runs.count)
    }

    /// What the spool must give back: byte order of the keys, then the order of appending.
    private func expected(_ keys: [String]) -> [(String, Int)] {
        keys.enumerated().map { ($1, $0) }.sorted { left, right in
            left.0 == right.0 ? left.1 < right.1 : left.0.utf8.lexicographicallyPrecedes(right.0.utf8)
        }
    }

    @Test("keys in order, with repeats across spills, make one run and come back as appended")
    func keysInOrderMakeOneRun() throws {
        // Each key five times, so a key's records straddle the spills.
        let keys = (0..<4_000).flatMap { number in Array(repeating: String(format: "k%06d", number), count: 5) }
        let (read, runs) = try roundTrip(keys, runLimit: 4 << 10)
        #expect(runs == 1)
        #expect(read.elementsEqual(expected(keys)) { $0.0 == $1.0 && $0.1 == $1.1 })
    }

    @Test(
        "keys out of order, in order by stretches, or in order then starting over, come back sorted and stable",
        arguments: [0, 1, 2])
    func keysInAnyOrderComeBackSorted(shape: Int) throws {
        var generator = SplitMix64(state: 7 + UInt64(shape))
        let keys: [String]
        switch shape {
        case 0: keys = (0..<20_000).map { _ in "k\(Int.random(in: 0..<3_000, using: &generator))" }
        // Ascending stretches that overlap each other, as ids of several digit counts in numeric order do.
        case 1: keys = (1..<20_000).map { "k\($0)" }
        // Two passes in order: the second starts a run of its own, then goes on in it.
        default:
            let pass = (0..<8_000).map { String(format: "k%05d", $0) }
            keys = pass + pass
        }
        let (read, runs) = try roundTrip(keys, runLimit: 4 << 10)
        #expect(read.elementsEqual(expected(keys)) { $0.0 == $1.0 && $0.1 == $1.1 })
        // About 80 spills; the second pass starts over once, and the spill that holds both passes' ends once more.
        if shape == 2 { #expect(runs <= 3) }
    }
    /// The records are written into one block that grows: records larger than the block as reserved, between
    /// small ones, in a spool that keeps them in memory and in one that spills them, come back byte for byte.
    @Test("records larger than the block grow it and come back whole", arguments: [false, true])
    func recordsLargerThanTheBlock(sorted: Bool) throws {
        let spool = RecordSpool(
            holding: "test records", fileTag: "test", memoryLimit: 4 << 10, sorted: sorted, runLimit: 4 << 10)
        var generator = SplitMix64(state: 11)
        let texts = (0..<40).map { index in
            let length = index % 7 == 3 ? 150_000 + index : Int.random(in: 0..<300, using: &generator)
            return String(format: "t%03d", index) + String(repeating: "é", count: length / 2)
        }
        for (index, text) in texts.enumerated() {
            try spool.append { writer in
                writer.put(text)
                writer.byte(UInt8(index))
                writer.put32(UInt32(index) &* 2_654_435_761)
                writer.put64(UInt64(index) << 40 | 0xA5)
            }
        }
        var read: [(String, UInt8, UInt32, UInt64)] = []
        try spool.forEach { reader in
            read.append((try reader.string(), try reader.byte(), try reader.uint32(), try reader.uint64()))
        }
        #expect(read.count == texts.count)
        for (text, byte, number, wide) in read {
            let index = Int(byte)
            #expect(
                text == texts[index] && number == UInt32(index) &* 2_654_435_761 && wide == UInt64(index) << 40 | 0xA5)
        }
    }
}
