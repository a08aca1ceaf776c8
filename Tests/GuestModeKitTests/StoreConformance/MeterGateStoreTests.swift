import Foundation
import Testing

@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

extension StoreBackend {
    /// An engine over a counting store of this backend bound to the template `name`, with one webhook
    /// endpoint that receives every event type.
    fileprivate func countedEngine(_ name: String) throws -> (GuestMode, CountingStore) {
        let text =
            try template(name) + """

                webhooks:
                  endpoints:
                    - name: all
                      url: https://hooks.example.com/all
                      events: ["*"]
                      secret_env: ALL_SECRET

                """
        let profile = try ProfileLoader.parse(text, file: "\(name).yaml")
        let store: any GuestStore
        switch self {
        case .sqlite: store = try SQLiteStore.inMemory()
        case .sqlitePool: store = try StoreBackend.makePooledSQLiteStore()
        case .postgres: store = try StoreBackend.makePostgresStore()
        }
        try store.bindProfile(text: text, origin: "\(name).yaml", now: day(1))
        let counting = CountingStore(store)
        return (GuestMode(profile: profile, store: counting), counting)
    }
}

/// The meter gate is a pure read; what a refusal raises (a trigger, a webhook) is raised by a write:
/// a refused use, or `checkMeterRaisingPrompt`. What each costs in transactions.
@Suite struct MeterGateStoreTests {
    /// Everything a refusal could leave behind: the store's rows, the raised triggers, the queued
    /// webhooks and the prompt due.
    private func footprint(
        _ engine: GuestMode, _ store: CountingStore, user: String, now: Date
    ) throws
        -> (tables: [String: Int], triggers: [String: Date], webhooks: [String], prompt: NextPrompt)
    {
        (
            try store.tableCounts(),
            try #require(try promptSnapshot(store, engine.profile, of: user, now: now)).raisedTriggers,
            try engine.webhookDeliveries(user: user, status: nil).map(\.type),
            try engine.nextPrompt(user: user, trigger: nil, now: now)
        )
    }

    @Test(arguments: StoreBackend.allCases)
    func aRefusedCheckRefusedTwiceChangesNothing(backend: StoreBackend) throws {
        let (engine, store) = try backend.countedEngine("voice")
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.useMeter(user: guest, meter: "api_minutes", amount: 58, key: nil, now: day(2))
        let before = try footprint(engine, store, user: guest, now: day(3))
        for _ in 1...2 {
            var decision: MeterDecision?
            let cost = try store.counting {
                decision = try engine.checkMeter(user: guest, meter: "api_minutes", amount: 5, now: day(3))
            }
            #expect(cost == CountingStore.Counts(writes: 0, reads: 1), "one read transaction: \(cost)")
            #expect(decision?.isAllowed == false)
            #expect(decision?.refusal?.failure.code == .meterExhausted)
            #expect(decision?.refusal?.prompt == before.prompt.offer, "the prompt already due, none raised")
        }
        let after = try footprint(engine, store, user: guest, now: day(3))
        #expect(after.tables == before.tables)
        #expect(after.triggers.isEmpty && before.triggers.isEmpty)
        #expect(after.webhooks == before.webhooks)
        #expect(!after.webhooks.contains("meter.exhausted"))
        #expect(after.prompt == before.prompt)
    }

    @Test(arguments: StoreBackend.allCases)
    func aRaisingCheckRaisesTheTriggerAndItsWebhookInOneWrite(backend: StoreBackend) throws {
        let (engine, store) = try backend.countedEngine("voice")
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.useMeter(user: guest, meter: "api_minutes", amount: 58, key: nil, now: day(2))
        var allowed: MeterDecision?
        let allowedCost = try store.counting {
            allowed = try engine.checkMeterRaisingPrompt(user: guest, meter: "api_minutes", amount: 2, now: day(3))
        }
        #expect(allowed?.isAllowed == true && allowed?.refusal == nil)
        #expect(allowedCost == CountingStore.Counts(writes: 1, reads: 0))
        #expect(try promptSnapshot(store, engine.profile, of: guest, now: day(3))?.raisedTriggers == [:])

        var refused: MeterDecision?
        let cost = try store.counting {
            refused = try engine.checkMeterRaisingPrompt(user: guest, meter: "api_minutes", amount: 5, now: day(3))
        }
        #expect(cost == CountingStore.Counts(writes: 1, reads: 0), "one write transaction: \(cost)")
        #expect(refused?.isAllowed == false)
        #expect(refused?.refusal?.prompt?.context == "session_refused")
        #expect(refused?.refusal?.prompt?.trigger == "minutes_refused")
        #expect(
            try promptSnapshot(store, engine.profile, of: guest, now: day(3))?.raisedTriggers
                == ["minutes_refused": day(3)])
        #expect(try engine.webhookDeliveries(user: guest, status: nil).map(\.type).contains("meter.exhausted"))

        // The read gate now names the prompt that waits, and still writes nothing.
        let tables = try store.tableCounts()
        let pending = try engine.checkMeter(user: guest, meter: "api_minutes", amount: 5, now: day(3))
        #expect(pending.refusal?.prompt == (try engine.nextPrompt(user: guest, trigger: nil, now: day(3)).offer))
        #expect(pending.refusal?.prompt != nil)
        #expect(try store.tableCounts() == tables)
    }

    /// Before: the use's write, then `nextPrompt`'s snapshot read and, with experiments, its read of
    /// the assignments (and a write to enrol a new user): 2 to 4 transactions. Now one write.
    @Test(arguments: StoreBackend.allCases)
    func aRefusedUseIsOneWrite(backend: StoreBackend) throws {
        let (voice, voiceStore) = try backend.countedEngine("voice")
        let speaker = try voice.createGuest(device: nil, now: day(1)).id
        _ = try voice.useMeter(user: speaker, meter: "api_minutes", amount: 58, key: nil, now: day(2))
        var used: MeterUseResult?
        let cost = try voiceStore.counting {
            used = try voice.useMeter(user: speaker, meter: "api_minutes", amount: 5, key: "k", now: day(3))
        }
        #expect(cost == CountingStore.Counts(writes: 1, reads: 0), "\(cost)")
        #expect(used?.refusal?.prompt?.context == "session_refused")

        // With experiments, the user's first enrolment is part of the same write.
        let (recipes, recipesStore) = try backend.countedEngine("recipes")
        let cook = try recipes.createGuest(device: nil, now: day(1)).id
        for _ in 1...3 {
            _ = try recipes.useMeter(user: cook, meter: "video_generations", amount: 1, key: nil, now: day(1))
        }
        var video: MeterUseResult?
        let recipeCost = try recipesStore.counting {
            video = try recipes.useMeter(user: cook, meter: "video_generations", amount: 1, key: nil, now: day(1))
        }
        #expect(recipeCost == CountingStore.Counts(writes: 1, reads: 0), "\(recipeCost)")
        #expect(video?.isAllowed == false)
        // The prompt the old second and third transactions found, found in the first; the first
        // decision enrolled the user (isNew), the later one reads the stored assignment.
        var raised = try #require(try recipes.promptRaised(byMeter: "video_generations", user: cook, now: day(1)))
        #expect(raised.variants.allSatisfy { !$0.isNew })
        raised.variants = raised.variants.map {
            var first = $0; first.isNew = true; return first
        }
        #expect(video?.refusal?.prompt == raised)
    }

    @Test(arguments: StoreBackend.allCases)
    func everyMeterIsReadFromOneSnapshot(backend: StoreBackend) throws {
        let (engine, store) = try backend.countedEngine("recipes")
        let cook = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.useMeter(user: cook, meter: "video_generations", amount: 1, key: nil, now: day(1))
        var statuses: [MeterStatus] = []
        let cost = try store.counting { statuses = try engine.meterStatuses(user: cook, now: day(1)) }
        #expect(cost == CountingStore.Counts(writes: 0, reads: 1))
        #expect(statuses.map(\.meter) == engine.profile.meters.map(\.name))
        #expect(
            try statuses
                == engine.profile.meters.map { try engine.meterStatus(user: cook, meter: $0.name, now: day(1)) })
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.meterStatuses(user: "ghost", now: day(1)) }
    }
}
