import Foundation
import Testing
@testable import GuestModeKit

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

    @Test func funnelCountsTheCohortAndTakesTheMedianInSQL() throws {
        let start = Timestamp.parse("2026-11-01T00:00:00Z")!
        let engine = try GuestMode.inMemory(profileText: try template("recipes"), origin: "recipes.yaml", now: start)
        // Four linked users after 1, 2, 3 and 10 hours, one prompted guest, one guest from before the period.
        try engine.store.write { db in
            for (index, hours) in [1.0, 2, 3, 10].enumerated() {
                try db.execute(
                    sql: "INSERT INTO users (id, state, created_at, last_seen_at, linked_at) VALUES (?, 'linked', ?, ?, ?)",
                    arguments: [
                        "linked-\(index)", Timestamp.format(start), Timestamp.format(start),
                        Timestamp.format(start.addingTimeInterval(hours * 3600)),
                    ])
            }
            try db.execute(
                sql: "INSERT INTO users (id, created_at, last_seen_at) VALUES ('guest', ?, ?), ('old', '2026-10-01T00:00:00.000Z', '2026-10-01T00:00:00.000Z')",
                arguments: [Timestamp.format(start), Timestamp.format(start)])
            try db.execute(
                sql: "INSERT INTO prompt_outcomes (user_id, context, outcome, at) VALUES ('guest', 'reengagement', 'shown', ?), ('linked-0', 'reengagement', 'shown', ?)",
                arguments: [Timestamp.format(start), Timestamp.format(start)])
        }
        let funnel = try engine.funnelReport(ReportPeriod(since: start))
        #expect(funnel.guests == 5)
        #expect(funnel.prompted == 2)
        #expect(funnel.linked == 4)
        #expect(abs((funnel.medianHoursToLink ?? 0) - 2.5) < 1e-6)
        #expect(abs((funnel.averageHoursToLink ?? 0) - 4) < 1e-6)
        #expect(try engine.funnelReport(ReportPeriod()).guests == 6)
        let empty = try engine.funnelReport(ReportPeriod(since: start.addingTimeInterval(86_400)))
        #expect(empty.guests == 0 && empty.medianHoursToLink == nil && empty.linkedRate == nil)
    }
}
