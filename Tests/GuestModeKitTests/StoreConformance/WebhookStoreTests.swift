import Foundation
import Testing

@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// A template with a `webhooks:` section: `all` receives every type, `meters`
/// only meter warnings.
private func webhookProfile(_ name: String, maxAttempts: Int = 3) throws -> String {
    try template(name) + """

        webhooks:
          max_attempts: \(maxAttempts)
          endpoints:
            - name: all
              url: https://hooks.example.com/all
              events: ["*"]
              secret_env: ALL_SECRET
            - name: meters
              url: http://127.0.0.1:9/meters
              events: [meter.warning]
              secret_file: /run/secrets/meters

        """
}

extension StoreBackend {
    /// An engine over an empty store of this backend bound to `text`.
    fileprivate func webhookEngine(_ name: String, maxAttempts: Int = 3) throws -> GuestMode {
        let text = try webhookProfile(name, maxAttempts: maxAttempts)
        let profile = try ProfileLoader.parse(text, file: "\(name).yaml")
        let store: any GuestStore
        switch self {
        case .sqlite: store = try SQLiteStore.inMemory()
        case .sqlitePool: store = try StoreBackend.makePooledSQLiteStore()
        case .postgres: store = try StoreBackend.makePostgresStore()
        }
        try store.bindProfile(text: text, origin: "\(name).yaml", now: day(1))
        return GuestMode(profile: profile, store: store)
    }
}

/// The webhook outbox over each backend: events written with their change,
/// delivered oldest first per user and endpoint, backed off and held.
@Suite("Webhook outbox conformance")
struct WebhookStoreTests {
    private func types(_ engine: GuestMode, endpoint: String = "all", user: String? = nil) throws -> [String] {
        try engine.webhookDeliveries(user: user, status: nil).filter { $0.endpoint == endpoint }.map(\.type)
    }

    @Test(arguments: StoreBackend.allCases)
    func committedChangesRaiseTheirEventsForSubscribersOnly(backend: StoreBackend) throws {
        let engine = try backend.webhookEngine("voice")
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.useMeter(
            user: guest, meter: "api_minutes", amount: MeterAmount(units: 50), key: nil, now: day(2))
        let refused = try engine.useMeter(
            user: guest, meter: "api_minutes", amount: MeterAmount(units: 20), key: nil, now: day(3))
        #expect(!refused.isAllowed)
        _ = try engine.link(user: guest, provider: "apple", subject: "s-1", email: nil, now: day(4))
        _ = try engine.recordPrompt(.dismissed, context: "minutes_paywall", user: guest, now: day(5))
        #expect(
            try types(engine) == [
                "meter.warning", "meter.exhausted", "account_upgrade.started", "account_upgrade.succeeded",
                "identity.linked", "prompt.outcome",
            ])
        #expect(try types(engine, endpoint: "meters") == ["meter.warning"])
        let deliveries = try engine.webhookDeliveries(user: guest, status: .pending)
        let warning = try #require(deliveries.first)
        // One event, one id, for both endpoints.
        #expect(deliveries.filter { $0.type == "meter.warning" }.map(\.eventID) == [warning.eventID, warning.eventID])
        let payload = try #require(
            try JSONSerialization.jsonObject(with: Data(warning.payload.utf8)) as? [String: Any])
        #expect(Set(payload.keys) == ["id", "type", "created_at", "user_id", "data"])
        #expect(payload["id"] as? String == warning.eventID)
        #expect(payload["user_id"] as? String == guest)
        #expect(payload["created_at"] as? String == Timestamp.format(day(2)))
        #expect((payload["data"] as? [String: Any])?["level"] as? String == "warning")
    }

    @Test(arguments: StoreBackend.allCases)
    func aRolledBackChangeRaisesNothing(backend: StoreBackend) throws {
        let engine = try backend.webhookEngine("voice")
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        let trial = TimeSpan(amount: 7, unit: .days)
        _ = try engine.grantPlan(user: guest, plan: "premium", trial: trial, until: nil, now: day(1))
        expectFailure(.conflict, code: .trialAlreadyUsed) {
            _ = try engine.grantPlan(user: guest, plan: "premium", trial: trial, until: nil, now: day(2))
        }
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.merge(guest: guest, into: "nobody", policy: .union, dryRun: false, now: day(2))
        }
        #expect(try types(engine) == ["plan.granted", "plan.expired"])
    }

    @Test(arguments: StoreBackend.allCases)
    func aPlanExpiryIsSentAtItsEndUnlessRevoked(backend: StoreBackend) throws {
        let engine = try backend.webhookEngine("voice")
        let kept = try engine.createGuest(device: nil, now: day(1)).id
        let revoked = try engine.createGuest(device: nil, now: day(1)).id
        for user in [kept, revoked] {
            _ = try engine.grantPlan(
                user: user, plan: "premium", trial: TimeSpan(amount: 7, unit: .days), until: nil, now: day(1))
        }
        _ = try engine.revokePlan(user: revoked, plan: "premium", now: day(2))
        #expect(try types(engine, user: revoked) == ["plan.granted", "plan.revoked"])
        let expiry = try #require(try engine.webhookDeliveries(user: kept, status: nil).last)
        #expect(expiry.type == "plan.expired" && expiry.createdAt == day(8))
        // Before its time it is not due, and holds back nothing sent before it.
        let early = try engine.dueWebhookDeliveries(now: day(3), retryingNow: true)
        #expect(early.filter { $0.endpoint == "all" }.map(\.type) == ["plan.granted", "plan.granted"])
        for delivery in early { _ = try engine.settleWebhook(delivery, attempt: .delivered, now: day(3)) }
        let revocation = try engine.dueWebhookDeliveries(now: day(3), retryingNow: true)
        #expect(revocation.map(\.type) == ["plan.revoked"])
        _ = try engine.settleWebhook(revocation[0], attempt: .delivered, now: day(3))
        #expect(try engine.dueWebhookDeliveries(now: day(3), retryingNow: true).isEmpty)
        #expect(try engine.dueWebhookDeliveries(now: day(8), retryingNow: false).map(\.type) == ["plan.expired"])
    }

    @Test(arguments: StoreBackend.allCases)
    func aUsersEventsGoOutOldestFirstAndAFailureHoldsBackOnlyThatUser(backend: StoreBackend) throws {
        let engine = try backend.webhookEngine("subscriptions", maxAttempts: 2)
        let first = try engine.createGuest(device: nil, now: day(1)).id
        let second = try engine.createGuest(device: nil, now: day(1)).id
        for (user, hour) in [(first, 1), (second, 2), (first, 3)] {
            _ = try engine.grantPlan(user: user, plan: "premium", trial: nil, until: nil, now: day(1, hour: hour))
        }
        _ = try engine.revokePlan(user: first, plan: "premium", now: day(1, hour: 4))
        let due = try engine.dueWebhookDeliveries(now: day(2), retryingNow: false)
        #expect(due.map(\.userID) == [first, second], "one per user: the oldest")
        let failed = try engine.settleWebhook(due[0], attempt: .failed("HTTP 500"), now: day(2))
        #expect(failed.status == .pending && failed.attempts == 1)
        let delay = try #require(failed.nextAttemptAt).timeIntervalSince(day(2))
        #expect(delay >= 22.5 && delay < 37.5)
        // The failed one waits; the first user's later events wait behind it.
        #expect(try engine.dueWebhookDeliveries(now: day(2), retryingNow: false).map(\.userID) == [second])
        let retried = try engine.dueWebhookDeliveries(now: day(2), retryingNow: true)
        #expect(retried.map(\.deliveryID) == [due[0].deliveryID, due[1].deliveryID])
        // A stale attempt (read before the failure was recorded) changes nothing.
        #expect(try engine.settleWebhook(due[0], attempt: .delivered, now: day(2)).attempts == 1)
        let held = try engine.settleWebhook(retried[0], attempt: .failed("timed out"), now: day(2))
        #expect(held.status == .held && held.nextAttemptAt == nil)
        // A held delivery no longer holds back the user's later ones.
        let next = try engine.dueWebhookDeliveries(now: day(2), retryingNow: false)
        #expect(Set(next.map(\.userID)) == [first, second])
        let firstNext = try #require(next.first { $0.userID == first })
        #expect(firstNext.type == "plan.granted" && firstNext.deliveryID > due[0].deliveryID)
        #expect(try engine.webhookQueues().first { $0.name == "all" }?.held == 1)
        let back = try engine.retryWebhooks(id: nil)
        #expect(back.map(\.deliveryID) == [due[0].deliveryID] && back[0].status == .pending && back[0].attempts == 0)
        expectFailure(.notFound, code: .webhookNotFound) { _ = try engine.retryWebhooks(id: 999_999) }
        _ = try engine.settleWebhook(back[0], attempt: .delivered, now: day(3))
        expectFailure(.conflict, code: .webhookDelivered) { _ = try engine.retryWebhooks(id: back[0].deliveryID) }
    }

    @Test(arguments: StoreBackend.allCases)
    func aBacklogIsReadAPageOfHeadsAtATime(backend: StoreBackend) throws {
        let engine = try backend.webhookEngine("voice")
        // 300 users with two events each, interleaved in time, and one event scheduled for later.
        try engine.store.write { transaction in
            for round in 0..<2 {
                for index in 0..<300 {
                    try transaction.enqueueWebhook(
                        NewWebhookDelivery(
                            eventID: "evt_\(round)_\(index)", endpoint: "all", type: "meter.warning",
                            userID: "u\(index)", createdAt: day(1 + round).addingTimeInterval(Double(index)), scope: "",
                            payload: "{}"))
                }
            }
            try transaction.enqueueWebhook(
                NewWebhookDelivery(
                    eventID: "evt_later", endpoint: "meters", type: "meter.warning", userID: "u0", createdAt: day(9),
                    scope: "", payload: "{}"))
        }
        var heads: [WebhookDelivery] = []
        var cursor: WebhookCursor?
        while true {
            let page = try engine.store.read { try $0.pendingWebhookHeads(after: cursor, limit: 64) }
            #expect(page.count <= 64)
            guard let last = page.last else { break }
            heads += page
            cursor = WebhookCursor(createdAt: Timestamp.format(last.createdAt), deliveryID: last.deliveryID)
        }
        #expect(heads.map(\.eventID) == (0..<300).map { "evt_0_\($0)" } + ["evt_later"], "each pair's oldest, in order")
        #expect(try engine.dueWebhookDeliveries(now: day(3), retryingNow: false, limit: 100).count == 100)
        // Pages whose every head is skipped are read past, not taken for an empty outbox.
        let skipped = Set((0..<250).map { ["all", "u\($0)"] })
        let rest = try engine.dueWebhookDeliveries(now: day(3), retryingNow: false, skipping: skipped, limit: 100)
        #expect(rest.map(\.eventID) == (250..<300).map { "evt_0_\($0)" })
        // The event scheduled for day 9 is not due before it.
        let all = Set((0..<300).map { ["all", "u\($0)"] })
        #expect(try engine.dueWebhookDeliveries(now: day(3), retryingNow: true, skipping: all, limit: 100).isEmpty)
        #expect(
            try engine.dueWebhookDeliveries(now: day(9), retryingNow: false, skipping: all, limit: 100).map(\.eventID)
                == ["evt_later"])
        // Once a user's first event went out, their second is the head.
        _ = try engine.settleWebhook(heads[0], attempt: .delivered, now: day(3))
        let afterFirst = try engine.store.read { try $0.pendingWebhookHeads(after: nil, limit: 1) }
        #expect(afterFirst.map(\.eventID) == ["evt_0_1"])
        #expect(
            try engine.dueWebhookDeliveries(now: day(3), retryingNow: false, limit: 400).filter { $0.userID == "u0" }
                .map(\.eventID) == ["evt_1_0"])
    }

    @Test(arguments: StoreBackend.allCases)
    func deliveredEventsLeaveTheOutboxAfterThirtyDaysPendingAndHeldNever(backend: StoreBackend) throws {
        let engine = try backend.webhookEngine("voice", maxAttempts: 1)
        try engine.store.write { transaction in
            for (index, at) in [day(1), day(1), day(1), day(1), day(20)].enumerated() {
                try transaction.enqueueWebhook(
                    NewWebhookDelivery(
                        eventID: "evt_\(index)", endpoint: "all", type: "meter.warning", userID: "u\(index)",
                        createdAt: at, scope: "", payload: "{}"))
            }
        }
        let queued = try engine.webhookDeliveries(user: nil, status: .pending)
        for delivery in [queued[0], queued[1], queued[4]] {
            _ = try engine.settleWebhook(delivery, attempt: .delivered, now: day(2))
        }
        _ = try engine.settleWebhook(queued[2], attempt: .failed("HTTP 500"), now: day(2))
        func daysAfterTheFirst(_ days: Double) -> Date { day(1).addingTimeInterval(days * 86_400) }
        // 30 days after day 1 to the second: nothing is old enough yet.
        #expect(try engine.pruneDeliveredWebhooks(now: daysAfterTheFirst(30)) == 0)
        #expect(
            try engine.pruneDeliveredWebhooks(now: daysAfterTheFirst(39), limit: 1) == 1, "at most the limit at a time")
        #expect(try engine.pruneDeliveredWebhooks(now: daysAfterTheFirst(39)) == 1)
        #expect(try engine.pruneDeliveredWebhooks(now: daysAfterTheFirst(39)) == 0)
        let left = try engine.webhookDeliveries(user: nil, status: nil)
        #expect(left.map(\.eventID) == ["evt_2", "evt_3", "evt_4"], "held, pending and the recent delivered one stay")
        #expect(left.map(\.status) == [.held, .pending, .delivered])
    }

    @Test(arguments: StoreBackend.allCases)
    func anEventAboutADeletedOrPurgedUserStillGoesOut(backend: StoreBackend) throws {
        let engine = try backend.webhookEngine("voice")
        let deleted = try engine.createGuest(device: nil, now: day(1)).id
        let purged = try engine.createGuest(device: nil, now: day(1)).id
        try engine.deleteUser(deleted, now: day(2))
        let report = try engine.purge(
            inactive: TimeSpan(amount: 1, unit: .days), includingUsersWithData: true, dryRun: false, now: day(9))
        #expect(report.purged.map(\.id) == [purged])
        #expect(try types(engine, user: deleted) == ["user.deleted"])
        #expect(try types(engine, user: purged) == ["user.purged"])
        #expect(try engine.webhookQueues().first { $0.name == "all" }?.pending == 2)
    }
}

@Suite("Webhook retry policy and signature")
struct WebhookPolicyTests {
    @Test func theDelayDoublesUpToAnHourWithAJitterFixedByTheDelivery() {
        for id in Int64(1)...50 {
            for attempts in 1...12 {
                let base = min(30 * pow(2, Double(attempts - 1)), 3600)
                let delay = WebhookRetryPolicy.delay(afterAttempts: attempts, delivery: id)
                #expect(delay >= base * 0.75 && delay < base * 1.25)
                #expect(delay == WebhookRetryPolicy.delay(afterAttempts: attempts, delivery: id))
            }
        }
        let spread = Set((Int64(1)...20).map { WebhookRetryPolicy.delay(afterAttempts: 3, delivery: $0) })
        #expect(spread.count > 15, "deliveries failing together are spread out")
        #expect(WebhookRetryPolicy(maxAttempts: 8).isHeld(attempts: 8))
        #expect(!WebhookRetryPolicy(maxAttempts: 8).isHeld(attempts: 7))
    }

    @Test func theSignatureIsStripesScheme() {
        // python3 -c 'import hmac,hashlib; print(hmac.new(b"whsec_test", b"1700000000." + b"{\"id\":\"evt_1\"}", hashlib.sha256).hexdigest())'
        let header = WebhookSignature.header(
            secret: Array("whsec_test".utf8), time: Date(timeIntervalSince1970: 1_700_000_000.9),
            body: Array(#"{"id":"evt_1"}"#.utf8))
        #expect(header == "t=1700000000,v1=c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925")
    }

    @Test func theProfileRefusesASecretInItsTextAndABadURL() throws {
        let text =
            try template("voice") + """

                webhooks:
                  endpoints:
                    - name: crm
                      url: http://hooks.example.com/x
                      events: [user.deleted, user.exploded]
                      secret: hunter2
                    - name: crm
                      url: https://user:pw@hooks.example.com/
                      events: ["*"]

                """
        do {
            _ = try ProfileLoader.parse(text, file: "voice.yaml")
            Issue.record("a profile with a secret in it loaded")
        } catch let error as InvalidProfileError {
            let message = error.description
            #expect(message.contains("writes its secret in the profile"))
            #expect(message.contains("secret_file: PATH or secret_env: VARIABLE"))
            #expect(message.contains("plain http:// to another machine"))
            #expect(message.contains("unknown event type 'user.exploded'"))
            #expect(message.contains("carries a user name or password"))
            #expect(message.contains("names 'crm' twice"))
            #expect(message.contains("has no secret"))
            #expect(!message.contains("hunter2"))
        }
    }
}
