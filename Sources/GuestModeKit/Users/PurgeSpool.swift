import Foundation

/// Purge candidates kept between a purge's decisions and its report, so the
/// report can follow the commit, in a `RecordSpool`: any number of
/// candidates takes constant memory.
final class PurgeSpool {
    private let spool: RecordSpool

    /// Made `sortedByActivity`, the spool gives its candidates back by last
    /// activity, then id (byte order), whatever order they came in; else in
    /// the order they were appended.
    init(sortedByActivity: Bool = false, memoryLimit: Int = 1 << 20) {
        self.isSorted = sortedByActivity
        spool = RecordSpool(
            holding: "the guests being purged", fileTag: "purge", memoryLimit: memoryLimit,
            sorted: sortedByActivity, runLimit: memoryLimit)
    }

    private let isSorted: Bool

    var count: Int { spool.count }

    /// Appends one candidate.
    func append(_ candidate: PurgeCandidate) throws {
        try spool.append { writer in
            // The sort key: fixed-width timestamps order as the times do, then the id.
            if isSorted { writer.put(Timestamp.format(candidate.lastSeenAt) + candidate.id) }
            writer.put64(candidate.lastSeenAt.timeIntervalSinceReferenceDate.bitPattern)
            writer.put64(UInt64(bitPattern: Int64(candidate.records)))
            writer.put(candidate.id)
        }
    }

    /// Calls `body` with each candidate, in the spool's order.
    func forEach(_ body: (PurgeCandidate) throws -> Void) throws {
        try spool.forEach { reader in
            if isSorted { _ = try reader.string() }
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
