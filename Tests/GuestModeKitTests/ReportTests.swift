import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite struct ReportTests {
    @Test func wilsonIntervalsMatchPublishedValues() {
        // 1 of 2 and 8 of 10 at 95 %, worked by hand from the Wilson score formula.
        let half = Proportion(successes: 1, trials: 2)
        #expect(abs((half.low ?? 0) - 0.0945) < 0.0001 && abs((half.high ?? 0) - 0.9055) < 0.0001)
        let most = Proportion(successes: 8, trials: 10)
        #expect(abs((most.low ?? 0) - 0.4902) < 0.0001 && abs((most.high ?? 0) - 0.9433) < 0.0001)
        let none = Proportion(successes: 0, trials: 0)
        #expect(none.rate == nil && none.low == nil && none.high == nil)
        #expect(Proportion(successes: 0, trials: 5).low == 0)
    }

    @Test func funnelCountsTheCohortAndTakesTheMedian() throws {
        let start = Timestamp.parse("2026-11-01T00:00:00Z")!
        let engine = try GuestMode.inMemory(profileText: try template("recipes"), origin: "recipes.yaml", now: start)
        // Four linked users after 1, 2, 3 and 10 hours, one prompted guest, one guest from before the period.
        func user(_ id: String, created: String, linkedAfter hours: Double? = nil) -> (BackupTable, [String: CellValue])
        {
            var row = BackupRowFixture.user(id)
            row["created_at"] = .text(created)
            row["last_seen_at"] = .text(created)
            if let hours {
                row["state"] = .text("linked")
                row["linked_at"] = .text(Timestamp.format(start.addingTimeInterval(hours * 3600)))
            }
            return (BackupTable.all[0], row)
        }
        func shown(_ id: Int64, to user: String) -> (BackupTable, [String: CellValue]) {
            (
                BackupTable.named("prompt_outcomes") ?? BackupTable.all[0],
                [
                    "id": .integer(id), "user_id": .text(user), "context": .text("reengagement"),
                    "outcome": .text("shown"),
                    "at": .text(Timestamp.format(start)),
                ]
            )
        }
        try BackupRowFixture.load(
            [1.0, 2, 3, 10].enumerated().map { user("linked-\($0)", created: Timestamp.format(start), linkedAfter: $1) }
                + [
                    user("guest", created: Timestamp.format(start)), user("old", created: "2026-10-01T00:00:00.000Z"),
                    shown(1, to: "guest"), shown(2, to: "linked-0"),
                ],
            into: engine.store)
        let funnel = try engine.funnelReport(ReportPeriod(since: start))
        #expect(funnel.guests == 5)
        #expect(funnel.prompted == 2)
        #expect(funnel.linked == 4)
        #expect(abs((funnel.medianHoursToLink ?? 0) - 2.5) < 1e-6)
        #expect(abs((funnel.averageHoursToLink ?? 0) - 4) < 1e-6)
        let percentiles = try #require(funnel.hoursToLinkPercentiles)
        for (value, expected) in [
            (percentiles.p25, 1.75), (percentiles.p50, 2.5), (percentiles.p75, 4.75), (percentiles.p90, 7.9),
        ] {
            #expect(abs(value - expected) < 1e-6)
        }
        #expect(funnel.linkedWithinSevenDays == 4 && funnel.linkedWithinSevenDaysRate == 0.8)
        #expect(try engine.funnelReport(ReportPeriod()).guests == 6)
        let empty = try engine.funnelReport(ReportPeriod(since: start.addingTimeInterval(86_400)))
        #expect(empty.guests == 0 && empty.medianHoursToLink == nil && empty.linkedRate == nil)
        #expect(empty.hoursToLinkPercentiles == nil && empty.linkedWithinSevenDaysRate == nil)
    }
}
