import Foundation

/// A prompt the app shows: what the profile's prompt rules chose for this user now.
public struct Prompt: Codable, Sendable, Equatable {
    public struct Content: Codable, Sendable, Equatable {
        public var title: String
        public var message: String
        public var primaryAction: String
        public var secondaryAction: String
        public var style: String
        public var benefits: [String]

        enum CodingKeys: String, CodingKey {
            case title, message, style, benefits
            case primaryAction = "primary_action"
            case secondaryAction = "secondary_action"
        }
    }

    /// The prompt's context in the profile (what `recordPrompt` names).
    public var context: String
    public var priority: String
    /// The trigger that made it due, if one did.
    public var trigger: String?
    public var content: Content
}

/// Where a meter stands for the user in the current period.
public struct MeterStatus: Codable, Sendable, Equatable {
    public var meter: String
    public var unit: String
    public var tier: String
    /// `ok`, `warning`, `exhausted`, ... as the profile's levels name them.
    public var level: String
    public var used: Double
    /// nil when the tier has no allowance (unlimited).
    public var allowance: Double?
    public var remaining: Double?
    public var percentUsed: Double?

    enum CodingKeys: String, CodingKey {
        case meter, unit, tier, level, used, allowance, remaining
        case percentUsed = "percent_used"
    }
}

/// What a call the server may refuse did: done, with its value, or refused with what to show.
public enum Outcome<Value: Sendable>: Sendable {
    case done(Value)
    /// `needs_account` (403): a guest may not do this; show the prompt (nil when none is due).
    case needsAccount(Prompt?)
    /// `needs_premium` (402): the user's tier may not do this.
    case needsPremium(Prompt?)
    /// `meter_exhausted` (402): the meter has too little left.
    case meterExhausted(MeterStatus, Prompt?)

    /// The value when done, else nil.
    public var value: Value? {
        if case let .done(value) = self { return value }
        return nil
    }
}

extension Outcome: Equatable where Value: Equatable {}

/// A record written (`PUT /v1/users/{user}/records/{collection}/{key}`).
public struct RecordWrite: Sendable, Equatable {
    /// `created` or `updated`.
    public var outcome: String
    /// True when the record replaced one of the same key.
    public var replacement: Bool
}

/// A meter use recorded (`POST /v1/users/{user}/meters/{meter}/use`).
public struct MeterUse: Sendable, Equatable {
    public var recorded: Bool
    /// True when the server had this use already (the same Idempotency-Key or id).
    public var duplicate: Bool
    /// True when recorded in full past the allowance (`overage: allow`).
    public var overage: Bool
    public var status: MeterStatus
}

/// An event tracked (`POST /v1/users/{user}/events`).
public struct TrackedEvent: Sendable, Equatable {
    public var action: String
    /// False when the server had this event already.
    public var counted: Bool
    /// The user's total of `action` now.
    public var total: Double
}

/// A backup the server made of the user and keeps (`POST /v1/users/{user}/backups`), which a device
/// that signs in later may pull back.
public struct KeptBackup: Sendable, Equatable {
    /// The archive's name on the server.
    public var name: String
    /// Its place among the user's kept archives; the highest is the latest.
    public var sequence: Int
    /// Its size in bytes.
    public var size: Int
}

/// An identity linked to the signed-in user (`POST /v1/users/{user}/identities`).
public struct IdentityLink: Sendable, Equatable {
    public var provider: String
    public var subject: String?
    public var changed: Bool
    /// The user's state now: `linked` once an identity is.
    public var state: String
}

/// How a merge settles records both users have.
public enum MergePolicy: String, Sendable {
    case keepGuest = "keep-guest"
    case keepAccount = "keep-account"
    case union
}

/// A guest merged into the account, or what a merge would do (`dryRun`).
public struct MergeResult: Sendable, Equatable {
    public var accountUserID: String
    public var guestUserID: String
    public var dryRun: Bool
    public var recordsMoved: Double
    public var activityMoved: Double
    public var conflicts: Int
}

/// A guest migrated into the account (`steps` done), or its plan (`dryRun`).
public struct MigrationResult: Sendable, Equatable {
    public var sourceUserID: String
    public var dryRun: Bool
    /// `done` for a finished migration; nil for a plan.
    public var status: String?
    public var steps: [String]
}

/// What the client cannot do, or the server refused.
public enum GuestModeClientError: Error, Sendable, CustomStringConvertible {
    /// No session: sign in first (or the session was signed out, deleted, or revoked).
    case signedOut
    /// The server refused the call: its HTTP status, its error code and message, and the prompt it
    /// chose when the code is a refusal (`needs_account`, `needs_premium`, `meter_exhausted`).
    case server(status: Int, code: ErrorCode, message: String, prompt: Prompt?)
    /// The session's refresh token was refused (`refresh_token_reused`, `refresh_token_invalid`); the
    /// stored session is forgotten.
    case sessionRevoked(ErrorCode)
    /// A call the client cannot make as asked.
    case usage(String)
    /// An answer the document does not describe.
    case unexpectedAnswer(operation: String, status: Int?)

    public var description: String {
        switch self {
        case .signedOut: "not signed in"
        case let .usage(message): message
        case let .server(status, code, message, _): "\(status) \(code): \(message)"
        case let .sessionRevoked(code): "the session was revoked (\(code)): sign in again"
        case let .unexpectedAnswer(operation, status):
            "\(operation): an answer the document does not describe (\(status.map(String.init) ?? "no status"))"
        }
    }

    /// The server's error code, if the server answered one.
    public var code: ErrorCode? {
        switch self {
        case let .server(_, code, _, _): code
        case let .sessionRevoked(code): code
        default: nil
        }
    }
}

/// Converts between two Codable types of the same JSON (a generated type and a public one).
enum Reencode {
    static func convert<T: Decodable>(_ value: some Encodable, to type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }
}
