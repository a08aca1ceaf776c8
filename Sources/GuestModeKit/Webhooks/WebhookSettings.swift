import Foundation

/// What guestmode tells other systems about: each type is raised by the
/// engine in the transaction of the change it reports (see guestmode-webhook(1)).
public enum WebhookEventType: String, Codable, Sendable, CaseIterable {
    case accountUpgradeStarted = "account_upgrade.started"
    case accountUpgradeSucceeded = "account_upgrade.succeeded"
    case accountUpgradeFailed = "account_upgrade.failed"
    case identityLinked = "identity.linked"
    case identityUnlinked = "identity.unlinked"
    case meterWarning = "meter.warning"
    case meterExhausted = "meter.exhausted"
    case limitRefused = "limit.refused"
    case planGranted = "plan.granted"
    case planRevoked = "plan.revoked"
    case planExpired = "plan.expired"
    case promptOutcome = "prompt.outcome"
    case userPurged = "user.purged"
    case userMerged = "user.merged"
    case userMigrated = "user.migrated"
    case userDeleted = "user.deleted"
    case backupPushed = "backup.pushed"
    case backupFailed = "backup.failed"

    /// The type of the test event sent to one endpoint on request; never
    /// queued, never subscribed to.
    package static let ping = "ping"
}

/// Where a webhook endpoint's signing secret is read from when a delivery is
/// signed; the profile names the place, never the secret.
public enum WebhookSecretSource: Codable, Sendable, Equatable {
    /// A file whose content (without a final line break) is the secret.
    case file(String)
    /// An environment variable of the delivering process.
    case environment(String)
}

/// One receiver of webhooks (`webhooks.endpoints` in the profile).
public struct WebhookEndpoint: Codable, Sendable, Equatable {
    /// The endpoint's name, as commands and the outbox name it.
    public var name: String
    /// The address deliveries are posted to (`DestinationURLRule`).
    public var url: String
    /// The event types it receives.
    public var events: [WebhookEventType]
    /// Where its signing secret is read from.
    public var secret: WebhookSecretSource
}

/// The profile's `webhooks:` section.
public struct WebhookSettings: Codable, Sendable, Equatable {
    /// The failures in a row after which a delivery is held by default.
    public static let defaultMaxAttempts = 8

    /// Every endpoint, in the order the profile lists them.
    public var endpoints: [WebhookEndpoint]
    /// The failures in a row after which a delivery is held (kept, no longer
    /// tried until retried by hand).
    public var maxAttempts: Int

    package init(endpoints: [WebhookEndpoint] = [], maxAttempts: Int = WebhookSettings.defaultMaxAttempts) {
        self.endpoints = endpoints
        self.maxAttempts = maxAttempts
    }

    /// The endpoint named `name`, if the profile declares one.
    public func endpoint(named name: String) -> WebhookEndpoint? { endpoints.first { $0.name == name } }

    /// The endpoints that receive `type`, in profile order.
    func subscribers(of type: WebhookEventType) -> [WebhookEndpoint] {
        endpoints.filter { $0.events.contains(type) }
    }
}

/// The one rule for addresses guestmode sends to (webhook endpoints, backup
/// servers): absolute `https://`, or plain `http://` only to a loopback host
/// (anything sent elsewhere crosses a network and must be encrypted), never a
/// user name or password in the address (they end up in logs and process
/// listings). The profile reader and the HTTP transport both apply it.
package enum DestinationURLRule {
    /// Why an address was refused: a sentence naming it.
    package struct Problem: Error, Sendable, Equatable {
        package var message: String
    }

    /// `text` as an address, or why it is not one (naming it as `what`).
    package static func check(_ text: String, what: String) -> Result<URL, Problem> {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty
        else {
            return .failure(
                Problem(
                    message:
                        "\(what) '\(text)' is not an absolute http:// or https:// URL (for example https://hooks.example.com/guestmode)"
                ))
        }
        guard scheme == "https" || scheme == "http" else {
            return .failure(
                Problem(message: "\(what) '\(text)' uses '\(scheme)'; use https:// (or http:// on loopback)"))
        }
        if scheme == "http" && !isLoopback(host) {
            return .failure(
                Problem(
                    message:
                        "\(what) '\(text)' is plain http:// to another machine; use https:// (http:// is only for 127.0.0.1, ::1 and localhost)"
                ))
        }
        if url.user != nil || url.password != nil {
            return .failure(
                Problem(
                    message:
                        "\(what) carries a user name or password; remove it and give the token through a file or the environment"
                ))
        }
        return .success(url)
    }

    private static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        return bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
    }
}
