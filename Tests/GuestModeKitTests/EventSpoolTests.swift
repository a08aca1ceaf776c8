import Foundation
import Testing

@testable import GuestModeKit

@Suite struct EventSpoolTests {
    /// Events with every kind of field: no key, a key, properties of both
    /// kinds, non-ASCII text, fractional-second times.
    static func sample(_ count: Int) -> [TrackedEvent] {
        var events: [TrackedEvent] = []
        for index in 0..<count {
            let user: String = index % 3 == 0 ? "u\(index)" : "ユーザー-\(index)-with-a-long-enough-name"
            let action: String = index % 2 == 0 ? "app_opened" : "recipe_created"
            let seconds: Double = 815_000_000.123 + Double(index) * 0.001
            let key: String? = index % 4 == 0 ? nil : "key-\(index)"
            var properties: [String: EventProperty] = [:]
            if index % 3 == 1 {
                properties["source"] = .string("caméra \"quoted\"")
                properties["n"] = .number("3.50")
            }
            events.append(
                TrackedEvent(
                    user: user, action: action, at: Date(timeIntervalSinceReferenceDate: seconds),
                    count: index % 5 + 1, idempotencyKey: key, properties: properties))
        }
        return events
    }

    @Test(arguments: [1 << 20, 64, 1])
    func eventsComeBackExactlyAndInOrder(memoryLimit: Int) throws {
        let events = Self.sample(2_000)
        let spool = EventSpool(memoryLimit: memoryLimit)
        for event in events { try spool.append(event) }
        #expect(spool.count == events.count)
        var read: [TrackedEvent] = []
        try spool.forEach { read.append($0) }
        #expect(read == events)
    }

    @Test func anEmptySpoolHasNothing() throws {
        let spool = EventSpool()
        var seen = 0
        try spool.forEach { _ in seen += 1 }
        #expect(seen == 0)
    }

    /// More than the in-memory part: the applying pass reads the spilled
    /// events back, so every valid line counts once.
    @Test func ingestOfALogLargerThanTheSpoolsMemory() throws {
        let engine = try engine("habits")
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString).ndjson")
        defer { try? FileManager.default.removeItem(at: log) }
        // About 90 bytes a spooled event: 50,000 of them pass the 1 MiB kept in memory.
        let lines = (0..<50_000).map {
            #"{"user":"u\#($0 % 7)","action":"app_opened","id":"e\#($0)","props":{"source":"camera-roll-import"}}"#
        }
        try (lines.joined(separator: "\n") + "\n").write(to: log, atomically: true, encoding: .utf8)
        let report = try engine.ingest(log: log, creatingUsers: true, skippingInvalid: false, now: day(1))
        #expect(report.isApplied)
        #expect(report.applied == 50_000)
        #expect(report.usersCreated == 7)
        #expect(try engine.counters(user: "u0") == ["app_opened": 7_143])
        let again = try engine.ingest(log: log, creatingUsers: true, skippingInvalid: false, now: day(1))
        #expect(again.applied == 0 && again.duplicates == 50_000)
    }
}
