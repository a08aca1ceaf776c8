import Foundation
import GuestModeKit

/// One RevenueCat webhook body (`{"api_version": "1.0", "event": {…}}`), read at the trust boundary:
/// the members guestmode acts on are checked for their JSON type, every other member is ignored
/// (RevenueCat adds fields without notice), and a member of the wrong type is refused with its name.
///
/// ```swift
/// let event = try RevenueCatEvent(json: body)
/// // event.type == .initialPurchase, event.expiration == 2026-12-01T10:00:00Z
/// ```
package struct RevenueCatEvent: Sendable, Equatable {
    /// What RevenueCat says happened (`type`); a type guestmode does not know is kept as `.other`.
    package enum Kind: Sendable, Equatable {
        case test, initialPurchase, renewal, productChange, cancellation, uncancellation
        case nonRenewingPurchase, billingIssue, expiration, transfer, subscriptionExtended
        /// SUBSCRIPTION_PAUSED, INVOICE_ISSUANCE, TEMPORARY_ENTITLEMENT_GRANT and whatever comes next.
        case other(String)

        init(_ text: String) {
            switch text {
            case "TEST": self = .test
            case "INITIAL_PURCHASE": self = .initialPurchase
            case "RENEWAL": self = .renewal
            case "PRODUCT_CHANGE": self = .productChange
            case "CANCELLATION": self = .cancellation
            case "UNCANCELLATION": self = .uncancellation
            case "NON_RENEWING_PURCHASE": self = .nonRenewingPurchase
            case "BILLING_ISSUE": self = .billingIssue
            case "EXPIRATION": self = .expiration
            case "TRANSFER": self = .transfer
            case "SUBSCRIPTION_EXTENDED": self = .subscriptionExtended
            default: self = .other(text)
            }
        }
    }

    /// The largest body read: an event with many subscriber attributes and experiments still fits.
    package static let maximumSize = 256 * 1024

    package var apiVersion: String
    /// `event.id`: what makes a retried delivery the same event.
    package var id: String
    /// `event.type` as sent.
    package var typeName: String
    package var type: Kind { Kind(typeName) }
    package var appUserID: String?
    package var originalAppUserID: String?
    package var aliases: [String]
    package var transferredFrom: [String]
    package var transferredTo: [String]
    /// `entitlement_ids`, or the older single `entitlement_id` when only that is sent.
    package var entitlementIDs: [String]
    package var productID: String?
    /// `period_type`: TRIAL, INTRO, NORMAL, PROMOTIONAL, PREPAID.
    package var periodType: String?
    package var purchasedAt: Date?
    package var expiration: Date?
    /// `event_timestamp_ms`: when RevenueCat saw the event, which orders the events of one purchase.
    package var timestamp: Date
    /// False for `environment: SANDBOX`.
    package var isProduction: Bool
    package var originalTransactionID: String?
    package var transactionID: String?
    package var store: String?
    package var cancelReason: String?
    package var gracePeriodExpiration: Date?

    /// The period is a free trial.
    package var isTrial: Bool { periodType == "TRIAL" }

    /// The ids that may name the guestmode user, in the order they are tried: `app_user_id`,
    /// `original_app_user_id`, then the aliases; each once.
    package var userCandidates: [String] {
        var seen = Set<String>()
        return ([appUserID, originalAppUserID].compactMap { $0 } + aliases).filter { seen.insert($0).inserted }
    }

    /// Parses `bytes` strictly (RFC 8259, no duplicate member) and reads the event from it.
    package init(json bytes: some Collection<UInt8>) throws {
        guard bytes.count <= Self.maximumSize else {
            throw GuestModeError(
                .bodyTooLarge, "the RevenueCat event is larger than \(Self.maximumSize / 1024) KiB")
        }
        let value: JSONValue
        do {
            value = try StrictJSON.parse(Data(bytes))
        } catch {
            throw GuestModeError(.invalidJson, "the RevenueCat event is not valid JSON: \(error)")
        }
        try self.init(value: value)
    }

    /// Reads an event already parsed.
    package init(value: JSONValue) throws {
        guard case let .object(body) = value else {
            throw GuestModeError(
                .invalidJson, "a RevenueCat event must be a JSON object, not \(value.kindDescription)")
        }
        let root = Members(body, path: "")
        apiVersion = try root.requiredString("api_version")
        // RevenueCat versions the body's shape by its major number; 1.x only adds members.
        guard apiVersion == "1" || apiVersion.hasPrefix("1.") else {
            throw GuestModeError(
                .invalidJson, "'api_version' is \(apiVersion.debugDescription); guestmode reads RevenueCat's 1.x events"
            )
        }
        guard case let .object(members)? = body["event"] else {
            throw body["event"] == nil
                ? GuestModeError(.invalidJson, "'event' is missing: a RevenueCat webhook body holds its event there")
                : GuestModeError(
                    .invalidJson, "'event' must be a JSON object, not \(body["event"]!.kindDescription)")
        }
        let event = Members(members, path: "event.")
        id = try event.requiredString("id")
        typeName = try event.requiredString("type")
        timestamp = try event.requiredTime("event_timestamp_ms")
        let environment = try event.requiredString("environment")
        switch environment {
        case "PRODUCTION": isProduction = true
        case "SANDBOX": isProduction = false
        default:
            throw GuestModeError(
                .invalidJson, "'event.environment' is \(environment.debugDescription), not PRODUCTION or SANDBOX")
        }
        appUserID = try event.string("app_user_id")
        originalAppUserID = try event.string("original_app_user_id")
        aliases = try event.strings("aliases")
        transferredFrom = try event.strings("transferred_from")
        transferredTo = try event.strings("transferred_to")
        entitlementIDs = try event.strings("entitlement_ids")
        if entitlementIDs.isEmpty, let single = try event.string("entitlement_id") { entitlementIDs = [single] }
        productID = try event.string("product_id")
        periodType = try event.string("period_type")
        purchasedAt = try event.time("purchased_at_ms")
        expiration = try event.time("expiration_at_ms")
        originalTransactionID = try event.string("original_transaction_id")
        transactionID = try event.string("transaction_id")
        store = try event.string("store")
        cancelReason = try event.string("cancel_reason")
        gracePeriodExpiration = try event.time("grace_period_expiration_at_ms")
        try checkMembersTheTypeNeeds()
    }

    /// What an event of each type must carry for guestmode to act on it, refused here rather than
    /// found missing halfway through.
    private func checkMembersTheTypeNeeds() throws {
        switch type {
        case .transfer:
            if transferredFrom.isEmpty { throw Self.missing("transferred_from", for: typeName) }
            if transferredTo.isEmpty { throw Self.missing("transferred_to", for: typeName) }
        case .cancellation where cancelReason == "CUSTOMER_SUPPORT":
            // A refund revokes the plan now, whatever its end was.
            if userCandidates.isEmpty { throw Self.missing("app_user_id", for: typeName) }
        case .initialPurchase, .renewal, .productChange, .cancellation, .uncancellation, .subscriptionExtended:
            if userCandidates.isEmpty { throw Self.missing("app_user_id", for: typeName) }
            if expiration == nil { throw Self.missing("expiration_at_ms", for: typeName) }
        case .nonRenewingPurchase, .billingIssue, .expiration:
            if userCandidates.isEmpty { throw Self.missing("app_user_id", for: typeName) }
        case .test, .other:
            break
        }
    }

    private static func missing(_ member: String, for type: String) -> GuestModeError {
        GuestModeError(.invalidJson, "'event.\(member)' is missing or empty; a \(type) event carries it")
    }
}

/// An object's members, read by name with the JSON type each must have; `null` is the same as absent.
private struct Members {
    let members: [String: JSONValue]
    /// `event.`: the prefix messages name a member with.
    let path: String

    init(_ members: [String: JSONValue], path: String) {
        self.members = members
        self.path = path
    }

    private func present(_ name: String) -> JSONValue? {
        guard let value = members[name], value != .null else { return nil }
        return value
    }

    private func mismatch(_ name: String, _ expected: String, _ value: JSONValue) -> GuestModeError {
        GuestModeError(.invalidJson, "'\(path)\(name)' must be \(expected), not \(value.kindDescription)")
    }

    func string(_ name: String) throws -> String? {
        guard let value = present(name) else { return nil }
        guard case let .string(text) = value else { throw mismatch(name, "a string", value) }
        try TextRule.check(text, what: "'\(path)\(name)'")
        return text
    }

    func requiredString(_ name: String) throws -> String {
        guard let text = try string(name), !text.isEmpty else {
            throw GuestModeError(.invalidJson, "'\(path)\(name)' is missing or empty")
        }
        return text
    }

    func strings(_ name: String) throws -> [String] {
        guard let value = present(name) else { return [] }
        guard case let .array(elements) = value else { throw mismatch(name, "an array of strings", value) }
        return try elements.enumerated().map { index, element in
            guard case let .string(text) = element else {
                throw GuestModeError(
                    .invalidJson, "'\(path)\(name)[\(index)]' must be a string, not \(element.kindDescription)")
            }
            try TextRule.check(text, what: "'\(path)\(name)[\(index)]'")
            return text
        }
    }

    /// Milliseconds since 1970 as a whole JSON number, from 1970 to 9999.
    func time(_ name: String) throws -> Date? {
        guard let value = present(name) else { return nil }
        guard case let .number(text) = value else { throw mismatch(name, "a number of milliseconds", value) }
        guard let milliseconds = Int64(text), (0...253_402_300_799_999).contains(milliseconds) else {
            throw GuestModeError(
                .invalidJson,
                "'\(path)\(name)' is \(text); it must be whole milliseconds since 1970-01-01T00:00:00Z, before the year 10000"
            )
        }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    func requiredTime(_ name: String) throws -> Date {
        guard let time = try time(name) else {
            throw GuestModeError(.invalidJson, "'\(path)\(name)' is missing")
        }
        return time
    }
}
