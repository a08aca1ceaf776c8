import Foundation
import Yams

private let nameCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789_-")

/// Reads a profile's YAML tree into a `Profile` for `ProfileLoader`, reporting
/// every problem it finds (with its line) rather than stopping at the first.
/// The shapes every section shares and the top level are here; the sections
/// are in `ProfileReader+Limits.swift` (identity, collections, actions, meters,
/// tiers, plans), `ProfileReader+Prompts.swift`, `ProfileReader+Experiments.swift`
/// `ProfileReader+Lifecycle.swift` (backup, upgrade, migration) and
/// `ProfileReader+Webhooks.swift`.
final class ProfileReader {
    let file: String
    var diagnostics: [ProfileDiagnostic] = []
    /// What prompt conditions, triggers and placeholders may name.
    var promptScope = PromptScope()

    struct PromptScope {
        var actions: Set<String> = []
        var freeForm = false
        var collections: Set<String> = []
        var meters: Set<String> = []
    }

    init(file: String) { self.file = file }

    func report(_ node: Node?, _ message: String) {
        diagnostics.append(ProfileDiagnostic(file: file, line: node?.mark?.line ?? 1, message: message))
    }

    func diagnostic(for error: YamlError) -> ProfileDiagnostic {
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _),
            let .composer(context, problem, mark, _):
            let prefix = context.map { "\($0.text) " } ?? ""
            return ProfileDiagnostic(file: file, line: mark.line, message: "malformed YAML: \(prefix)\(problem)")
        case let .duplicatedKeysInMapping(duplicates, context):
            return ProfileDiagnostic(
                file: file, line: context.mark.line,
                message: "duplicate keys \(duplicates.joined(separator: ", ")) in one mapping")
        default:
            return ProfileDiagnostic(file: file, line: 1, message: "malformed YAML: \(error)")
        }
    }

    // MARK: Shapes

    /// A mapping's entries in the order written: the key, its node (for the line of a message) and the value.
    typealias Field = (key: String, keyNode: Node, value: Node)
    typealias Fields = [Field]

    func mapping(_ node: Node?, _ what: String, allowed: [String], required: [String] = []) -> Fields? {
        guard let node else { return nil }
        if node.isNull { return [] }
        guard case .mapping(let mapping) = node else {
            report(node, "\(what) must be a mapping of keys to values")
            return nil
        }
        var fields: Fields = []
        for (keyNode, value) in mapping {
            guard let key = keyNode.string else {
                report(keyNode, "\(what) has a key that is not a plain name")
                continue
            }
            if !allowed.isEmpty && !allowed.contains(key) {
                report(keyNode, "unknown key '\(key)' in \(what); expected one of: \(allowed.joined(separator: ", "))")
                continue
            }
            fields.append((key, keyNode, value))
        }
        for key in required where !fields.contains(where: { $0.key == key }) {
            report(node, "\(what) is missing the required key '\(key)'")
        }
        return fields
    }

    func entries(_ node: Node?, _ what: String) -> Fields? {
        mapping(node, what, allowed: [])
    }

    func sequence(_ node: Node?, _ what: String) -> [Node]? {
        guard let node else { return nil }
        guard case .sequence(let items) = node else {
            report(node, "\(what) must be a list")
            return nil
        }
        return Array(items)
    }

    func string(_ node: Node?, _ what: String) -> String? {
        guard let node else { return nil }
        guard case .scalar(let scalar) = node else {
            report(node, "\(what) must be text")
            return nil
        }
        return scalar.string
    }

    func name(_ node: Node?, _ what: String) -> String? {
        guard let text = string(node, what) else { return nil }
        if text.isEmpty || text.unicodeScalars.contains(where: { !nameCharacters.contains($0) }) {
            report(node, "\(what) '\(text)' must use only lowercase letters, digits, '_' and '-'")
            return nil
        }
        return text
    }

    func integer(_ node: Node?, _ what: String, minimum: Int = 0) -> Int? {
        guard let node else { return nil }
        guard let text = node.scalar?.string, let value = Int(text) else {
            report(node, "\(what) must be a whole number")
            return nil
        }
        if value < minimum {
            report(node, "\(what) must be at least \(minimum), not \(value)")
            return nil
        }
        return value
    }

    func number(_ node: Node?, _ what: String) -> Double? {
        guard let node else { return nil }
        guard let text = node.scalar?.string, let value = Double(text), value.isFinite else {
            report(node, "\(what) must be a number")
            return nil
        }
        return value
    }

    func boolean(_ node: Node?, _ what: String) -> Bool? {
        guard let node else { return nil }
        switch node.scalar?.string.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            report(node, "\(what) must be true or false")
            return nil
        }
    }

    func span(_ node: Node?, _ what: String) -> TimeSpan? {
        guard let text = string(node, what) else { return nil }
        switch TimeSpan.parse(text) {
        case .success(let span): return span
        case .failure(let refusal):
            report(node, "\(what): \(refusal)")
            return nil
        }
    }

    func choice<T: RawRepresentable & CaseIterable>(_ node: Node?, _ what: String, as type: T.Type) -> T?
    where T.RawValue == String {
        guard let text = string(node, what) else { return nil }
        guard let value = T(rawValue: text) else {
            let options = T.allCases.map(\.rawValue).joined(separator: ", ")
            report(node, "\(what) '\(text)' is not one of: \(options)")
            return nil
        }
        return value
    }

    func names(_ node: Node?, _ what: String) -> [String]? {
        guard let items = sequence(node, what) else { return nil }
        return items.compactMap { name($0, "an entry of \(what)") }
    }

    // MARK: Profile

    func readProfile(_ root: Node) -> Profile? {
        let topKeys = [
            "name", "version", "description", "guest_owner", "free_form_actions", "identity", "collections",
            "actions", "meters", "tiers", "plans", "prompts", "experiments", "backup", "migration", "upgrade",
            "webhooks",
        ]
        guard let fields = mapping(root, "the profile", allowed: topKeys, required: ["name", "version", "tiers"])
        else { return nil }
        let name = name(fields["name"], "name") ?? ""
        let version = integer(fields["version"], "version", minimum: 1) ?? 1
        let summary = string(fields["description"], "description") ?? ""
        let guestOwner = string(fields["guest_owner"], "guest_owner") ?? ""
        let freeForm = boolean(fields["free_form_actions"], "free_form_actions") ?? false

        let identity = readIdentity(fields["identity"])
        let collections = readCollections(fields["collections"])
        let collectionNames = Set(collections.map(\.name))
        let actions = readActions(fields["actions"])
        let meters = readMeters(fields["meters"])
        let meterNames = Set(meters.map(\.name))
        let tiers = readTiers(fields["tiers"], collections: collectionNames, meters: meterNames)
        let plans = readPlans(fields["plans"])
        let knownActions = Set(actions)
        promptScope = PromptScope(
            actions: knownActions, freeForm: freeForm, collections: collectionNames, meters: meterNames)
        let prompts = readPrompts(fields["prompts"], actions: knownActions, freeForm: freeForm)
        let experiments = readExperiments(fields["experiments"], contexts: Set(prompts.rules.map(\.context)))
        let backup = readBackup(fields["backup"])
        let migration = readMigration(fields["migration"], collections: collections)
        let upgrade = readUpgrade(fields["upgrade"], version: version, collections: collectionNames)
        let webhooks = readWebhooks(fields["webhooks"])

        return Profile(
            name: name, version: version, summary: summary, guestOwner: guestOwner,
            allowsFreeFormActions: freeForm, identity: identity, collections: collections, actions: actions,
            meters: meters, tiers: tiers, plans: plans, prompts: prompts, experiments: experiments,
            backup: backup, migration: migration, upgrade: upgrade, webhooks: webhooks)
    }
}

extension [ProfileReader.Field] {
    /// The value under `key`, nil when the mapping has no such key.
    subscript(key: String) -> Node? { first { $0.key == key }?.value }
}

extension Node {
    /// An empty value (`key:` with nothing after it) stands for "no options".
    var isNull: Bool {
        guard case .scalar(let scalar) = self else { return false }
        return ["", "~", "null"].contains(scalar.string) && scalar.style == .plain
    }
}
