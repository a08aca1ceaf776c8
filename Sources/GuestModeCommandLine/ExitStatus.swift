import GuestModeKit

extension FailureKind {
    /// The exit status of a command that failed this way: the sysexits
    /// values where one fits, the guestmode-specific 10–14 for outcomes a
    /// script branches on (guestmode(1), EXIT STATUS). The engine knows
    /// kinds only; this is the one place they become numbers.
    package var exitStatus: Int32 {
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
