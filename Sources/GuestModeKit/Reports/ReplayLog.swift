import Foundation

/// One line of a replay log: an event in the `track --from` format, or, with
/// a `type`, a record put, a meter use, a plan change or a link to an
/// account (guestmode-replay(1)).
package enum ReplayLine: Sendable, Equatable {
    /// `{"user","action","at","count","id","props"}`: `track`.
    case event(TrackedEvent)
    /// `{"type":"record","user","collection","key","data","at"}`: `record put`.
    case record(user: String, collection: String, key: String, data: String, at: Date)
    /// `{"type":"meter","user","meter","amount","at","id","overage"}`: `meter use`.
    case meter(user: String, meter: String, amount: MeterAmount, key: String?, overage: MeterOverage?, at: Date)
    /// `{"type":"plan","user","plan","at","trial","until"}`: `plan grant`; with
    /// `"revoke":true`, `plan revoke`.
    case plan(user: String, plan: String, trial: TimeSpan?, until: Date?, revoke: Bool, at: Date)
    /// `{"type":"link","user","provider","subject","email","at"}`: `link`.
    case link(user: String, provider: String, subject: String, email: String?, at: Date)

    /// The user the line is about.
    package var user: String {
        switch self {
        case let .event(event): event.user
        case let .record(user, _, _, _, _), let .meter(user, _, _, _, _, _), let .plan(user, _, _, _, _, _),
            let .link(user, _, _, _, _):
            user
        }
    }

    /// When the line happened.
    package var at: Date {
        switch self {
        case let .event(event): event.at
        case let .record(_, _, _, _, at), let .meter(_, _, _, _, _, at), let .plan(_, _, _, _, _, at),
            let .link(_, _, _, _, at):
            at
        }
    }
}

/// Reading replay logs.
package enum ReplayLog {
    /// The line as a replay step, nil for a blank line; a line without
    /// `type` is decoded as `track --from` decodes it.
    package static func decode(_ line: Substring, defaultTime: Date) -> Result<ReplayLine?, EventLog.DecodeFailure> {
        // Most lines of a log are events: only a line that names a type is parsed here first.
        guard line.contains("\"type\"") else {
            return EventLog.decode(line, defaultTime: defaultTime).map { $0.map(ReplayLine.event) }
        }
        guard case .object(let object)? = try? StrictJSON.parse(line) else {
            return EventLog.decode(line, defaultTime: defaultTime).map { $0.map(ReplayLine.event) }
        }
        guard let type = object["type"] else {
            return EventLog.decode(line, defaultTime: defaultTime).map { $0.map(ReplayLine.event) }
        }
        do {
            return .success(try step(type, object, defaultTime: defaultTime))
        } catch let failure as EventLog.DecodeFailure {
            return .failure(failure)
        } catch {
            return .failure(EventLog.DecodeFailure("\(error)"))
        }
    }

    private static let fields: [String: Set<String>] = [
        "record": ["type", "user", "collection", "key", "data", "at"],
        "meter": ["type", "user", "meter", "amount", "at", "id", "overage"],
        "plan": ["type", "user", "plan", "at", "trial", "until", "revoke"],
        "link": ["type", "user", "provider", "subject", "email", "at"],
    ]

    private static func step(
        _ type: JSONValue, _ object: [String: JSONValue], defaultTime: Date
    ) throws -> ReplayLine {
        guard case .string(let kind) = type, let known = fields[kind] else {
            throw EventLog.DecodeFailure(
                "'type' must be \"record\", \"meter\", \"plan\" or \"link\" (or absent for an event)")
        }
        if let unknown = object.keys.filter({ !known.contains($0) }).min() {
            throw EventLog.DecodeFailure(
                "unknown field '\(unknown)' in a \(kind) line; expected \(known.subtracting(["type"]).sorted().joined(separator: ", "))"
            )
        }
        let user = try string("user", in: object)
        let at = try time("at", in: object) ?? defaultTime
        switch kind {
        case "record":
            guard let data = object["data"], case .object = data else {
                throw EventLog.DecodeFailure("'data' must be a JSON object: the record")
            }
            return .record(
                user: user, collection: try string("collection", in: object), key: try string("key", in: object),
                data: data.canonicalText, at: at)
        case "meter":
            guard case .number(let text)? = object["amount"] else {
                throw EventLog.DecodeFailure("'amount' must be a number")
            }
            let amount: MeterAmount
            do {
                amount = try MeterAmount(parsing: text)
            } catch {
                throw EventLog.DecodeFailure("'amount' \(text) is not an amount a meter takes: \(error)")
            }
            var overage: MeterOverage?
            if object["overage"] != nil {
                guard case .string(let text)? = object["overage"], let parsed = MeterOverage(rawValue: text) else {
                    throw EventLog.DecodeFailure("'overage' must be \"allow\" or \"refuse\"")
                }
                overage = parsed
            }
            return .meter(
                user: user, meter: try string("meter", in: object), amount: amount,
                key: object["id"] == nil ? nil : try string("id", in: object), overage: overage, at: at)
        case "link":
            return .link(
                user: user, provider: try string("provider", in: object), subject: try string("subject", in: object),
                email: object["email"] == nil ? nil : try string("email", in: object), at: at)
        default:
            var trial: TimeSpan?
            if object["trial"] != nil {
                switch TimeSpan.parse(try string("trial", in: object)) {
                case let .success(span): trial = span
                case let .failure(refusal): throw EventLog.DecodeFailure("'trial': \(refusal)")
                }
            }
            var revoke = false
            if let value = object["revoke"] {
                guard case .bool(let flag) = value else {
                    throw EventLog.DecodeFailure("'revoke' must be true or false")
                }
                revoke = flag
            }
            if revoke && (trial != nil || object["until"] != nil) {
                throw EventLog.DecodeFailure("a revoke takes no 'trial' or 'until'")
            }
            return .plan(
                user: user, plan: try string("plan", in: object), trial: trial, until: try time("until", in: object),
                revoke: revoke, at: at)
        }
    }

    private static func string(_ name: String, in object: [String: JSONValue]) throws -> String {
        guard case .string(let text)? = object[name], !text.isEmpty else {
            throw EventLog.DecodeFailure("'\(name)' must be a non-empty string")
        }
        return text
    }

    private static func time(_ name: String, in object: [String: JSONValue]) throws -> Date? {
        guard let value = object[name] else { return nil }
        guard case .string(let text) = value, let date = Timestamp.parse(text) else {
            throw EventLog.DecodeFailure("'\(name)' must be an ISO 8601 time such as 2026-11-22T09:30:00Z")
        }
        return date
    }
}
