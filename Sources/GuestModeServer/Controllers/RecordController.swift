import Foundation
import GuestModeKit
import Hummingbird

/// `record put`, `record get`, `record list` and `record delete`
/// (`/v1/users/{user}/records`).
struct RecordController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .put(":collection/:key", use: put)
            .get(":collection/:key", use: get)
            .get(":collection", use: list)
            .delete(":collection/:key", use: delete)
    }

    /// The body is the record. A put is idempotent by itself (the same key, the same data).
    @Sendable func put(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let collection = try RequestInput.segment("collection", of: context)
        let key = try RequestInput.segment("key", of: context)
        let bytes = try await RequestInput.body(of: request, limit: context.maxUploadSize)
        let (result, prompt) = try await services.perform { engine, now -> (PutResult, PromptOffer?) in
            let result = try engine.putRecord(
                user: userID, collection: collection, key: key, jsonBytes: Data(bytes), now: now)
            guard result.outcome != .allowed else { return (result, nil) }
            return (
                result,
                try engine.promptRaised(byRefusalIn: collection, outcome: result.outcome, user: userID, now: now)
            )
        }
        let message = "\(Self.describe(result.limit)) is at its cap; nothing was stored"
        let refusal: GuestModeError
        switch result.outcome {
        case .allowed: return try Reply.document(result, status: result.isReplacement ? .ok : .created).response
        case .needsAccount: refusal = GuestModeError(.needsAccount, message)
        case .needsPremium: refusal = GuestModeError(.needsPremium, message)
        }
        return try Reply.refusal(refusal, prompt: prompt, result: result).response
    }

    @Sendable func get(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let collection = try RequestInput.segment("collection", of: context)
        let key = try RequestInput.segment("key", of: context)
        let record = try await services.perform { engine, _ in
            try engine.record(user: userID, collection: collection, key: key)
        }
        return try Reply.document(record).response
    }

    @Sendable func list(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let collection = try RequestInput.segment("collection", of: context)
        let records = try await services.perform { engine, _ in
            try engine.records(user: userID, collection: collection)
        }
        return try Reply.document(records).response
    }

    @Sendable func delete(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let collection = try RequestInput.segment("collection", of: context)
        let key = try RequestInput.segment("key", of: context)
        try await services.perform { engine, now in
            try engine.deleteRecord(user: userID, collection: collection, key: key, now: now)
        }
        return try Reply.document(RecordDeletion(userId: userID, collection: collection, key: key)).response
    }

    /// `5/5 subscriptions (tier guest)`, as the command line says it.
    static func describe(_ limit: CollectionLimit) -> String {
        switch (limit.used, limit.cap) {
        case let (used?, cap?): "\(used)/\(cap) \(limit.collection) (tier \(limit.tier.rawValue))"
        case let (used?, nil): "\(used) \(limit.collection), no cap (tier \(limit.tier.rawValue))"
        case (nil, _): "no cap on \(limit.collection) (tier \(limit.tier.rawValue))"
        }
    }
}
