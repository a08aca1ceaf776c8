import Foundation
import Testing

@testable import GuestModeKit

/// The templates compiled into the binary (scripts/embed-templates.py) are the files of Templates/.
@Suite("Embedded templates")
struct EmbeddedTemplatesTests {
    static let templates = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Templates")

    @Test("every Templates/*.yaml is embedded byte for byte, and nothing else (else run scripts/embed-templates.py)")
    func embeddedCopiesEqualTheFiles() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.templates.path)
            .filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(EmbeddedTemplates.files.map { $0.name + ".yaml" } == files)
        for file in EmbeddedTemplates.files {
            let text = try String(
                contentsOf: Self.templates.appendingPathComponent(file.name + ".yaml"), encoding: .utf8)
            #expect(
                file.text == text, "\(file.name): the embedded copy differs; run python3 scripts/embed-templates.py")
        }
    }

    @Test("with no templates directory the built-in ones are listed and load")
    func builtInFallback() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("gm-empty-\(UUID().uuidString)")
        let catalog = ProfileCatalog(directories: [empty])
        let names = try catalog.templates().map(\.name)
        #expect(names == ["habits", "recipes", "subscriptions", "voice"])
        let voice = try catalog.load("voice")
        #expect(voice.origin == "built-in:voice")
        #expect(voice.profile.meters.map(\.name) == ["api_minutes"])
    }

    @Test("no templates at all is an error that names each folder searched once")
    func noTemplatesIsAnError() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("gm-empty-\(UUID().uuidString)")
        let catalog = ProfileCatalog(
            directories: [empty, empty, empty.appendingPathComponent("../\(empty.lastPathComponent)")],
            usesEmbedded: false)
        do {
            _ = try catalog.templates()
            Issue.record("an empty catalogue listed templates")
        } catch let error as GuestModeError {
            #expect(error.code == .profileNotFound)
            #expect(error.message.components(separatedBy: empty.path).count == 2, "\(error.message)")
        }
    }
}
