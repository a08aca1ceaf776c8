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
        let credential = try await services.credential(of: request)
        let input = await Result(awaiting: {
            (
                collection: try RequestInput.segment("collection", of: context),
                key: try RequestInput.segment("key", of: context),
                bytes: try await RequestInput.body(of: request, context: context)
            )
        })
        let result = try await services.perform(as: credential, context: context, writing: true, input: input) {
            engine, now, _, userID, input in
            try engine.putRecord(
                user: userID, collection: input.collection, key: input.key, jsonBytes: Data(input.bytes), now: now)
        }
        if let refusal = result.refusal { return try Reply.refusal(refusal, result: result).response }
        return try Reply.document(result, status: result.isReplacement ? .ok : .created).response
    }

    @Sendable func get(_ request: Request, context: ServerContext) async throws -> Response {
        let credential = try await services.credential(of: request)
        let input = Result {
            (
                collection: try RequestInput.segment("collection", of: context),
                key: try RequestInput.segment("key", of: context)
            )
        }
        let record = try await services.perform(as: credential, context: context, writing: false, input: input) {
            engine, _, _, userID, input in
            try engine.record(user: userID, collection: input.collection, key: input.key)
        }
        return try Reply.document(record).response
    }

    /// The most records one answer holds, and how many it holds without `?limit=`: a collection with no
    /// cap has no end, and a record may be up to the body cap, while an answer is built whole in memory.
    static let largestPage = 1000

    /// `record list`, a page at a time: `?after=KEY` (the last key of the page before) and `?limit=`
    /// (at most and by default `largestPage`); an answer of fewer than the limit is the last page.
    @Sendable func list(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let collection = try RequestInput.segment("collection", of: context)
        let after = try RequestInput.query("after", of: request)
        let limit = try RequestInput.pageLimit(of: request, largest: Self.largestPage)
        let records = try await services.perform { engine, _ in
            try engine.records(user: userID, collection: collection, after: after, limit: limit)
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
        return try Reply.document(RecordDeletion(userID: userID, collection: collection, key: key)).response
    }
}
