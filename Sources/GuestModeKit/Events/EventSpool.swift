import Foundation

/// The decoded events of an event log, kept between `ingest`'s validating
/// pass and its applying pass so each line is parsed once, in a sorted
/// `RecordSpool`: a log of any size is spooled in constant memory, and given
/// back user by user (ids in byte order), each user's events in the log's
/// order. Applied in that order, a log that touches millions of users writes
/// each table and index from one end to the other instead of all over it
/// once per batch, which is what keeps a big store's ingest linear.
final class EventSpool {
    private let spool: RecordSpool

    /// 1 MiB in memory for the applying pass, which runs beside SQLite's
    /// bulk page cache, so the whole process stays under 64 MB; runs of
    /// `runLimit` bytes are sorted while the log is validated, before that
    /// cache is used.
    init(memoryLimit: Int = 1 << 20, runLimit: Int = 8 << 20) {
        spool = RecordSpool(
            holding: "the events being ingested", fileTag: "ingest", memoryLimit: memoryLimit, sorted: true,
            runLimit: runLimit)
    }

    var count: Int { spool.count }

    /// Appends one event. The user goes first: the spool sorts by it.
    func append(_ event: TrackedEvent) throws {
        try spool.append { writer in
            writer.put(event.user)
            writer.put(event.action)
            writer.put64(event.at.timeIntervalSinceReferenceDate.bitPattern)
            writer.put64(UInt64(bitPattern: Int64(event.count)))
            if let key = event.idempotencyKey {
                writer.byte(1)
                writer.put(key)
            } else {
                writer.byte(0)
            }
            writer.put32(UInt32(truncatingIfNeeded: event.properties.count))
            for (name, property) in event.properties {
                writer.put(name)
                switch property {
                case .string(let text):
                    writer.byte(0)
                    writer.put(text)
                case .number(let text):
                    writer.byte(1)
                    writer.put(text)
                }
            }
        }
    }

    /// Calls `body` with each event, by user (ids in byte order), each user's
    /// events in the order they were appended.
    func forEach(_ body: (TrackedEvent) throws -> Void) throws {
        try spool.forEach { reader in
            let user = try reader.string()
            let action = try reader.string()
            let at = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.uint64()))
            let count = Int(Int64(bitPattern: try reader.uint64()))
            let key: String? = try reader.byte() == 1 ? try reader.string() : nil
            let propertyCount = Int(try reader.uint32())
            var properties: [String: EventProperty] = [:]
            if propertyCount > 0 {
                properties.reserveCapacity(propertyCount)
                for _ in 0..<propertyCount {
                    let name = try reader.string()
                    let isNumber = try reader.byte() == 1
                    let text = try reader.string()
                    properties[name] = isNumber ? .number(text) : .string(text)
                }
            }
            try body(
                TrackedEvent(
                    user: user, action: action, at: at, count: count, idempotencyKey: key, properties: properties))
        }
    }
}
