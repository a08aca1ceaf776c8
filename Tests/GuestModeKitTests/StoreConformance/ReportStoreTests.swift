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
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let empty = try engine.funnelReport(ReportPeriod())
        #expect(empty.guests == 0 && empty.prompted == 0 && empty.linked == 0)
        #expect(empty.averageHoursToLink == nil && empty.medianHoursToLink == nil)
        try loadActivity(into: store)
        let cohort = try engine.funnelReport(november)
        #expect(cohort.guests == 4 && cohort.prompted == 2 && cohort.linked == 2)
        #expect(abs((cohort.averageHoursToLink ?? 0) - 2) < 1e-6)
        #expect(abs((cohort.medianHoursToLink ?? 0) - 2) < 1e-6)
        let everyone = try engine.funnelReport(ReportPeriod())
        #expect(everyone.guests == 5 && everyone.prompted == 3)
        #expect(try engine.funnelReport(ReportPeriod(since: day(2))).guests == 0)
    }

    @Test(arguments: StoreBackend.allCases)
    func everyLinkOfTheCohortIsListedWithItsTimes(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        try loadActivity(into: store)
        let links = try store.read { transaction in
            var links: [[Date]] = []
            try transaction.forEachLink(ofUsersCreatedIn: november) { links.append([$0, $1]) }
            return links
        }
        #expect(
            links.sorted { $0[1] < $1[1] } == [
                [day(1, hour: 12), day(1, hour: 13)], [day(1, hour: 12), day(1, hour: 15)],
            ])
        #expect(
            try store.read { try $0.cohortCounts(createdIn: november) }
                == CohortCounts(users: 4, prompted: 2, linked: 2))
    }

    @Test(arguments: StoreBackend.allCases)
    func promptOutcomesAreCountedPerContextInThePeriod(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        #expect(try store.read { try $0.promptContexts(in: ReportPeriod()) }.isEmpty)
        try loadActivity(into: store)
        let counts = try store.read { try $0.promptContexts(in: november) }.sorted { $0.context < $1.context }
        #expect(
            counts == [
                PromptContextReport(context: "guest_cap_reached", shown: 2, completed: 1),
                PromptContextReport(context: "retired_context", dismissed: 1),
            ])
        let all = try store.read { try $0.promptContexts(in: ReportPeriod()) }
        #expect(all.first { $0.context == "guest_cap_reached" }?.never == 1)
    }

    @Test(arguments: StoreBackend.allCases)
    func variantsCountTheirUsersAndConversions(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        #expect(try store.read { try $0.variantCounts(in: ReportPeriod()) }.isEmpty)
        try loadActivity(into: store)
        let counts = try store.read { try $0.variantCounts(in: november) }.sorted { $0.variant < $1.variant }
        // Linked users and users who completed sign-in (prompt state authenticated) convert.
        #expect(
            counts == [
                VariantCounts(experiment: "paywall", variant: "a", users: 2, conversions: 1),
                VariantCounts(experiment: "paywall", variant: "b", users: 2, conversions: 2),
            ])
        let all = try store.read { try $0.variantCounts(in: ReportPeriod()) }
        #expect(all.first { $0.variant == "b" }?.users == 3)
    }

    @Test(arguments: StoreBackend.allCases)
    func meterUsageIsCountedPerMeter(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        try loadActivity(into: store)
        func usage(_ meter: String, _ period: ReportPeriod) throws -> MeterUsageCounts {
            try store.read { try $0.meterUsageCounts(of: meter, in: period) }
        }
        #expect(try usage("minutes", november) == MeterUsageCounts(users: 2, uses: 3, amount: 5, warnedUsers: 1))
        #expect(try usage("tokens", november) == MeterUsageCounts(users: 0, uses: 0, amount: 0, warnedUsers: 0))
        #expect(try usage("minutes", ReportPeriod()).amount == 12)
    }

    @Test(arguments: StoreBackend.allCases)
    func aReplaysStepsApplyEventsAssignAndRecordPrompts(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let recorded = try store.write { transaction throws in
            #expect(
                try transaction.createMissingGuests(
                    [("r1", day(1), day(1))], state: .anonymous, promptState: User.newGuestPromptState) == ["r1"])
            let event = TrackedEvent(
                user: "r1", action: "subscription_added", at: day(2), count: 2, idempotencyKey: "k1")
            #expect(try transaction.count(event, profile: profile, now: day(2)))
            #expect(try !transaction.count(event, profile: profile, now: day(2)))
            #expect(try transaction.counterTotal(of: "r1", action: "subscription_added") == 2)

            #expect(try transaction.assignment(of: "r1", experiment: "paywall") == nil)
            #expect(try transaction.addAssignment(of: "r1", experiment: "paywall", variant: "a", at: day(2)))
            #expect(
                try !transaction.addAssignment(of: "r1", experiment: "paywall", variant: "b", at: day(3)),
                "assignments are sticky")
            #expect(try transaction.assignment(of: "r1", experiment: "paywall")?.variant == "a")

            let facts = try #require(try transaction.promptFacts(of: "r1")?.facts)
            #expect(facts.counters["subscription_added"] == 2 && facts.history.isEmpty)
            #expect(try transaction.promptFacts(of: "nobody") == nil)
            let entry = PromptHistoryEntry(context: "guest_cap_reached", outcome: .shown, at: day(2))
            #expect(try transaction.recordPromptOutcome(entry, of: "r1") == .prompted)
            #expect(try transaction.recordPromptOutcome(entry, of: "nobody") == nil)
            return try transaction.promptFacts(of: "r1")?.facts.history.count
        }
        #expect(recorded == 1)
        let engine = GuestMode(profile: profile, store: store)
        #expect(
            try engine.promptsReport(ReportPeriod()).contexts.first { $0.context == "guest_cap_reached" }
                == PromptContextReport(context: "guest_cap_reached", shown: 1))
        #expect(try store.read { try $0.variantCounts(in: ReportPeriod()) }.map(\.users) == [1])
        let rows = try Fixture.export(store, guestOwner: profile.guestOwner)
        #expect(rows["users"]?.count == 1 && rows["events"]?.count == 1)
        #expect(rows["counters"]?.first?["total"] == .integer(2))
    }

    @Test(arguments: StoreBackend.allCases)
    func aReplayThatThrowsKeepsNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        #expect(throws: Abort.self) {
            try store.write { transaction throws in
                _ = try transaction.createMissingGuests(
                    [("r1", day(1), day(1))], state: .anonymous, promptState: User.newGuestPromptState)
                _ = try transaction.count(
                    TrackedEvent(user: "r1", action: "app_opened", at: day(1)), profile: profile, now: day(1))
                throw Abort()
            }
        }
        #expect(try Fixture.export(store, guestOwner: profile.guestOwner) == Fixture.grouped([]))
    }

    /// A replay's steps are the engine's on either backend: the same log
    /// gives the same prompts, in the same order, and the same summary.
    @Test func aReplayDecidesTheSameOnBothBackends() throws {
        let text = try template("recipes")
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID().uuidString).ndjson")
        defer { try? FileManager.default.removeItem(at: log) }
        var lines: [String] = []
        for user in 0..<6 {
            for (index, action) in ["app_opened", "recipe_created", "recipe_viewed", "app_opened"].enumerated() {
                for repeat_ in 0..<3 {
                    let at = Timestamp.format(day(1 + repeat_ * 2, hour: index))
                    lines.append(
                        #"{"user":"u\#(user)","action":"\#(action)","at":"\#(at)","id":"\#(user)-\#(index)-\#(repeat_)"}"#
                    )
                }
            }
        }
        try (lines + lines.prefix(3)).joined(separator: "\n").write(to: log, atomically: true, encoding: .utf8)
        func replay(_ backend: StoreBackend) throws -> (decisions: [PromptRecord], summary: String) {
            var decisions: [PromptRecord] = []
            let summary = try GuestMode.replay(
                log: log, profileText: text, origin: "recipes.yaml", now: day(10),
                scratchStore: {
                    switch backend {
                    case .sqlite: try SQLiteStore.inMemory()
                    case .sqlitePool: try StoreBackend.makePooledSQLiteStore()
                    case .postgres: try StoreBackend.makePostgresStore()
                    }
                }, onDecision: { decisions.append($0) })
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return (decisions, String(decoding: try encoder.encode(summary), as: UTF8.self))
        }
        let sqlite = try replay(.sqlite)
        let postgres = try replay(.postgres)
        #expect(!sqlite.decisions.isEmpty)
        #expect(sqlite.decisions == postgres.decisions)
        #expect(sqlite.summary == postgres.summary)
        #expect(sqlite.summary.contains(#""duplicates":3"#))
    }
}
