import Foundation
import GuestModeKit
import GuestModePurchases
import Hummingbird
import Testing

@testable import GuestModeServer

/// RevenueCat's event read at the trust boundary, and its route answered in process.
@Suite("RevenueCat events")
struct RevenueCatEventTests {
    static let documented = """
        {"event":{"event_timestamp_ms":1658726378679,"product_id":"com.subscription.weekly","period_type":"NORMAL",
        "purchased_at_ms":1658726374000,"expiration_at_ms":1659331174000,"environment":"PRODUCTION",
        "entitlement_id":null,"entitlement_ids":["pro"],"presented_offering_id":null,
        "transaction_id":"123456789012345","original_transaction_id":"123456789012345","is_family_share":false,
        "country_code":"US","app_user_id":"1234567890","aliases":["$RCAnonymousID:8069238d6049ce87cc529853916d624c"],
        "original_app_user_id":"$RCAnonymousID:87c6049c58069238dce29853916d624c","currency":"USD","price":4.99,
        "price_in_purchased_currency":4.99,"subscriber_attributes":{"$email":{"updated_at_ms":1662955084635,
        "value":"firstlast@gmail.com"}},"store":"APP_STORE","takehome_percentage":0.7,"offer_code":null,
        "type":"INITIAL_PURCHASE","id":"12345678-1234-1234-1234-123456789012","app_id":"1234567890",
        "experiments":[{"experiment_id":"prexp123","experiment_variant":"b","enrolled_at_ms":1658726378679}]},
        "api_version":"1.0"}
        """

    @Test("RevenueCat's own sample reads, its unknown members ignored")
    func documentedSample() throws {
        let event = try RevenueCatEvent(json: Array(Self.documented.utf8))
        #expect(event.id == "12345678-1234-1234-1234-123456789012")
        #expect(event.type == .initialPurchase)
        #expect(event.entitlementIDs == ["pro"])
        #expect(event.expiration == Date(timeIntervalSince1970: 1_659_331_174))
        #expect(event.timestamp == Date(timeIntervalSince1970: 1_658_726_378.679))
        #expect(event.isProduction)
        #expect(!event.isTrial)
        #expect(
            event.userCandidates == [
                "1234567890", "$RCAnonymousID:87c6049c58069238dce29853916d624c",
                "$RCAnonymousID:8069238d6049ce87cc529853916d624c",
            ])
        #expect(RevenueCatEffect(of: event) == .activate(until: event.expiration, trial: false))
    }

    static func body(_ event: String) -> [UInt8] {
        Array(#"{"api_version":"1.0","event":{\#(event)}}"#.utf8)
    }

    static let base = #""id":"e1","environment":"PRODUCTION","event_timestamp_ms":1000,"app_user_id":"u1""#

    @Test(
        "a member of the wrong type is refused with its name",
        arguments: [
            (
                #""type":"RENEWAL","expiration_at_ms":"5""#,
                "'event.expiration_at_ms' must be a number of milliseconds, not a string"
            ),
            (
                #""type":"RENEWAL","expiration_at_ms":1.5"#,
                "'event.expiration_at_ms' is 1.5; it must be whole milliseconds"
            ),
            (#""type":"RENEWAL","expiration_at_ms":-1"#, "'event.expiration_at_ms' is -1"),
            (
                #""type":"RENEWAL","expiration_at_ms":5,"aliases":"u2""#,
                "'event.aliases' must be an array of strings, not a string"
            ),
            (
                #""type":"RENEWAL","expiration_at_ms":5,"aliases":["u2",3]"#,
                "'event.aliases[1]' must be a string, not a number"
            ),
            (
                #""type":"RENEWAL","expiration_at_ms":5,"entitlement_ids":{}"#,
                "'event.entitlement_ids' must be an array of strings, not an object"
            ),
            (#""type":"RENEWAL""#, "'event.expiration_at_ms' is missing or empty; a RENEWAL event carries it"),
            (#""type":"TRANSFER","transferred_to":["u2"]"#, "'event.transferred_from' is missing or empty"),
            (#""type":7"#, "'event.type' must be a string, not a number"),
        ])
    func wrongTypes(member: String, message: String) throws {
        let error = #expect(throws: GuestModeError.self) {
            try RevenueCatEvent(json: Self.body(Self.base + "," + member))
        }
        #expect(error?.code == .invalidJson)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
    }

    @Test("a body that is no RevenueCat event is refused")
    func notAnEvent() throws {
        for (body, message) in [
            ("[]", "must be a JSON object, not an array"),
            (#"{"event":{}}"#, "'api_version' is missing"),
            (#"{"api_version":"2.0","event":{}}"#, "guestmode reads RevenueCat's 1.x events"),
            (#"{"api_version":"1.0"}"#, "'event' is missing"),
            (
                #"{"api_version":"1.0","event":{"id":"e","type":"TEST","event_timestamp_ms":1,"environment":"STAGING"}}"#,
                "'event.environment' is \"STAGING\", not PRODUCTION or SANDBOX"
            ),
            (#"{"api_version":"1.0","api_version":"1.0","event":{}}"#, "not valid JSON"),
        ] {
            let error = #expect(throws: GuestModeError.self) { try RevenueCatEvent(json: Array(body.utf8)) }
            #expect(error?.message.contains(message) == true, "\(body): \(error?.message ?? "")")
        }
    }

    @Test("what each type does")
    func effects() throws {
        func effect(_ members: String) throws -> RevenueCatEffect {
            RevenueCatEffect(of: try RevenueCatEvent(json: Self.body(Self.base + "," + members)))
        }
        let end = Date(timeIntervalSince1970: 5)
        #expect(
            try effect(#""type":"RENEWAL","expiration_at_ms":5000,"period_type":"TRIAL""#)
                == .activate(until: end, trial: true))
        #expect(
            try effect(#""type":"CANCELLATION","expiration_at_ms":5000,"cancel_reason":"UNSUBSCRIBE""#)
                == .activate(until: end, trial: false))
        #expect(
            try effect(#""type":"CANCELLATION","expiration_at_ms":5000,"cancel_reason":"CUSTOMER_SUPPORT""#) == .revoke)
        #expect(try effect(#""type":"NON_RENEWING_PURCHASE""#) == .activate(until: nil, trial: false))
        // A refund of a lifetime purchase carries no end: it is revoked all the same.
        #expect(try effect(#""type":"CANCELLATION","cancel_reason":"CUSTOMER_SUPPORT""#) == .revoke)
        #expect(try effect(#""type":"BILLING_ISSUE","grace_period_expiration_at_ms":5000"#) == .gracePeriod(until: end))
        #expect(try effect(#""type":"EXPIRATION""#) == .expire)
        #expect(
            try effect(#""type":"TRANSFER","transferred_from":["a"],"transferred_to":["b"]"#)
                == .transfer(from: ["a"], to: ["b"]))
        guard case .nothing = try effect(#""type":"TEST""#) else {
            throw GuestModeError(.internalFailure, "TEST changed something")
        }
        guard case .nothing = try effect(#""type":"SUBSCRIPTION_PAUSED""#) else {
            throw GuestModeError(.internalFailure, "SUBSCRIPTION_PAUSED changed something")
        }
    }

    @Test("the Authorization value is compared whole")
    func authorization() throws {
        let settings = try RevenueCatSettings(authorization: "Bearer s3cret", acceptsSandbox: false)
        #expect(settings.accepts("Bearer s3cret"))
        for other in [nil, "", "Bearer s3cre", "Bearer s3cret ", "bearer s3cret", "s3cret"] {
            #expect(!settings.accepts(other), "\(other ?? "nil")")
        }
        for bad in ["", " Bearer x", "Bearer x\n", String(repeating: "a", count: 4097), "Bearer é"] {
            #expect(throws: GuestModeError.self) { try RevenueCatSettings(authorization: bad, acceptsSandbox: false) }
        }
    }
}

@Suite("RevenueCat route in process")
struct RevenueCatRouteTests {
    static let body =
        #"{"api_version":"1.0","event":{"id":"t1","type":"TEST","event_timestamp_ms":1,"environment":"PRODUCTION"}}"#

    @Test("not configured: 404 revenuecat_not_configured")
    func notConfigured() async throws {
        let server = try await RouteTester(profile: "voice")
        let reply = try await server.request(
            .post, "/v1/integrations/revenuecat", body: Self.body, headers: [.authorization: "x"])
        #expect(reply.status == 404)
        #expect(reply.errorCode == "revenuecat_not_configured")
    }

    @Test("the header is checked before the body; a TEST is acknowledged")
    func authorizationFirst() async throws {
        let server = try await RouteTester(profile: "voice") {
            $0.revenueCat = try? RevenueCatSettings(authorization: "Bearer s3cret", acceptsSandbox: false)
        }
        let refused = try await server.request(.post, "/v1/integrations/revenuecat", body: "not json")
        #expect(refused.status == 401)
        #expect(refused.errorCode == "unauthorized")
        let wrong = try await server.request(
            .post, "/v1/integrations/revenuecat", body: "not json", headers: [.authorization: "Bearer s3cre"])
        #expect(wrong.status == 401)
        let bad = try await server.request(
            .post, "/v1/integrations/revenuecat", body: "not json", headers: [.authorization: "Bearer s3cret"])
        #expect(bad.status == 422)
        #expect(bad.errorCode == "invalid_json")
        let large = try await server.request(
            .post, "/v1/integrations/revenuecat", body: String(repeating: " ", count: 300 * 1024),
            headers: [.authorization: "Bearer s3cret"])
        #expect(large.status == 413)
        let test = try await server.request(
            .post, "/v1/integrations/revenuecat", body: Self.body, headers: [.authorization: "Bearer s3cret"])
        #expect(test.status == 200, "\(test.body)")
        #expect(test.object["outcome"] as? String == "ignored")
        #expect(test.object["event_id"] as? String == "t1")
    }
}
