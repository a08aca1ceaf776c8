import Foundation
import Testing

/// `profile show --json` speaks the YAML's vocabulary, so its output saved as a .yaml file loads again as
/// the same profile; a binary copied anywhere still knows the built-in templates.
@Suite("Profile JSON and built-in templates")
struct ProfileJSONTests {
    @Test(
        "profile show --json, saved as YAML, loads again as the same profile",
        arguments: ["habits", "recipes", "subscriptions", "voice"])
    func roundTrip(template: String) async throws {
        let sandbox = try Sandbox()
        let shown = try await sandbox.run("profile", "show", template, "--json")
        #expect(shown.status == 0, "\(shown.stderr)")
        for word in ["maximum_providers_per_user", "is_once", "\"_0\"", "allows_free_form_actions"] {
            #expect(!shown.stdout.contains(word), "\(template): \(word) in \(shown.stdout)")
        }
        #expect(shown.stdout.contains("\"max_providers_per_user\""))
        try sandbox.write("copy.yaml", shown.stdout)
        let validated = try await sandbox.run("profile", "validate", "copy.yaml")
        #expect(validated.status == 0, "\(template): \(validated.stdout)\(validated.stderr)")
        let again = try await sandbox.run("profile", "show", "copy.yaml", "--json")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout == shown.stdout, "\(template): the reloaded profile differs")
    }

    @Test("a binary copied where there is no share/ or Templates/ still lists and uses the four templates")
    func copiedBinary() async throws {
        let sandbox = try Sandbox()
        let copied = try await sandbox.shell(
            "mkdir -p bin && cp '\(Sandbox.binary.path)' bin/guestmode && GUESTMODE_TEMPLATES= ./bin/guestmode profile list -q --format tsv && GUESTMODE_TEMPLATES= ./bin/guestmode init --profile voice -q"
        )
        #expect(copied.status == 0, "\(copied.stderr)")
        #expect(
            copied.stdout.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
                == ["habits", "recipes", "subscriptions", "voice"], "\(copied.stdout)")
        // A templates folder still takes precedence over the built-in copies.
        try FileManager.default.createDirectory(
            at: sandbox.directory.appendingPathComponent("mine"), withIntermediateDirectories: true)
        let voice = try String(
            contentsOf: Sandbox.packageRoot.appendingPathComponent("Templates/voice.yaml"), encoding: .utf8)
        try sandbox.write("mine/solo.yaml", voice.replacingOccurrences(of: "name: voice", with: "name: solo"))
        let mine = try await sandbox.shell("GUESTMODE_TEMPLATES=mine ./bin/guestmode profile list -q --format tsv")
        #expect(mine.stdout.split(separator: "\n").map { String($0.split(separator: "\t")[0]) } == ["solo"])
    }
}
