import Foundation

/// Purge candidates kept between a purge's decisions and its report, so the
/// report can follow the commit, in a `RecordSpool`: any number of
/// candidates takes constant memory.
final class PurgeSpool {
    private let spool: RecordSpool

    init(memoryLimit: Int = 1 << 20) {
        spool = RecordSpool(holding: "the guests being purged", fileTag: "purge", memoryLimit: memoryLimit)
    }

    var count: Int { spool.count }

    /// Appends one candidate.
    func append(_ candidate: PurgeCandidate) throws {
        try spool.append { writer in
            writer.put64(candidate.lastSeenAt.timeIntervalSinceReferenceDate.bitPattern)
            writer.put64(UInt64(bitPattern: Int64(candidate.records)))
            writer.put(candidate.id)
        }
    }

    /// Forgets every candidate.
    func removeAll() throws {
        try spool.removeAll()
    }

    /// Calls `body` with each candidate, in the order they were appended.
    func forEach(_ body: (PurgeCandidate) throws -> Void) throws {
        try spool.forEach { reader in
            let lastSeen = try reader.uint64()
            let records = try reader.uint64()
            let id = try reader.string()
            try body(
                PurgeCandidate(
                    id: id, lastSeenAt: Date(timeIntervalSinceReferenceDate: Double(bitPattern: lastSeen)),
                    records: Int(Int64(bitPattern: records))))
        }
    }
}
