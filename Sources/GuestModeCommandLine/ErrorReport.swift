import ArgumentParser
import Foundation
import GuestModeKit

/// Writes a failure the way guestmode(1) says (text or JSON on stderr) and
/// returns the exit status.
package func report(_ error: Error, isJSON: Bool) -> Int32 {
    let (code, message, status): (GuestModeError.Code, String, Int32)
    switch error {
    case let failure as GuestModeError:
        let hint = failure.code.hint.map { "; \($0)" } ?? ""
        (code, message, status) = (failure.code, failure.message + hint, failure.kind.exitStatus)
    case let invalid as InvalidProfileError:
        (code, message, status) = (.invalidProfile, invalid.description, FailureKind.badData.exitStatus)
    case let exit as ExitCode:
        return exit.rawValue
    default:
        (code, message, status) = (
            .internalFailure, "internal failure: \(error)", FailureKind.internalFailure.exitStatus
        )
    }
    let text: String
    if isJSON {
        struct Envelope: Encodable { var error: Body }
        struct Body: Encodable { var code: GuestModeError.Code; var message: String }
        text = (try? Output.encode(Envelope(error: Body(code: code, message: message)))) ?? "{}"
    } else if error is InvalidProfileError {
        text = message
    } else {
        text = "guestmode: \(message)"
    }
    ConsoleStream.error.write(text + "\n")
    return status
}
