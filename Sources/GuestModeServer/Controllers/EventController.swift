import Foundation
import GuestModeKit
import Hummingbird

/// `track` and `counters` (`/v1/users/{user}/events`, `/v1/users/{user}/counters`).
struct EventController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .post(":user/events", use: track)
            .get(":user/counters", use: counters)
    }

    /// `{"action": "app_opened", "count": 1, "id": "open-7", "props": {"screen": "home"}}`.
    struct TrackBody: Decodable {
        var action: String
        var count: Int?
        var id: String?
        var props: RawJSON?
    }

    /// Without "id" the Idempotency-Key names the event, so a retried report counts once.
    @Sendable func track(_ request: Request, context: ServerContext) async throws -> Response {
        let (caller, userID) = try await services.user(of: request, context: context)
        let bytes = try await RequestInput.body(of: request, context: context)
        let body = try StrictRequestDecoder.decode(TrackBody.self, from: bytes)
        if let count = body.count, !(1...1_000_000_000).contains(count) {
            throw GuestModeError(.invalidEvent, "'count' must be a whole number from 1 to 1000000000, not \(count)")
        }
        let key = try body.id ?? RequestInput.idempotencyKey(of: request)
        let properties = try Self.properties(body.props?.value)
        return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
            let result = try engine.track(
                TrackedEvent(
                    user: userID, action: body.action, at: now, count: body.count ?? 1, idempotencyKey: key,
                    properties: properties),
                now: now)
            return try Reply.document(result)
        }.response
    }

    /// `counters --json`.
    @Sendable func counters(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let counters = try await services.perform { engine, _ in try engine.counters(user: userID) }
        return try Reply.document(CountersDocument(user: userID, counters: counters)).response
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
