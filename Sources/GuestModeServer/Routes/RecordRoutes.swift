import Foundation
import GuestModeKit
import Hummingbird

enum RecordRoutes {
    static func add(to router: ServerRouter, _ services: Services) {
        // `record put`: the body is the record. A put is idempotent by itself (the same key, the same data).
        router.put("/v1/users/:user/records/:collection/:key") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let collection = try RequestInput.segment("collection", of: context)
            let key = try RequestInput.segment("key", of: context)
            let bytes = try await RequestInput.body(of: request, limit: services.bodyLimit)
            let (result, prompt) = try await services.perform { engine, now -> (PutResult, PromptOffer?) in
                let result = try engine.putRecord(
                    user: userID, collection: collection, key: key, jsonBytes: Data(bytes), now: now)
                guard result.outcome != .allowed else { return (result, nil) }
                return (
                    result,
                    try engine.promptRaised(byRefusalIn: collection, outcome: result.outcome, user: userID, now: now)
                )
            }
            let message = "\(describe(result.limit)) is at its cap; nothing was stored"
            let refusal: GuestModeError
            switch result.outcome {
            case .allowed: return try Reply.document(result, status: result.isReplacement ? .ok : .created).response
            case .needsAccount: refusal = GuestModeError(.needsAccount, message)
            case .needsPremium: refusal = GuestModeError(.needsPremium, message)
            }
            return try Reply.refusal(refusal, prompt: prompt, result: result).response
        }

        // `record get`.
        router.get("/v1/users/:user/records/:collection/:key") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let collection = try RequestInput.segment("collection", of: context)
            let key = try RequestInput.segment("key", of: context)
            let record = try await services.perform { engine, _ in
                try engine.record(user: userID, collection: collection, key: key)
            }
            return try Reply.document(record).response
        }

        // `record list`.
        router.get("/v1/users/:user/records/:collection") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let collection = try RequestInput.segment("collection", of: context)
            let records = try await services.perform { engine, _ in
                try engine.records(user: userID, collection: collection)
            }
            return try Reply.document(records).response
        }

        // `record delete`.
        router.delete("/v1/users/:user/records/:collection/:key") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let collection = try RequestInput.segment("collection", of: context)
            let key = try RequestInput.segment("key", of: context)
            try await services.perform { engine, now in
                try engine.deleteRecord(user: userID, collection: collection, key: key, now: now)
            }
            return try Reply.document(RecordDeletion(userId: userID, collection: collection, key: key)).response
        }
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
