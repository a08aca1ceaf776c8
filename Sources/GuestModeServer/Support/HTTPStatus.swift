import GuestModeKit
import Hummingbird

/// The one place a failure becomes an HTTP status (guestmode-serve(1),
/// STATUSES), as `Sources/GuestModeCommandLine/ExitStatus.swift` is for exit
/// statuses: a few codes whose meaning is HTTP's own, then the failure's kind.
extension GuestModeError {
    var httpStatus: HTTPResponse.Status {
        switch code {
        case .unauthorized, .refreshTokenInvalid, .refreshTokenReused: return .unauthorized
        // An ID token that fails a check is a credential refused, as an access token is.
        case .idTokenInvalid, .idTokenExpired, .idTokenIssuerMismatch, .idTokenAudienceMismatch, .idTokenNonceMismatch:
            return .unauthorized
        // A signed purchase that does not verify is a credential refused: the signature is the credential.
        case .purchaseInvalid: return .unauthorized
        case .insufficientScope, .storeEnvironmentRefused: return .forbidden
        case .bodyTooLarge: return .contentTooLarge
        case .rateLimited: return .tooManyRequests
        // The connection layer's refusals (ConnectionGuard): each is HTTP's own status for it.
        case .requestTimeout: return .requestTimeout
        case .lengthRequired: return .lengthRequired
        case .unsupportedTransferEncoding: return .notImplemented
        // As Stripe and the IETF's Idempotency-Key draft answer a key reused for another request.
        case .idempotencyKeyReused: return .unprocessableContent
        default: return kind.httpStatus
        }
    }
}

extension FailureKind {
    var httpStatus: HTTPResponse.Status {
        switch self {
        case .internalFailure: .internalServerError
        case .needsAccount: .forbidden
        case .needsPremium: .paymentRequired
        case .meterExhausted: .paymentRequired
        // The engine answers "nothing due" with a document, never a failure.
        case .nothingDue: .ok
        case .conflict: .conflict
        case .usage: .badRequest
        case .badData: .unprocessableContent
        case .notFound: .notFound
        case .cannotCreate: .internalServerError
        case .ioError: .internalServerError
        case .tryAgainLater: .serviceUnavailable
        }
    }
}

extension HTTPResponse.Status {
    /// 402: swift-http-types names no constant for it.
    static let paymentRequired = HTTPResponse.Status(code: 402, reasonPhrase: "Payment Required")
}

/// A failure answers itself, as Hummingbird's own errors do: its status and
/// `{"error":{"code","message"}}` with the caller's message (`FailureMiddleware`
/// turns every other error into one first).
extension GuestModeError: HTTPResponseError {
    public var status: HTTPResponse.Status { httpStatus }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Reply.failure(self).response
    }
}
