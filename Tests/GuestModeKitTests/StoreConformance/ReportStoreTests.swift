import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

private typealias Fixture = BackupRowFixture

private struct Abort: Error {}

private func table(_ name: String) -> BackupTable {
    BackupTable.named(name) ?? BackupTable(name: name, ownerColumn: "user_id")
}

/// Two linked users (after 1 and 3 hours), a prompted guest, all created on
/// day 1, and a guest from October; outcomes, assignments and meter use.
private func loadActivity(into store: any GuestStore) throws {
    let october: CellValue = .text("2026-10-01T00:00:00.000Z")
    var old = Fixture.user("old")
    old["created_at"] = october
    old["last_seen_at"] = october
    var authenticated = Fixture.user("g2")
    authenticated["prompt_state"] = .text("authenticated")
    func outcome(
        _ id: Int64, _ user: String, _ context: String, _ outcome: String, day: Int
    ) -> (BackupTable, Fixture.Row) {
        (
            table("prompt_outcomes"),
            [
                "id": .integer(id), "user_id": .text(user), "context": .text(context), "outcome": .text(outcome),
                "at": Fixture.time(day),
            ]
        )
    }
    func assignment(_ user: String, _ variant: String, day: Int = 1) -> (BackupTable, Fixture.Row) {
        (
            table("experiment_assignments"),
            [
                "user_id": .text(user), "experiment": .text("paywall"), "variant": .text(variant),
                "assigned_at": Fixture.time(day),
            ]
        )
    }
    func use(_ id: Int64, _ user: String, _ amount: Double, day: Int = 2) -> (BackupTable, Fixture.Row) {
        (
            table("meter_usage"),
            [
                "id": .integer(id), "user_id": .text(user), "meter": .text("minutes"), "amount": .real(amount),
                "at": Fixture.time(day), "idempotency_key": .null,
            ]
        )
    }
    try Fixture.load(
        [
            (table("users"), Fixture.user("l1", state: "linked", linkedAt: Fixture.time(1, hour: 13))),
            (table("users"), Fixture.user("l2", state: "linked", linkedAt: Fixture.time(1, hour: 15))),
            (table("users"), Fixture.user("g")),
            (table("users"), authenticated),
            (table("users"), old),
            outcome(1, "g", "guest_cap_reached", "shown", day: 2),
            outcome(2, "l1", "guest_cap_reached", "shown", day: 2),
            outcome(3, "l1", "guest_cap_reached", "completed", day: 2),
            outcome(4, "g", "retired_context", "dismissed", day: 3),
            outcome(5, "old", "guest_cap_reached", "never", day: 20),
            assignment("l1", "a"), assignment("g", "a"), assignment("l2", "b"), assignment("g2", "b"),
            assignment("old", "b", day: 20),
            use(1, "l1", 1.5), use(2, "l1", 2.5), use(3, "g", 1), use(4, "old", 7, day: 20),
            (
                table("meter_warnings"),
                [
                    "user_id": .text("l1"), "meter": .text("minutes"), "period_start": Fixture.time(1),
                    "percent": .real(80), "level": .text("warning"), "fired_at": Fixture.time(2),
                ]
            ),
        ],
        into: store)
}

private let november = ReportPeriod(since: day(1, hour: 0), until: day(15))

@Suite struct ReportStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func funnelCountsTheCohortTheLinkedAndTheirHoursToLink(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        #expect(
            try store.funnelCounts(in: ReportPeriod())
                == FunnelCounts(guests: 0, prompted: 0, linked: 0, averageHoursToLink: nil, medianHoursToLink: nil))
        try loadActivity(into: store)
        let cohort = try store.funnelCounts(in: november)
        #expect(cohort.guests == 4 && cohort.prompted == 2 && cohort.linked == 2)
        #expect(abs((cohort.averageHoursToLink ?? 0) - 2) < 1e-6)
        #expect(abs((cohort.medianHoursToLink ?? 0) - 2) < 1e-6)
        let everyone = try store.funnelCounts(in: ReportPeriod())
        #expect(everyone.guests == 5 && everyone.prompted == 3)
        #expect(try store.funnelCounts(in: ReportPeriod(since: day(2))).guests == 0)
    }

    @Test(arguments: StoreBackend.allCases)
    func promptOutcomesAreCountedPerContextInThePeriod(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        #expect(try store.promptOutcomeCounts(in: ReportPeriod()).isEmpty)
        try loadActivity(into: store)
        let counts = try store.promptOutcomeCounts(in: november).sorted { $0.context < $1.context }
        #expect(
            counts == [
                PromptContextReport(context: "guest_cap_reached", shown: 2, completed: 1),
                PromptContextReport(context: "retired_context", dismissed: 1),
            ])
        let all = try store.promptOutcomeCounts(in: ReportPeriod())
        #expect(all.first { $0.context == "guest_cap_reached" }?.never == 1)
    }

    @Test(arguments: StoreBackend.allCases)
    func variantsCountTheirUsersAndConversions(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        #expect(try store.variantConversionCounts(in: ReportPeriod()).isEmpty)
        try loadActivity(into: store)
        let counts = try store.variantConversionCounts(in: november).sorted { $0.variant < $1.variant }
        // Linked users and users who completed sign-in (prompt state authenticated) convert.
        #expect(
            counts == [
                VariantCounts(experiment: "paywall", variant: "a", users: 2, conversions: 1),
                VariantCounts(experiment: "paywall", variant: "b", users: 2, conversions: 2),
            ])
        let all = try store.variantConversionCounts(in: ReportPeriod())
        #expect(all.first { $0.variant == "b" }?.users == 3)
    }

    @Test(arguments: StoreBackend.allCases)
    func meterUsageIsCountedPerMeterNamed(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        try loadActivity(into: store)
        let counts = try store.meterUsageCounts(of: ["minutes", "tokens"], in: november)
        #expect(counts["minutes"] == MeterUsageCounts(users: 2, uses: 3, amount: 5, warnedUsers: 1))
        #expect(counts["tokens"] == MeterUsageCounts(users: 0, uses: 0, amount: 0, warnedUsers: 0))
        #expect(try store.meterUsageCounts(of: ["minutes"], in: ReportPeriod())["minutes"]?.amount == 12)
        #expect(try store.meterUsageCounts(of: [], in: november).isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func aReplayTransactionAppliesEventsAssignsAndRecordsPrompts(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let user = User(
            id: "r1", device: nil, state: .anonymous, promptState: PromptState.anonymous.rawValue, createdAt: day(1),
            lastSeenAt: day(1), linkedAt: nil)
        let recorded = try store.withReplayTransaction { transaction throws in
            try transaction.insertUser(user)
            let event = TrackedEvent(
                user: "r1", action: "subscription_added", at: day(2), count: 2, idempotencyKey: "k1")
            #expect(try transaction.apply(event, profile: profile, now: day(2)).isCounted)
            let repeated = try transaction.apply(event, profile: profile, now: day(2))
            #expect(!repeated.isCounted && repeated.total == 2)

            #expect(try transaction.storedAssignment(userID: "r1", experiment: "paywall") == nil)
            let first = try transaction.storeAssignment(userID: "r1", experiment: "paywall", variant: "a", at: day(2))
            #expect(first.variant == "a" && first.isNew)
            let second = try transaction.storeAssignment(userID: "r1", experiment: "paywall", variant: "b", at: day(3))
            #expect(second.variant == "a" && !second.isNew, "assignments are sticky")
            #expect(try transaction.storedAssignment(userID: "r1", experiment: "paywall")?.variant == "a")

            let facts = try #require(try transaction.rows.promptFacts(of: "r1"))
            #expect(facts.counters["subscription_added"] == 2 && facts.history.isEmpty)
            #expect(try transaction.rows.promptFacts(of: "nobody") == nil)
            let entry = PromptHistoryEntry(context: "guest_cap_reached", outcome: .shown, at: day(2))
            #expect(try transaction.rows.recordPromptOutcome(entry, of: "r1") != nil)
            #expect(try transaction.rows.recordPromptOutcome(entry, of: "nobody") == nil)
            return try transaction.rows.promptFacts(of: "r1")?.history.count
        }
        #expect(recorded == 1)
        #expect(
            try store.promptOutcomeCounts(in: ReportPeriod()) == [
                PromptContextReport(context: "guest_cap_reached", shown: 1)
            ])
        #expect(try store.variantConversionCounts(in: ReportPeriod()).map(\.users) == [1])
        let rows = try Fixture.export(store, guestOwner: profile.guestOwner)
        #expect(rows["users"]?.count == 1 && rows["events"]?.count == 1)
        #expect(rows["counters"]?.first?["total"] == .integer(2))
    }

    @Test(arguments: StoreBackend.allCases)
    func aReplayTransactionThatThrowsKeepsNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        #expect(throws: Abort.self) {
            try store.withReplayTransaction { transaction throws in
                try transaction.insertUser(
                    User(
                        id: "r1", device: nil, state: .anonymous, promptState: PromptState.anonymous.rawValue,
                        createdAt: day(1), lastSeenAt: day(1), linkedAt: nil))
                _ = try transaction.apply(
                    TrackedEvent(user: "r1", action: "app_opened", at: day(1)), profile: profile, now: day(1))
                throw Abort()
            }
        }
        #expect(try Fixture.export(store, guestOwner: profile.guestOwner) == Fixture.grouped([]))
    }
}
