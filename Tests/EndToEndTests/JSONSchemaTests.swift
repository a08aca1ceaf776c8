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
        let result = try await sandbox.shell(
            "python3 '\(script)' --binary '\(Sandbox.binary.path)'")
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
        for schema in schemas where !used.contains(schema) && schema != "progress" {
            Issue.record("schemas/\(schema).json is checked by no line of schemas/cases.txt")
        }
        for schema in used where !isSpecial(schema) && !schemas.contains(schema) {
            Issue.record("schemas/cases.txt names \(schema) but schemas/\(schema).json is missing")
        }
    }

    /// Setup lines, and schemas checked without a line of their own (progress lines of stderr).
    private func isSpecial(_ name: String) -> Bool { name == "-" || name.hasPrefix("@") }
}
