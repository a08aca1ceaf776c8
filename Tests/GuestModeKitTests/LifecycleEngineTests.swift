import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

func engine(_ name: String, now: Date = day(1)) throws -> GuestMode {
    try GuestMode.inMemory(profileText: try template(name), origin: "\(name).yaml", now: now)
}

/// Midday UTC of a November 2026 day, so daily periods are easy to reason about.
func day(_ number: Int, hour: Int = 12) -> Date {
    Timestamp.parse(String(format: "2026-11-%02dT%02d:00:00Z", number, hour))!
}

@Suite struct RecordCapTests {
    @Test func guestCapThenAccountCapThenPremium() throws {
        let engine = try engine("subscriptions")
        let guest = try engine.createGuest(device: nil, now: day(1))
        for index in 1...5 {
            let result = try engine.putRecord(
                user: guest.id, collection: "subscriptions", key: "\(index)", json: "{}", now: day(1))
            #expect(result.outcome == .allowed)
            #expect(result.limit.used == index)
        }
        let sixth = try engine.putRecord(user: guest.id, collection: "subscriptions", key: "6", json: "{}", now: day(1))
        #expect(sixth.outcome == .needsAccount)
        #expect(try engine.records(user: guest.id, collection: "subscriptions").count == 5)
        #expect(
            try engine.putRecord(user: guest.id, collection: "subscriptions", key: "5", json: #"{"a":1}"#, now: day(1))
                .isReplacement)
        #expect(
            try engine.putRecord(user: guest.id, collection: "settings", key: "x", json: #"{"v":1}"#, now: day(1))
                .outcome == .allowed)

        _ = try engine.link(user: guest.id, provider: "apple", subject: "a", email: nil, now: day(1))
        #expect(
            try engine.putRecord(user: guest.id, collection: "subscriptions", key: "6", json: "{}", now: day(1)).outcome
                == .needsPremium)
        _ = try engine.grantPlan(user: guest.id, plan: "premium", trial: nil, until: day(10), now: day(2))
        #expect(
            try engine.putRecord(user: guest.id, collection: "subscriptions", key: "6", json: "{}", now: day(2)).outcome
                == .allowed)
        // Once the plan ends the cap applies again to new keys, but nothing is taken away.
        #expect(
            try engine.putRecord(user: guest.id, collection: "subscriptions", key: "7", json: "{}", now: day(11))
                .outcome == .needsPremium)
        #expect(try engine.records(user: guest.id, collection: "subscriptions").count == 6)
    }

    @Test func recordsAreStoredAsCanonicalJSON() throws {
        let engine = try engine("subscriptions")
        let guest = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.putRecord(
            user: guest.id, collection: "settings", key: "k", json: #"{ "b": 1, "a": [1, 2] }"#, now: day(1))
        #expect(try engine.record(user: guest.id, collection: "settings", key: "k").data == #"{"a":[1,2],"b":1}"#)
        #expect(throws: GuestModeError.self) {
            try engine.putRecord(user: guest.id, collection: "settings", key: "k", json: "{", now: day(1))
        }
    }
}

@Suite struct MeterTests {
    @Test func warningsFireOncePerThreshold() throws {
        let engine = try engine("voice")
        let guest = try engine.createGuest(device: nil, now: day(1))
        let crossed = try [40, 5, 1, 8, 2].map {
            try engine.useMeter(
                user: guest.id, meter: "api_minutes", amount: MeterAmount(units: $0), key: nil, now: day(1)
            ).warnings.map(\.percent)
        }
        #expect(crossed == [[], [75], [], [90], []])
        let refused = try engine.useMeter(user: guest.id, meter: "api_minutes", amount: 5, key: nil, now: day(1))
        #expect(!refused.isAllowed && !refused.isRecorded)
        #expect(try engine.meterStatus(user: guest.id, meter: "api_minutes", now: day(1)).used == 56)
        #expect(try engine.checkMeter(user: guest.id, meter: "api_minutes", amount: 4, now: day(1)).isAllowed)
        #expect(try !engine.checkMeter(user: guest.id, meter: "api_minutes", amount: 4.5, now: day(1)).isAllowed)
    }

    @Test func oneUseCanCrossSeveralThresholds() throws {
        let engine = try engine("voice")
        let guest = try engine.createGuest(device: nil, now: day(1))
        let result = try engine.useMeter(user: guest.id, meter: "api_minutes", amount: 55, key: nil, now: day(1))
        #expect(result.warnings.map(\.level) == [.warning, .critical])
    }

    @Test func lifetimeAllowancesNeverReset() throws {
        let engine = try engine("voice")
        let guest = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.useMeter(user: guest.id, meter: "api_minutes", amount: 60, key: nil, now: day(1))
        #expect(try !engine.checkMeter(user: guest.id, meter: "api_minutes", amount: nil, now: day(30)).isAllowed)
    }

    @Test func dailyAllowancesResetAtMidnightUTC() throws {
        let engine = try engine("recipes")
        let guest = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.useMeter(user: guest.id, meter: "video_generations", amount: 3, key: nil, now: day(1, hour: 23))
        #expect(
            try !engine.checkMeter(user: guest.id, meter: "video_generations", amount: 1, now: day(1, hour: 23))
                .isAllowed)
        let nextDay = try engine.useMeter(
            user: guest.id, meter: "video_generations", amount: 2, key: nil, now: day(2, hour: 0))
        #expect(nextDay.isRecorded)
        #expect(nextDay.warnings.map(\.percent) == [66], "warnings fire again in a new period")
    }

    @Test func idempotencyKeysRecordOnce() throws {
        let engine = try engine("voice")
        let guest = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.useMeter(user: guest.id, meter: "api_minutes", amount: 10, key: "call-1", now: day(1))
        let repeated = try engine.useMeter(user: guest.id, meter: "api_minutes", amount: 10, key: "call-1", now: day(1))
        #expect(repeated.isDuplicate)
        #expect(repeated.status.used == 10)
    }
}

@Suite struct PlanTests {
    @Test func trialsExpireByTheClockAndRevocationEndsAPlan() throws {
        let engine = try engine("voice")
        let guest = try engine.createGuest(device: nil, now: day(1))
        let granted = try engine.grantPlan(
            user: guest.id, plan: "premium", trial: TimeSpan(parsing: "7d"), until: nil, now: day(1))
        #expect(granted.state == .trial)
        #expect(try engine.tier(user: guest.id, now: day(7)) == .premium)
        #expect(try engine.plans(user: guest.id, now: day(9)).first?.state == .expired)
        #expect(try engine.tier(user: guest.id, now: day(9)) == .guest)
        _ = try engine.grantPlan(user: guest.id, plan: "premium", trial: nil, until: nil, now: day(9))
        #expect(try engine.plans(user: guest.id, now: day(9)).first?.state == .active)
        #expect(try engine.revokePlan(user: guest.id, plan: "premium", now: day(10)).state == .revoked)
        #expect(try engine.tier(user: guest.id, now: day(10)) == .guest)
        #expect(throws: GuestModeError.self) {
            try engine.grantPlan(user: guest.id, plan: "gold", trial: nil, until: nil, now: day(10))
        }
    }
}

@Suite struct IdentityTests {
    @Test func conflictLeavesTheGuestUntouchedAndRecordsTheFailure() throws {
        let engine = try engine("subscriptions")
        let owner = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.link(user: owner.id, provider: "google", subject: "shared", email: nil, now: day(1))
        let guest = try engine.createGuest(
            device: nil, credentials: AnonymousCredentials(username: "anon", secret: "hunter2"), now: day(1))
        do {
            _ = try engine.link(user: guest.id, provider: "google", subject: "shared", email: nil, now: day(2))
            Issue.record("expected a conflict")
        } catch let error as GuestModeError {
            #expect(error.kind == .conflict)
            #expect(error.code == .identityAlreadyExists)
        }
        let after = try engine.details(user: guest.id, now: day(2))
        #expect(after.user.state == .anonymous)
        #expect(after.identities.isEmpty)
        #expect(after.hasAnonymousCredentials)
        #expect(after.counters["account_upgrade_failed"] == 1)
        let link = try engine.link(
            user: guest.id, provider: "apple", subject: "own", email: "a@example.com", now: day(3))
        #expect(link.didRemoveAnonymousCredentials)
        #expect(try engine.user(guest.id).state == .linked)
    }

    @Test func unlinkingTheLastIdentityMakesTheUserAnonymous() throws {
        let engine = try engine("recipes")
        let user = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.link(user: user.id, provider: "email", subject: "me@example.com", email: nil, now: day(1))
        #expect(try engine.unlink(user: user.id, provider: "email", now: day(2)).state == .anonymous)
        #expect(try engine.user(user.id).promptState == "anonymous")
    }

    @Test func neverAskAgainSurvivesLinkAndUnlink() throws {
        let engine = try engine("recipes")
        let user = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.recordPrompt(.never, context: "first_recipe_success", user: user.id, now: day(1))
        _ = try engine.link(user: user.id, provider: "email", subject: "me@example.com", email: nil, now: day(2))
        _ = try engine.unlink(user: user.id, provider: "email", now: day(3))
        #expect(try engine.user(user.id).promptState == "never_ask")
    }

    @Test func secretsAreStoredSaltedAndHashed() throws {
        let salt = [UInt8](repeating: 7, count: 16)
        let first = try SecretHash.make("hunter2", salt: salt)
        #expect(try first == SecretHash.make("hunter2", salt: salt))
        #expect(try first != SecretHash.make("hunter3", salt: salt))
        #expect(!first.contains("hunter2"))
        #expect(try SecretHash.make("hunter2") != SecretHash.make("hunter2"), "salts differ")
    }
}

@Suite struct EventTests {
    @Test func ingestionIsAllOrNothingByDefault() throws {
        let engine = try engine("recipes")
        let guest = try engine.createGuest(device: nil, now: day(1))
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("events-\(UUID().uuidString).ndjson")
        defer { try? FileManager.default.removeItem(at: log) }
        try """
        {"user":"\(guest.id)","action":"app_opened","id":"1"}
        {"user":"\(guest.id)","action":"teleported"}

        {"user":"\(guest.id)","action":"recipe_created","count":2,"props":{"source":"camera","n":3}}
        """.write(to: log, atomically: true, encoding: .utf8)
        let refused = try engine.ingest(log: log, creatingUsers: false, skippingInvalid: false, now: day(1))
        #expect(!refused.isApplied)
        #expect(refused.problems.map(\.line) == [2])
        #expect(try engine.counters(user: guest.id).isEmpty)
        let skipped = try engine.ingest(log: log, creatingUsers: false, skippingInvalid: true, now: day(1))
        #expect(skipped.applied == 2)
        #expect(try engine.counters(user: guest.id) == ["app_opened": 1, "recipe_created": 2])
        let repeated = try engine.ingest(log: log, creatingUsers: false, skippingInvalid: true, now: day(1))
        #expect(repeated.duplicates == 1, "the keyed line counts once across runs")
    }

    @Test(arguments: [
        (#"[1]"#, "not a JSON object"),
        (#"{"user":"u","action":"app_opened","at":"noon"}"#, "'at' must be"),
        (#"{"user":"u","action":"app_opened","count":1.5}"#, "'count' must be a whole number"),
        (#"{"user":"u","action":"app_opened","colour":"red"}"#, "unknown field 'colour'"),
        (#"{"user":"u","action":"app_opened","props":{"a":[1]}}"#, "property 'a'"),
    ])
    func badLinesAreExplained(line: String, message: String) {
        guard case .failure(let failure) = EventLog.decode(Substring(line), defaultTime: day(1)) else {
            Issue.record("accepted \(line)")
            return
        }
        #expect(failure.description.contains(message))
    }

    @Test func purgeKeepsGuestsWithDataOrPlans() throws {
        let engine = try engine("subscriptions")
        let idle = try engine.createGuest(device: nil, now: day(1))
        let withData = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.putRecord(user: withData.id, collection: "settings", key: "k", json: "{}", now: day(1))
        let payer = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.grantPlan(user: payer.id, plan: "premium", trial: nil, until: nil, now: day(1))
        let recent = try engine.createGuest(device: nil, now: day(20))
        let report = try engine.purge(inactiveDays: 10, includingUsersWithData: false, dryRun: false, now: day(25))
        #expect(report.purged.map(\.id) == [idle.id])
        #expect(Set(report.kept.map(\.id)) == [withData.id, payer.id])
        #expect(try engine.users(matching: UserFilter(), now: day(25)).map(\.id).contains(recent.id))
    }
}
