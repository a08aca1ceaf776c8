import Foundation
import Testing

@testable import GuestModeKit

/// `track --from`'s reading of a log: the quick reader of common lines
/// against the strict parser, and what a log does to the store.
@Suite struct EventLogTests {
    /// Every line the quick reader takes reads as the same event through the
    /// strict parser; the near misses go to the strict parser, which words
    /// them (or reads them, when they are valid).
    @Test(arguments: [
        #"{"user":"g1","action":"app_opened","at":"2026-11-10T10:00:01.000Z","id":"e1"}"#,
        #"{"user":"g1","action":"app_opened"}"#,
        #" { "action" : "app_opened" ,\#t"user":"g 1", "count": 1000000000 , "id":"" } "#,
        #"{"id":"k","count":7,"at":"2026-11-10","user":"~ x","action":"a"}"#,
        #"{"user":"g1","action":"app_opened","at":"2026-11-10T10:00:01+02:00","count":12}"#,
        // The near misses: each is left to the strict parser.
        #"{"user":"g1","action":"app_opened","count":1000000001}"#,
        #"{"user":"g1","action":"app_opened","count":0}"#,
        #"{"user":"g1","action":"app_opened","count":01}"#,
        #"{"user":"g1","action":"app_opened","count":2.0}"#,
        #"{"user":"g1","action":"app_opened","count":2e0}"#,
        #"{"user":"g1","action":"app_opened","count":-2}"#,
        #"{"user":"g1","action":"app_opened","count":"2"}"#,
        #"{"user":"g1","action":"app_opened","count":99999999999999999999}"#,
        #"{"user":"g\u0031","action":"app_opened"}"#,
        #"{"user":"gé","action":"app_opened"}"#,
        #"{"user":"g1","action":"app_opened","user":"g2"}"#,
        #"{"user":"g1","action":"app_opened","at":"2026-02-30T10:00:00Z"}"#,
        #"{"user":"g1","action":"app_opened","at":null}"#,
        #"{"user":"g1","action":"app_opened","props":{"a":"b"}}"#,
        #"{"user":"g1","action":"app_opened","colour":"red"}"#,
        #"{"user":"g1","action":"app_opened",}"#,
        #"{"user":"g1","action":"app_opened"} x"#,
        #"{"user":"g1","action":"app_opened"}}"#,
        #"{"user":"g1"}"#,
        #"{"user":1,"action":"app_opened"}"#,
        #"{}"#,
        "\u{FEFF}{\"user\":\"g1\",\"action\":\"app_opened\"}",
        "{\"user\":\"g\u{1}\",\"action\":\"app_opened\"}",
        #"{"user":"g1","action":"app_opened""#,
        #"{"user":"g1" "action":"app_opened"}"#,
        "   ",
        "",
    ])
    func commonLinesDecodeAsTheStrictParserReadsThem(line: String) {
        let strict = EventLog.decodeStrictly(Substring(line), defaultTime: day(1))
        if let quick = EventLog.decodeCommon(Substring(line), defaultTime: day(1)) {
            guard case .success(let event?) = strict else {
                Issue.record("the quick reader took a line the strict parser refuses: \(line)")
                return
            }
            #expect(quick == event)
        }
        switch (EventLog.decode(Substring(line), defaultTime: day(1)), strict) {
        case (.success(let event), .success(let expected)): #expect(event == expected)
        case (.failure(let failure), .failure(let expected)): #expect(failure.description == expected.description)
        default: Issue.record("decode and the strict parser disagree on \(line)")
        }
    }

    @Test func theQuickReaderTakesTheCommonLines() {
        let line = #"{"user":"g1","action":"app_opened","at":"2026-11-10T10:00:01.250Z","count":3,"id":"e1"}"#
        let event = EventLog.decodeCommon(Substring(line), defaultTime: day(1))
        #expect(
            event
                == TrackedEvent(
                    user: "g1", action: "app_opened", at: Timestamp.parse("2026-11-10T10:00:01.250Z")!, count: 3,
                    idempotencyKey: "e1"))
        #expect(EventLog.decodeCommon(#"{"user":"g1","action":"app_opened"}"#, defaultTime: day(1))?.at == day(1))
    }

    /// A bad line past thousands of good ones, among new users: nothing is
    /// written, not even the users the good lines would create.
    @Test func aBadLineInTheMiddleChangesNothing() throws {
        let engine = try engine("habits")
        var lines = (0..<3_000).map { #"{"user":"n\#($0)","action":"app_opened","id":"e\#($0)"}"# }
        lines.insert(#"{"user":"n1","action":"app_opened","count":0}"#, at: 1_500)
        let log = try write(lines)
        defer { try? FileManager.default.removeItem(at: log) }
        let report = try engine.ingest(
            log: log, creatingUsers: true, skippingInvalid: false, now: day(1), batchSize: 500)
        #expect(!report.isApplied)
        #expect(report.problems.map(\.line) == [1_501])
        #expect(report.applied == 0 && report.usersCreated == 0)
        for user in ["n0", "n1", "n2999"] { #expect(try !engine.containsUser(user)) }
    }

    /// Each new user is created once, however many batches name it, first
    /// and last seen at its first and latest events; every event is kept
    /// once and counted once, and a second run of the log counts nothing.
    @Test func newUsersAreCreatedOnceAndKeysCountOnce() throws {
        let engine = try engine("habits")
        // 300 users, each named by three events spread over the log, and one key repeated within it.
        var lines: [String] = []
        for pass in 0..<3 {
            for user in 0..<300 {
                lines.append(
                    #"{"user":"n\#(user)","action":"app_opened","at":"2026-11-0\#(pass + 1)T10:00:00Z","id":"e\#(pass)-\#(user)"}"#
                )
            }
        }
        lines.append(#"{"user":"n7","action":"app_opened","at":"2026-11-05T10:00:00Z","id":"e0-7"}"#)
        let log = try write(lines)
        defer { try? FileManager.default.removeItem(at: log) }
        let report = try engine.ingest(
            log: log, creatingUsers: true, skippingInvalid: false, now: day(1), batchSize: 250)
        #expect(report.isApplied)
        #expect(report.usersCreated == 300)
        #expect(report.applied == 900 && report.duplicates == 1)
        #expect(try engine.counters(user: "n7") == ["app_opened": 3])
        #expect(try engine.counters(user: "n299") == ["app_opened": 3])
        let events = try engine.events(user: "n7", matching: EventQuery())
        #expect(events.map(\.idempotencyKey) == ["e0-7", "e1-7", "e2-7"])
        let user = try engine.user("n7")
        #expect(Timestamp.format(user.createdAt) == "2026-11-01T10:00:00.000Z")
        #expect(Timestamp.format(user.lastSeenAt) == "2026-11-03T10:00:00.000Z")

        let again = try engine.ingest(
            log: log, creatingUsers: true, skippingInvalid: false, now: day(1), batchSize: 250)
        #expect(again.isApplied && again.applied == 0 && again.duplicates == 901 && again.usersCreated == 0)
        #expect(try engine.counters(user: "n7") == ["app_opened": 3])
    }

    /// A key counted in an earlier batch, given again for another action:
    /// the whole log is refused and nothing of it stays.
    @Test func aReusedKeyRefusesTheWholeLog() throws {
        let engine = try engine("habits")
        var lines = (0..<400).map { #"{"user":"n\#($0 % 4)","action":"app_opened","id":"e\#($0)"}"# }
        lines.append(#"{"user":"n0","action":"habit_created","id":"e0"}"#)
        let log = try write(lines)
        defer { try? FileManager.default.removeItem(at: log) }
        #expect(throws: GuestModeError.self) {
            try engine.ingest(log: log, creatingUsers: true, skippingInvalid: false, now: day(1), batchSize: 50)
        }
        for user in ["n0", "n1", "n2", "n3"] { #expect(try !engine.containsUser(user)) }
    }

    private func write(_ lines: [String]) throws -> URL {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("log-\(UUID().uuidString).ndjson")
        try (lines.joined(separator: "\n") + "\n").write(to: log, atomically: true, encoding: .utf8)
        return log
    }
}
