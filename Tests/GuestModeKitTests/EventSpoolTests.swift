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

    /// The events in the order the spool gives them back: by user, in byte
    /// order, each user's in the order they came.
    static func byUser(_ events: [TrackedEvent]) -> [TrackedEvent] {
        events.enumerated().sorted { left, right in
            let (leftUser, rightUser) = (Array(left.element.user.utf8), Array(right.element.user.utf8))
            return leftUser != rightUser ? leftUser.lexicographicallyPrecedes(rightUser) : left.offset < right.offset
        }.map(\.element)
    }

    /// Kept in memory, in one sorted run, or in runs of a few events each
    /// (merged from the file): the same events, in the same order.
    @Test(arguments: [(1 << 20, 8 << 20), (64, 1 << 20), (64, 4 << 10), (1, 1)])
    func eventsComeBackExactlyByUserAndInOrder(memoryLimit: Int, runLimit: Int) throws {
        // Users repeat across the log, so one user's events fall in several runs.
        let events = Self.sample(2_000) + Self.sample(700)
        let spool = EventSpool(memoryLimit: memoryLimit, runLimit: runLimit)
        for event in events { try spool.append(event) }
        #expect(spool.count == events.count)
        var read: [TrackedEvent] = []
        try spool.forEach { read.append($0) }
        #expect(read == Self.byUser(events))
        // Read again (a transaction run again): the same.
        var again: [TrackedEvent] = []
        try spool.forEach { again.append($0) }
        #expect(again == read)
    }

    /// More runs than one merge takes (`RecordSpool.maximumMergeWidth`), even
    /// after a first pass has merged them in groups: the runs are merged into
    /// longer ones until one merge can take them, and the order is the same.
    @Test func moreRunsThanOneMergeTakesTwiceOverComeBackInOrder() throws {
        let width = RecordSpool.maximumMergeWidth
        // One event a run: more runs than a first pass leaves within one merge.
        let events = Self.sample(width * width + 3 * width) + Self.sample(width)
        let spool = EventSpool(memoryLimit: 1, runLimit: 1)
        for event in events { try spool.append(event) }
        var read: [TrackedEvent] = []
        try spool.forEach { read.append($0) }
        #expect(read == Self.byUser(events))
        var again: [TrackedEvent] = []
        try spool.forEach { again.append($0) }
        #expect(again == read, "read again after the passes that lengthened the runs")
    }

    /// A user's events keep the log's order even when every one of them
    /// lands in a run of its own, and a prefix sorts before a longer id.
    @Test func oneUsersEventsKeepTheirOrderAcrossRuns() throws {
        let users = ["b", "a", "ab", "a", "é", "b", "a", "", "ab"]
        let events = users.enumerated().map { index, user in
            TrackedEvent(
                user: user, action: "app_opened", at: Date(timeIntervalSinceReferenceDate: 0), count: index + 1)
        }
        let spool = EventSpool(memoryLimit: 1, runLimit: 1)
        for event in events { try spool.append(event) }
        var read: [(String, Int)] = []
        try spool.forEach { read.append(($0.user, $0.count)) }
        #expect(read.map(\.0) == ["", "a", "a", "a", "ab", "ab", "b", "b", "é"])
        #expect(read.map(\.1) == [8, 2, 4, 7, 3, 9, 1, 6, 5])
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
