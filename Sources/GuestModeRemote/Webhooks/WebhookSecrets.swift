import Foundation
import GuestModeKit

/// Reads endpoints' signing secrets where the profile says they are, at
/// delivery time, so a rotated secret is used from the next delivery on.
package struct WebhookSecrets: Sendable {
    private let environment: [String: String]

    /// `environment` is the delivering process's (for `secret_env`).
    package init(environment: [String: String]) {
        self.environment = environment
    }

    /// The secret of `endpoint`: a file's content without its final line
    /// break, or an environment variable's value; never empty.
    package func secret(of endpoint: WebhookEndpoint) throws -> [UInt8] {
        let what = "the secret of webhook endpoint '\(endpoint.name)'"
        switch endpoint.secret {
        case .environment(let name):
            guard let value = environment[name], !value.isEmpty else {
                throw GuestModeError(
                    .webhookSecretUnavailable,
                    "\(what) is read from the environment variable \(name), which is unset or empty")
            }
            return Array(value.utf8)
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw GuestModeError(
                    .webhookSecretUnavailable, "\(what) is read from '\(path)', which cannot be read")
            }
            var bytes = Array(data)
            while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { bytes.removeLast() }
            guard !bytes.isEmpty else {
                throw GuestModeError(.webhookSecretUnavailable, "\(what) file '\(path)' is empty")
            }
            return bytes
        }
    }
}
