import Foundation
import Yams

/// One problem found in a profile, located so an editor can jump to it.
package struct ProfileDiagnostic: Sendable, Equatable, Codable, CustomStringConvertible {
    package var file: String
    package var line: Int
    package var message: String

    package var description: String { "\(file):\(line): \(message)" }
}

/// A profile that failed validation, carrying every problem at once.
package struct InvalidProfileError: Error, Sendable, CustomStringConvertible {
    package var diagnostics: [ProfileDiagnostic]
    package var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// Reads the YAML profile format and validates it completely before
/// returning, so a profile either loads whole or is reported whole.
package enum ProfileLoader {
    /// Reads a profile file; diagnostics name it `label` (the path as the
    /// user wrote it) when given, else its full path.
    package static func load(contentsOf url: URL, label: String? = nil) throws -> Profile {
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            if !FileManager.default.fileExists(atPath: url.path) {
                throw GuestModeError(
                    .profileNotFound, "profile file '\(url.path)' does not exist; name a template or a YAML file")
            }
            throw GuestModeError(
                .invalidProfile, "cannot read profile '\(url.path)' as UTF-8 text: \(error.localizedDescription)")
        }
        return try parse(text, file: label ?? url.path)
    }

    package static func parse(_ text: String, file: String) throws -> Profile {
        let reader = ProfileReader(file: file)
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw InvalidProfileError(diagnostics: [reader.diagnostic(for: error)])
        }
        guard let root else {
            throw InvalidProfileError(diagnostics: [
                ProfileDiagnostic(file: file, line: 1, message: "the profile is empty; see guestmode-profile(5)")
            ])
        }
        let profile = reader.readProfile(root)
        if let profile, reader.diagnostics.isEmpty { return profile }
        throw InvalidProfileError(diagnostics: reader.diagnostics.sorted { $0.line < $1.line })
    }
}
