import Foundation
import Yams

// `backup`, `upgrade` and `migration`: how the profile keeps, upgrades and moves data.
extension ProfileReader {
    func readBackup(_ node: Node?) -> BackupPolicy {
        var policy = BackupPolicy(queuesOnChange: false, format: "tar.zst")
        for (key, _, value) in mapping(node, "backup", allowed: ["outbox", "format"]) ?? [] {
            if key == "outbox" {
                policy.queuesOnChange = boolean(value, "backup.outbox") ?? false
            } else {
                let format = string(value, "backup.format") ?? "tar.zst"
                if !["tar.zst", "tar.gz", "zip"].contains(format) {
                    report(value, "backup.format '\(format)' is not one of: tar.zst, tar.gz, zip")
                }
                policy.format = format
            }
        }
        return policy
    }

    func readUpgrade(_ node: Node?, version: Int, collections: Set<String>) -> ProfileUpgrade? {
        guard let fields = mapping(node, "upgrade", allowed: ["from", "steps"], required: ["from"]) else { return nil }
        var upgrade = ProfileUpgrade(fromVersion: 0, steps: [])
        for (key, _, value) in fields {
            if key == "from" {
                upgrade.fromVersion = integer(value, "upgrade.from", minimum: 1) ?? 0
                if upgrade.fromVersion >= version {
                    report(
                        value,
                        "upgrade.from (\(upgrade.fromVersion)) must be lower than the profile's version (\(version))")
                }
                continue
            }
            for item in sequence(value, "upgrade.steps") ?? [] {
                let kinds = ["rename_collection", "rename_field"]
                guard let step = mapping(item, "an upgrade step", allowed: kinds), step.count == 1,
                    let (kind, _, body) = step.first
                else {
                    report(item, "an upgrade step must be exactly one of: rename_collection, rename_field")
                    continue
                }
                let what = "upgrade step \(kind)"
                let required = kind == "rename_field" ? ["collection", "from", "to"] : ["from", "to"]
                var values: [String: String] = [:]
                for (option, _, optionValue) in mapping(body, what, allowed: required, required: required) ?? [] {
                    values[option] = name(optionValue, "\(what) \(option)")
                }
                guard required.allSatisfy({ values[$0] != nil }) else { continue }
                if kind == "rename_collection" {
                    if !collections.contains(values["to"]!) {
                        report(
                            body, "\(what) renames to '\(values["to"]!)', which is not among this profile's collections"
                        )
                    }
                    upgrade.steps.append(.renameCollection(from: values["from"]!, to: values["to"]!))
                } else {
                    if !collections.contains(values["collection"]!) {
                        report(body, "\(what) names unknown collection '\(values["collection"]!)'")
                    }
                    upgrade.steps.append(
                        .renameField(collection: values["collection"]!, from: values["from"]!, to: values["to"]!))
                }
            }
        }
        return upgrade
    }

    func readMigration(_ node: Node?, collections: [RecordCollection]) -> MigrationPolicy {
        let known = Set(collections.map(\.name))
        var steps: [MigrationStep] = []
        for (key, _, value) in mapping(node, "migration", allowed: ["steps"]) ?? [] where key == "steps" {
            for item in sequence(value, "migration.steps") ?? [] {
                let fields =
                    mapping(item, "a migration step", allowed: ["name", "collections"], required: ["name"]) ?? []
                var step = MigrationStep(name: "", collections: [])
                for (field, _, fieldValue) in fields {
                    if field == "name" {
                        step.name = name(fieldValue, "migration step name") ?? ""
                    } else {
                        step.collections = names(fieldValue, "migration step collections") ?? []
                        for collection in step.collections where !known.contains(collection) {
                            report(fieldValue, "migration step moves unknown collection '\(collection)'")
                        }
                    }
                }
                steps.append(step)
            }
        }
        if steps.isEmpty {
            steps =
                [MigrationStep(name: "profile", collections: [])]
                + collections.map { MigrationStep(name: $0.name, collections: [$0.name]) }
                + [MigrationStep(name: "cleanup", collections: [])]
        }
        return MigrationPolicy(steps: steps)
    }
}
