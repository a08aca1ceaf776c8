import Foundation
import Testing

/// Every command's --json document, on success and on failure, against its JSON Schema in schemas/,
/// checked by a real validator (python3-jsonschema through scripts/check-json-schemas.py). The commands
/// are those of schemas/cases.txt. A missing validator fails the test: it is never skipped.
@Suite("JSON output matches schemas/")
struct JSONSchemaTests {
    @Test("every case of schemas/cases.txt prints a document its schema accepts, in the naming conventions")
    func everyDocumentValidates() async throws {
        let sandbox = try Sandbox()
        let script = Sandbox.packageRoot.appendingPathComponent("scripts/check-json-schemas.py").path
        // Debian's python3 first: `make deps` installs python3-jsonschema for it; another python3 on PATH
        // (pyenv, a virtualenv) may lack the module. No validator at all is a failure (exit 2).
        let result = try await sandbox.shell(
            """
            for python in /usr/bin/python3 python3; do
                if "$python" -c 'import jsonschema' 2>/dev/null; then
                    exec "$python" '\(script)' --binary '\(Sandbox.binary.path)'
                fi
            done
            echo 'no python3 with jsonschema: make deps installs python3-jsonschema' >&2
            exit 2
            """)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("documents, 0 problems"), "\(result.stderr)")
    }

    @Test("every schema in schemas/ is used by a case, and every command with --json has a case")
    func schemasAreCovered() throws {
        let directory = Sandbox.packageRoot.appendingPathComponent("schemas")
        let cases = try String(contentsOf: directory.appendingPathComponent("cases.txt"), encoding: .utf8)
        let used = Set(
            cases.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: " ").first }
                .map(String.init))
        let schemas = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }
        // progress: lines of standard error; openapi: the server's document (ServerContractTests).
        for schema in schemas where !used.contains(schema) && !["progress", "openapi"].contains(schema) {
            Issue.record("schemas/\(schema).json is checked by no line of schemas/cases.txt")
        }
        for schema in used where !isSpecial(schema) && !schemas.contains(schema) {
            Issue.record("schemas/cases.txt names \(schema) but schemas/\(schema).json is missing")
        }
    }

    @Test("every leaf command of the binary has a line in schemas/cases.txt")
    func everyCommandHasACase() async throws {
        let dump = try await Sandbox().run("--experimental-dump-help")
        let root = try #require(dump.object["command"] as? [String: Any])
        // Default subcommands (`merge GUEST …`, `migrate GUEST …`) are written without their name.
        var leaves: [(path: [String], isDefault: Bool)] = []
        func walk(_ command: [String: Any], path: [String], isDefault: Bool) {
            let subcommands = (command["subcommands"] as? [[String: Any]] ?? []).filter {
                ($0["commandName"] as? String) != "help"
            }
            guard !subcommands.isEmpty else { return leaves.append((path, isDefault)) }
            let defaultName = command["defaultSubcommand"] as? String
            for subcommand in subcommands {
                guard let name = subcommand["commandName"] as? String else { continue }
                walk(subcommand, path: path + [name], isDefault: name == defaultName)
            }
        }
        walk(root, path: [], isDefault: false)
        let cases = try String(
            contentsOf: Sandbox.packageRoot.appendingPathComponent("schemas/cases.txt"), encoding: .utf8)
        let checked = cases.split(separator: "\n").compactMap { line -> [String]? in
            let words = line.split(separator: " ").map(String.init)
            guard let head = words.first, !line.hasPrefix("#"), !isSpecial(head), words.count > 2 else { return nil }
            var arguments: [String] = []
            var skipsValue = false
            for word in words.dropFirst(2) {
                if skipsValue {
                    skipsValue = false
                } else if ["--store", "--now", "--schema"].contains(word) {
                    skipsValue = true
                } else {
                    arguments.append(word)
                }
            }
            return arguments
        }
        #expect(leaves.count > 40, "\(leaves.map { $0.path })")
        for leaf in leaves {
            let written = leaf.isDefault ? Array(leaf.path.dropLast()) : leaf.path
            let isCovered = checked.contains { Array($0.prefix(written.count)) == written }
            #expect(isCovered, "no line of schemas/cases.txt runs 'guestmode \(leaf.path.joined(separator: " "))'")
        }
    }

    /// Setup lines, and schemas checked without a line of their own (progress lines of stderr).
    private func isSpecial(_ name: String) -> Bool { name == "-" || name.hasPrefix("@") }
}
