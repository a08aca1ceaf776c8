import Foundation

/// Where profile templates live: wherever GUESTMODE_TEMPLATES points, the installed share directory,
/// the source tree next to a development build, and last the copies built into the binary
/// (`EmbeddedTemplates`), so a binary copied anywhere still knows them.
public struct ProfileCatalog: Sendable {
    /// Directories searched for `NAME.yaml`, in order.
    public var directories: [URL]
    /// Whether the built-in copies are used when no directory has templates.
    public var usesEmbedded: Bool

    /// `directories` in order, each once.
    public init(directories: [URL], usesEmbedded: Bool = true) {
        var seen = Set<String>()
        self.directories = directories.map(\.standardizedFileURL).filter { seen.insert($0.path).inserted }
        self.usesEmbedded = usesEmbedded
    }

    /// Where a built-in template comes from, as `origin` and `path` say it.
    public static let embeddedPrefix = "built-in:"

    /// The directories to search for a binary at `executable`: the
    /// installed layout (`PREFIX/bin` → `PREFIX/share/guestmode/templates`)
    /// first, then any `Templates/` above it (a build tree).
    package static func make(executable: URL, environment: [String: String]) -> ProfileCatalog {
        var directories: [URL] = []
        if let override = environment["GUESTMODE_TEMPLATES"], !override.isEmpty {
            directories.append(URL(fileURLWithPath: override))
        }
        let binDirectory = executable.resolvingSymlinksInPath().deletingLastPathComponent()
        directories.append(binDirectory.deletingLastPathComponent().appendingPathComponent("share/guestmode/templates"))
        var ancestor = binDirectory
        for _ in 0..<6 {
            directories.append(ancestor.appendingPathComponent("Templates"))
            ancestor = ancestor.deletingLastPathComponent()
        }
        return ProfileCatalog(directories: directories)
    }

    /// A template the catalogue offers.
    public struct Template: Sendable, Codable, Equatable {
        /// The template's name.
        public var name: String
        /// The profile version it declares.
        public var version: Int
        /// Its one-line summary.
        public var summary: String
        /// Where it was found (a path, or the built-in copy's name).
        public var path: String
    }

    /// The templates of the first directory that has any, so an installed
    /// copy is never mixed with a build tree's; else the built-in ones.
    /// None at all is an error naming every folder searched.
    public func templates() throws -> [Template] {
        guard let directory = templateDirectory() else {
            guard usesEmbedded, !EmbeddedTemplates.files.isEmpty else {
                throw GuestModeError(
                    .profileNotFound,
                    "no profile templates found (searched \(searchedPaths)); set GUESTMODE_TEMPLATES to a folder of *.yaml profiles"
                )
            }
            return try EmbeddedTemplates.files.map { file in
                let profile = try ProfileLoader.parse(file.text, file: "\(Self.embeddedPrefix)\(file.name).yaml")
                return Template(
                    name: profile.name, version: profile.version, summary: profile.summary,
                    path: "\(Self.embeddedPrefix)\(file.name)")
            }
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".yaml") }.sorted()
        return try files.map { file in
            let url = directory.appendingPathComponent(file)
            let profile = try ProfileLoader.load(contentsOf: url)
            return Template(name: profile.name, version: profile.version, summary: profile.summary, path: url.path)
        }
    }

    /// The folders searched, each once, for messages.
    public var searchedPaths: String { directories.map(\.path).joined(separator: ", ") }

    func templateDirectory() -> URL? {
        directories.first { directory in
            let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return files.contains { $0.hasSuffix(".yaml") }
        }
    }

    /// A loaded profile together with the exact text it came from, which is
    /// what a store keeps so it never depends on the template staying put.
    public struct Source: Sendable {
        /// The validated profile.
        public var profile: Profile
        /// The profile's YAML, as read.
        public var text: String
        /// Where the text came from, for messages.
        public var origin: String
    }

    /// Resolves a template name or a file path.
    public func load(_ nameOrPath: String) throws -> Source {
        let looksLikePath =
            nameOrPath.contains("/") || nameOrPath.hasSuffix(".yaml") || nameOrPath.hasSuffix(".yml")
        let url: URL
        var label: String?
        if looksLikePath || FileManager.default.fileExists(atPath: nameOrPath) {
            url = URL(fileURLWithPath: nameOrPath)
            label = nameOrPath
        } else if let directory = templateDirectory(),
            FileManager.default.fileExists(atPath: directory.appendingPathComponent("\(nameOrPath).yaml").path)
        {
            url = directory.appendingPathComponent("\(nameOrPath).yaml")
        } else if templateDirectory() == nil, usesEmbedded,
            let file = EmbeddedTemplates.files.first(where: { $0.name == nameOrPath })
        {
            let origin = "\(Self.embeddedPrefix)\(file.name)"
            let profile = try ProfileLoader.parse(file.text, file: "\(origin).yaml")
            return Source(profile: profile, text: file.text, origin: origin)
        } else {
            let known = (try? templates().map(\.name)) ?? []
            let hint =
                known.isEmpty
                ? "no templates were found (searched \(searchedPaths); set GUESTMODE_TEMPLATES)"
                : "known templates: \(known.joined(separator: ", "))"
            throw GuestModeError(
                .profileNotFound, "no profile named '\(nameOrPath)'; \(hint); or give the path of a YAML file")
        }
        let profile = try ProfileLoader.load(contentsOf: url, label: label)
        let text = try String(contentsOf: url, encoding: .utf8)
        return Source(profile: profile, text: text, origin: url.path)
    }
}
