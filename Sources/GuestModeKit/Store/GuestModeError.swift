import Foundation

/// The outcome classes of the command-line contract (DESIGN §3). The engine
/// reports every failure as one of these so the CLI can map it to an exit
/// status without knowing where it came from.
public enum FailureKind: String, Sendable, Codable, CaseIterable {
    case internalFailure = "internal"
    case needsAccount = "needs_account"
    case needsPremium = "needs_premium"
    case meterExhausted = "meter_exhausted"
    case nothingDue = "nothing_due"
    case conflict
    case usage
    case badData = "bad_data"
    case notFound = "not_found"
    case cannotCreate = "cannot_create"
    case ioError = "io_error"
    case tryAgainLater = "try_again_later"

    public var exitStatus: Int32 {
        switch self {
        case .internalFailure: 1
        case .needsAccount: 10
        case .needsPremium: 11
        case .meterExhausted: 12
        case .nothingDue: 13
        case .conflict: 14
        case .usage: 64
        case .badData: 65
        case .notFound: 66
        case .cannotCreate: 73
        case .ioError: 74
        case .tryAgainLater: 75
        }
    }
}

/// An engine failure: what class it is, a stable machine-readable code and a
/// message for people that says what went wrong, where, and how to fix it.
public struct GuestModeError: Error, CustomStringConvertible, Sendable, Equatable {
    public var kind: FailureKind
    /// A stable snake_case identifier for scripts, e.g. `identity_already_exists`.
    public var code: String
    public var message: String

    public init(_ kind: FailureKind, code: String? = nil, _ message: String) {
        self.kind = kind
        self.code = code ?? kind.rawValue
        self.message = message
    }

    public var description: String { message }

    static func notFound(_ message: String, code: String = "not_found") -> GuestModeError {
        GuestModeError(.notFound, code: code, message)
    }

    static func badData(_ message: String, code: String = "bad_data") -> GuestModeError {
        GuestModeError(.badData, code: code, message)
    }

    static func usage(_ message: String, code: String = "usage") -> GuestModeError {
        GuestModeError(.usage, code: code, message)
    }

    static func conflict(_ message: String, code: String = "conflict") -> GuestModeError {
        GuestModeError(.conflict, code: code, message)
    }
}
