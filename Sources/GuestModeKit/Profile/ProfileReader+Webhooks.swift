import Foundation
import Yams

// `webhooks`: who is told about what guestmode decides.
extension ProfileReader {
    func readWebhooks(_ node: Node?) -> WebhookSettings {
        var settings = WebhookSettings()
        for (key, _, value) in mapping(node, "webhooks", allowed: ["endpoints", "max_attempts"]) ?? [] {
            if key == "max_attempts" {
                settings.maxAttempts =
                    integer(value, "webhooks.max_attempts", minimum: 1) ?? WebhookSettings.defaultMaxAttempts
                continue
            }
            var names: Set<String> = []
            for item in sequence(value, "webhooks.endpoints") ?? [] {
                guard let endpoint = readWebhookEndpoint(item) else { continue }
                if !names.insert(endpoint.name).inserted {
                    report(item, "webhooks.endpoints names '\(endpoint.name)' twice")
                }
                settings.endpoints.append(endpoint)
            }
        }
        return settings
    }

    private func readWebhookEndpoint(_ node: Node) -> WebhookEndpoint? {
        let keys = ["name", "url", "events", "secret_file", "secret_env", "secret"]
        guard let fields = mapping(node, "a webhook endpoint", allowed: keys, required: ["name", "url", "events"])
        else { return nil }
        let name = name(fields["name"], "webhook endpoint name") ?? ""
        let what = "webhook endpoint '\(name)'"
        var endpoint = WebhookEndpoint(name: name, url: "", events: [], secret: .environment(""))
        if let url = string(fields["url"], "\(what) url") {
            if case .failure(let problem) = DestinationURLRule.check(url, what: "the \(what) url") {
                report(fields["url"], problem.message)
            }
            endpoint.url = url
        }
        for item in sequence(fields["events"], "\(what) events") ?? [] {
            guard let text = string(item, "an event of \(what)") else { continue }
            if text == "*" {
                endpoint.events = WebhookEventType.allCases
            } else if let type = WebhookEventType(rawValue: text) {
                if !endpoint.events.contains(type) { endpoint.events.append(type) }
            } else {
                report(
                    item,
                    "\(what) subscribes to unknown event type '\(text)'; event types are: * (all), \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
        }
        if let secret = fields.first(where: { $0.key == "secret" }) {
            report(
                secret.keyNode,
                "\(what) writes its secret in the profile; a profile is stored and shown in full, so name where the secret is read from instead: secret_file: PATH or secret_env: VARIABLE"
            )
        }
        let file = string(fields["secret_file"], "\(what) secret_file")
        let variable = string(fields["secret_env"], "\(what) secret_env")
        switch (file, variable) {
        case (let file?, nil) where !file.isEmpty: endpoint.secret = .file(file)
        case (nil, let variable?) where !variable.isEmpty: endpoint.secret = .environment(variable)
        case (nil, nil):
            report(node, "\(what) has no secret; give secret_file: PATH or secret_env: VARIABLE")
        case (.some, .some):
            report(node, "\(what) gives both secret_file and secret_env; give one")
        default:
            report(node, "\(what) names an empty secret_file or secret_env")
        }
        return endpoint
    }
}
