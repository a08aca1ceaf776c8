import Foundation

/// Work the app does not wait on, kept until the server has it: an event, a meter use that already
/// happened, a backup. Each carries the Idempotency-Key it was given when queued, and every attempt sends that
/// key, so the server records it once however often a lost answer makes the client send it again.
public struct QueuedWork: Codable, Sendable, Equatable, Identifiable {
    public enum Kind: Codable, Sendable, Equatable {
        /// `POST /v1/users/{user}/events`.
        case event(action: String, count: Int?, props: [String: String]?)
        /// `POST /v1/users/{user}/meters/{meter}/use` with `overage: allow`: the use happened already,
        /// it is recorded in full even past the allowance.
        case meterUse(meter: String, amount: Double)
        /// `POST /v1/users/{user}/backups`: the server backs the user up and keeps it.
        case backup
    }

    /// The Idempotency-Key of every attempt.
    public var id: String
    public var userID: String
    public var kind: Kind
    public var queuedAt: Date
}

/// The durable queue: one JSON file, replaced atomically and fsynced on every change (see
/// `DurableFile`), holding at most `capacity` items; one more is refused (`OfflineQueueFull`), so a
/// client offline for a long time never fills the disk. The owning actor drains it in order.
struct OfflineQueue {
    let url: URL
    let capacity: Int
    private(set) var items: [QueuedWork]

    init(url: URL, capacity: Int) throws {
        self.url = url
        self.capacity = capacity
        if let data = FileManager.default.contents(atPath: url.path), !data.isEmpty {
            items = try JSONCoding.decoder.decode([QueuedWork].self, from: data)
        } else {
            items = []
        }
    }

    mutating func append(_ work: QueuedWork) throws {
        guard items.count < capacity else { throw OfflineQueueFull(capacity: capacity) }
        try persist(items + [work])
        items.append(work)
    }

    /// Removes the first item, which the server has (or refused for good).
    mutating func removeFirst(_ id: String) throws {
        guard items.first?.id == id else { return }
        let rest = Array(items.dropFirst())
        try persist(rest)
        items = rest
    }

    private func persist(_ items: [QueuedWork]) throws {
        try DurableFile.replace(url, with: JSONCoding.encoder.encode(items))
    }
}

/// The offline queue holds `capacity` items already; nothing was added.
public struct OfflineQueueFull: Error, Sendable, CustomStringConvertible {
    public var capacity: Int
    public var description: String { "the offline queue holds \(capacity) items already" }
}
