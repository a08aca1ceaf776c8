import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

let templatesDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Templates")

func template(_ name: String) throws -> String {
    try String(contentsOf: templatesDirectory.appendingPathComponent("\(name).yaml"), encoding: .utf8)
}

@Suite struct ProfileLoaderTests {
    @Test func tiersInheritFromTheTierBelow() throws {
        let profile = try ProfileLoader.parse(try template("voice"), file: "voice.yaml")
        #expect(profile.tier(.guest).allowance(for: "api_minutes") == 60)
        #expect(profile.tier(.account).allowance(for: "api_minutes") == 60)
        #expect(profile.tier(.premium).allowance(for: "api_minutes") == nil)
        #expect(profile.meter(named: "api_minutes")?.warnings.map(\.percent) == [75, 90])
        #expect(profile.plan(named: "premium")?.trial == TimeSpan(amount: 1, unit: .months))
    }

    @Test func reportsEveryProblemWithItsLine() throws {
        let text = """
            name: demo
            version: 0
            collections:
              notes:
            actions: [opened, opened]
            tiers:
              guest:
                caps: { notes: many }
                when_capped: allowed
            prompts:
              rules:
                - context: hello
                  priority: urgent
                  when:
                    - counter: missing
                      at_least: 1
                  content: { title: Hi, message: There }
            """
        do {
            _ = try ProfileLoader.parse(text, file: "demo.yaml")
            Issue.record("expected the profile to be refused")
        } catch let error as InvalidProfileError {
            let lines = error.diagnostics.map(\.line)
            #expect(lines == [2, 5, 8, 9, 13, 15])
            #expect(error.diagnostics.allSatisfy { $0.file == "demo.yaml" })
            #expect(
                error.description.contains(
                    "demo.yaml:13: prompt 'hello' priority 'urgent' is not one of: low, medium, high, critical"))
        }
    }

    @Test func experimentWeightsMustAddUpToOne() throws {
        let text = """
            name: demo
            version: 1
            tiers: { guest: }
            experiments:
              test:
                variants:
                  - { name: a, weight: 0.5 }
                  - { name: b, weight: 0.4 }
            """
        #expect(throws: InvalidProfileError.self) { try ProfileLoader.parse(text, file: "x.yaml") }
    }

    @Test func emptyDocumentIsRefused() {
        #expect(throws: InvalidProfileError.self) { try ProfileLoader.parse("", file: "empty.yaml") }
    }

    @Test(arguments: ["recipes", "subscriptions", "voice", "habits"])
    func templatesLoad(name: String) throws {
        let profile = try ProfileLoader.parse(try template(name), file: "\(name).yaml")
        #expect(profile.name == name)
        #expect(profile.tiers.map(\.level) == [.guest, .account, .premium])
    }
}

@Suite struct ClockTests {
    @Test func timestampsRoundTripAndSortAsText() throws {
        let date = try #require(Timestamp.parse("2026-11-22T09:30:00Z"))
        #expect(Timestamp.format(date) == "2026-11-22T09:30:00.000Z")
        #expect(Timestamp.parse("2026-11-22") != nil)
        #expect(Timestamp.parse("2026-11-22T10:30:00+01:00") == date)
        #expect(Timestamp.parse("yesterday") == nil)
        let later = Timestamp.format(date.addingTimeInterval(0.25))
        #expect(later == "2026-11-22T09:30:00.250Z")
        #expect(Timestamp.format(date) < later)
    }

    @Test func spansParseAndAddCalendarMonths() throws {
        #expect(TimeSpan(parsing: "24h") == TimeSpan(amount: 24, unit: .hours))
        #expect(TimeSpan(parsing: "1 month") == TimeSpan(amount: 1, unit: .months))
        #expect(TimeSpan(parsing: "3d")?.description == "3d")
        #expect(TimeSpan(parsing: "soon") == nil)
        let january31 = try #require(Timestamp.parse("2026-01-31T00:00:00Z"))
        let end = TimeSpan(amount: 1, unit: .months).added(to: january31)
        #expect(Timestamp.format(end) == "2026-02-28T00:00:00.000Z")
    }
}

@Suite struct StoreTests {
    @Test func inMemoryStoreIsFullyMigratedAndHealthy() throws {
        let store = try SQLiteStore.inMemory()
        let status = try store.schemaStatus()
        #expect(status.pending.isEmpty)
        #expect(status.applied == AppDatabase.knownMigrations)
        #expect(try store.integrityProblems().isEmpty)
        #expect(try store.boundProfile() == nil)
        try store.bindProfile(text: "name: x", origin: "x.yaml", now: Date(timeIntervalSince1970: 0))
        #expect(try store.boundProfile()?.origin == "x.yaml")
    }
}
