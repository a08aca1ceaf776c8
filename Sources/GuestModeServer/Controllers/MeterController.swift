import Foundation
import GuestModeKit
import Hummingbird

/// `meter status`, `meter check` (GET reads; POST raises a refusal's prompt), `meter use`, `meter grants` and `meter grant`
/// (`/v1/users/{user}/meters`).
struct MeterController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .get(use: statuses)
            .get(":meter", use: status)
            .get(":meter/check", use: check)
            .post(":meter/check", use: raisingCheck)
            .post(":meter/use", use: use)
            .get(":meter/grants", use: grants)
            .post(":meter/grants", use: grant)
    }

    /// `{"amount": 12.5, "id": "call-7", "overage": "allow"}`.
    struct UseBody: Decodable {
        var amount: DecimalText
        var id: String?
        var overage: String?
    }

    /// `{"amount": 20}`; empty, or no "amount", for "anything left".
    struct CheckBody: Decodable {
        var amount: DecimalText?
    }

    /// `{"amount": 30, "expires": "P30D"` or `"until": "2027-01-01T00:00:00Z", "reason": "referral", "id": "r-1"}`.
    struct GrantBody: Decodable {
        var amount: DecimalText
        var expires: String?
        var until: String?
        var reason: String?
        var id: String?
    }

    /// `meter status`: every meter of the profile, from one snapshot.
    @Sendable func statuses(_ request: Request, context: ServerContext) async throws -> Response {
        let credential = try await services.credential(of: request)
        let statuses = try await services.perform(as: credential, context: context) { engine, now, _, userID in
            try engine.meterStatuses(user: userID, now: now)
        }
        return try Reply.document(statuses).response
    }

    /// `meter status USER METER`.
    @Sendable func status(_ request: Request, context: ServerContext) async throws -> Response {
        let credential = try await services.credential(of: request)
        let meter = Result { try RequestInput.segment("meter", of: context) }
        let status = try await services.perform(as: credential, context: context, writing: false, input: meter) {
            engine, now, _, userID, meter in
            try engine.meterStatus(user: userID, meter: meter, now: now)
        }
        return try Reply.document(status).response
    }

    /// The gate before a paid call; `?amount=` (default: anything left). A pure read: a refusal raises
    /// nothing (the POST does).
    @Sendable func check(_ request: Request, context: ServerContext) async throws -> Response {
        let credential = try await services.credential(of: request)
        let input = Result {
            (
                meter: try RequestInput.segment("meter", of: context),
                amount: try RequestInput.query("amount", of: request).map(MeterAmount.parse)
            )
        }
        let decision = try await services.perform(as: credential, context: context, writing: false, input: input) {
            engine, now, _, userID, input in
            try engine.checkMeter(user: userID, meter: input.meter, amount: input.amount, now: now)
        }
        if let refusal = decision.refusal { return try Reply.refusal(refusal, result: decision).response }
        return try Reply.document(decision).response
    }

    /// The gate as a write (`meter check --raise-prompt`): the GET's answer, but a refusal raises the
    /// meter's prompt triggers and webhook and answers with the prompt they make due. The amount comes
    /// from `?amount=` or the body's "amount", not both.
    @Sendable func raisingCheck(_ request: Request, context: ServerContext) async throws -> Response {
        let (caller, userID) = try await services.user(of: request, context: context)
        let meter = try RequestInput.segment("meter", of: context)
        let bytes = try await RequestInput.body(of: request, context: context)
        let body = try StrictRequestDecoder.decode(CheckBody.self, from: bytes)
        let query = try RequestInput.query("amount", of: request)
        if query != nil && body.amount != nil {
            throw GuestModeError(.usage, "give the amount in the query (?amount=) or in the body, not both")
        }
        let amount = try (query ?? body.amount?.text).map(MeterAmount.parse)
        return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
            let decision = try engine.checkMeterRaisingPrompt(user: userID, meter: meter, amount: amount, now: now)
            if let refusal = decision.refusal { return try Reply.refusal(refusal, result: decision) }
            return try Reply.document(decision)
        }.response
    }

    /// Without "id" the Idempotency-Key names the use, so a retried call is recorded once.
    @Sendable func use(_ request: Request, context: ServerContext) async throws -> Response {
        // Without the header nothing is kept: the key is looked up in the use's own transaction.
        guard request.headers[fields: .idempotencyKey].isEmpty else {
            return try await useOnce(request, context: context)
        }
        let credential = try await services.credential(of: request)
        let input = await Result(awaiting: {
            let bytes = try await RequestInput.body(of: request, context: context)
            let body = try StrictRequestDecoder.decode(UseBody.self, from: bytes)
            return UseInput(
                meter: try RequestInput.segment("meter", of: context), amount: try MeterAmount.parse(body.amount.text),
                id: body.id, overage: try Self.overage(body.overage))
        })
        let note = FailureNote.current
        return try await services.perform(as: credential, context: context, writing: true, input: input) {
            engine, now, _, userID, input in
            try FailureNote.$current.withValue(note) {
                let result = try engine.useMeter(
                    user: userID, meter: input.meter, amount: input.amount, key: input.id, overage: input.overage,
                    now: now)
                if let refusal = result.refusal { return try Reply.refusal(refusal, result: result) }
                return try Reply.document(result)
            }
        }.response
    }

    /// What a use asks for, read from the path and the body.
    private struct UseInput: Sendable {
        var meter: String
        var amount: MeterAmount
        var id: String?
        var overage: MeterOverage?
    }

    private static func overage(_ text: String?) throws -> MeterOverage? {
        try text.map { text in
            guard let overage = MeterOverage(rawValue: text) else {
                throw GuestModeError(.usage, "'overage' is allow or refuse, not '\(text)'")
            }
            return overage
        }
    }

    /// `use` with an Idempotency-Key: the answer is kept for it.
    private func useOnce(_ request: Request, context: ServerContext) async throws -> Response {
        let (caller, userID) = try await services.user(of: request, context: context)
        let meter = try RequestInput.segment("meter", of: context)
        let bytes = try await RequestInput.body(of: request, context: context)
        let body = try StrictRequestDecoder.decode(UseBody.self, from: bytes)
        let amount = try MeterAmount.parse(body.amount.text)
        let headerKey = try RequestInput.idempotencyKey(of: request)
        let overage = try Self.overage(body.overage)
        return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
            let result = try engine.useMeter(
                user: userID, meter: meter, amount: amount, key: body.id ?? headerKey, overage: overage, now: now)
            if let refusal = result.refusal { return try Reply.refusal(refusal, result: result) }
            return try Reply.document(result)
        }.response
    }

    /// `meter grants`: the user's own grants.
    @Sendable func grants(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let meter = try RequestInput.segment("meter", of: context)
        let grants = try await services.perform { engine, now in
            try engine.meterGrants(user: userID, meter: meter, now: now)
        }
        return try Reply.document(grants).response
    }

    /// `meter grant`: what billing and support do, with an admin key. Without "id" the
    /// Idempotency-Key names the grant.
    @Sendable func grant(_ request: Request, context: ServerContext) async throws -> Response {
        let caller = try await services.caller(of: request)
        try caller.requireKey(.admin)
        let userID = try RequestInput.segment("user", of: context)
        let meter = try RequestInput.segment("meter", of: context)
        let bytes = try await RequestInput.body(of: request, context: context)
        let body = try StrictRequestDecoder.decode(GrantBody.self, from: bytes)
        let amount = try MeterAmount.parse(body.amount.text)
        let (expires, until) = try RequestInput.term(
            span: body.expires, named: "expires", example: "P30D, 30d", until: body.until)
        let expiry: MeterGrantExpiry = expires.map { .after($0) } ?? until.map { .at($0) } ?? .never
        let key = try body.id ?? RequestInput.idempotencyKey(of: request)
        return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
            try Reply.document(
                engine.grantMeter(
                    user: userID, meter: meter, amount: amount, expiry: expiry, reason: body.reason, key: key, now: now)
            )
        }.response
    }
}
