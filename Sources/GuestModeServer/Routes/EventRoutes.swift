import Foundation
import GuestModeKit
import Hummingbird

enum EventRoutes {
    static func add(to router: ServerRouter, _ services: Services) {
        // `track`: {"action": "app_opened", "count": 1, "id": "open-7", "props": {"screen": "home"}};
        // without "id" the Idempotency-Key names the event, so a retried report counts once.
        router.post("/v1/users/:user/events") { request, context -> Response in
            let (caller, userID) = try await services.user(of: request, context: context)
            let bytes = try await RequestInput.body(of: request, limit: services.bodyLimit)
            let body = try RequestInput.object(bytes)
            let action = try body.requiredText("action")
            let count = try body.integer("count", in: 1...1_000_000_000, code: .invalidEvent)
            let key = try body.text("id") ?? (try RequestInput.idempotencyKey(of: request))
            let properties = try Self.properties(body["props"])
            return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
                let result = try engine.track(
                    TrackedEvent(
                        user: userID, action: action, at: now, count: count ?? 1, idempotencyKey: key,
                        properties: properties),
                    now: now)
                return try Reply.document(result)
            }.response
        }
    }

    /// `counters --json`.
    static func addCounters(to router: ServerRouter, _ services: Services) {
        router.get("/v1/users/:user/counters") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let counters = try await services.perform { engine, _ in try engine.counters(user: userID) }
            return try Reply.document(CountersDocument(user: userID, counters: counters)).response
        }
    }

    /// An event's properties: strings and numbers, as the event log's `props`.
    private static func properties(_ value: JSONValue?) throws -> [String: EventProperty] {
        guard let value, value != .null else { return [:] }
        guard case let .object(members) = value else {
            throw GuestModeError(.invalidEvent, "'props' must be a JSON object")
        }
        return try members.mapValues { property in
            switch property {
            case let .string(text): return .string(text)
            case let .number(text): return .number(text)
            default: throw GuestModeError(.invalidEvent, "a property must be a string or a number")
            }
        }
    }
}

/// `counters --json`: the user and its totals by action.
private struct CountersDocument: Encodable, Sendable {
    var user: String
    var counters: [String: Int]
}
