import Crypto
import Foundation

/// The `Guestmode-Signature` header, in Stripe's scheme: `t=<unix seconds>,v1=<hex HMAC-SHA-256 of
/// "<t>.<body>" under the endpoint's secret>`. The time is signed with the body, so a receiver that
/// rejects old times cannot be fed a recorded delivery again later.
package enum WebhookSignature {
    package static let headerName = "Guestmode-Signature"

    /// The header's value for `body` sent at `time`.
    package static func header(secret: [UInt8], time: Date, body: [UInt8]) -> String {
        let seconds = Int64(time.timeIntervalSince1970.rounded(.down))
        var message = Array("\(seconds).".utf8)
        message.append(contentsOf: body)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        for byte in mac {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0f)])
        }
        return "t=\(seconds),v1=\(String(decoding: hex, as: UTF8.self))"
    }
}
