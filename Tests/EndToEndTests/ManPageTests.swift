import Foundation
import GuestModeCommandLine
import GuestModeKit
import Testing

/// The man pages are checked against the binary itself: every command it
/// has is named by a page, every option it takes is documented there, and
/// mandoc finds nothing to warn about.
@Suite("Man pages match the binary")
struct ManPageTests {
    static let manDirectory = Sandbox.packageRoot.appendingPathComponent("man")

    /// Options every command takes; guestmode(1) documents them once.
    static let globalOptions: Set<String> = ["store", "schema", "now", "json", "quiet", "verbose"]
    /// Options ArgumentParser adds to every command.
    static let builtInOptions: Set<String> = ["help", "version"]
    /// Commands ArgumentParser adds.
    static let builtInCommands: Set<String> = ["help"]
    /// Commands that shipped before their page. Each is reported as a known
    /// issue; once its page exists the known issue stops occurring and the
    /// test fails until the command is removed from this list.
    static let pagesPending: Set<String> = []
    /// The README's exit status table.
    static let exitStatuses = ["0", "1", "10", "11", "12", "13", "14", "64", "65", "66", "73", "74", "75"]

    struct Command {
        var name: String
        /// Long option names of the command and all its nested subcommands.
        var longOptions: Set<String>
    }

    struct Page {
        var file: String
        var text: String

        /// The lines of one section, `.Sh NAME` up to the next `.Sh`.
        func section(_ title: String) -> [Substring] {
            var lines: [Substring] = []
            var inside = false
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(".Sh ") {
                    inside = line.dropFirst(4).trimmingCharacters(in: .whitespaces) == title
                    continue
                }
                if inside { lines.append(line) }
            }
            return lines
        }

        /// Names given by `.Nm` in the NAME section, e.g. `.Nm guestmode-link , guestmode-unlink`.
        var names: Set<String> {
            var names = Set<String>()
            for line in section("NAME") where line.hasPrefix(".Nm") {
                for word in line.split(separator: " ").dropFirst() where word != "," {
                    names.insert(String(word.trimmingCharacters(in: CharacterSet(charactersIn: ","))))
                }
            }
            return names
        }

        /// Whether the page marks up `--name` as `Fl -name` (rendered `--name`).
        func documents(longOption name: String) -> Bool {
            ["Fl -\(name)", "Fl \\-\(name)"].contains { occurs($0) }
        }

        /// Whether the page marks up `-c` as `Fl c`.
        func documents(shortOption name: String) -> Bool { occurs("Fl \(name)") }

        /// `needle` followed by something that cannot continue an option name.
        private func occurs(_ needle: String) -> Bool {
            var searchRange = text.startIndex..<text.endIndex
            while let found = text.range(of: needle, range: searchRange) {
                let next = found.upperBound < text.endIndex ? text[found.upperBound] : " "
                if !(next.isLetter || next.isNumber || next == "-" || next == "_") { return true }
                searchRange = found.upperBound..<text.endIndex
            }
            return false
        }
    }

    static func pages(suffix: String) async throws -> [Page] {
        let files = try FileManager.default.contentsOfDirectory(atPath: manDirectory.path)
            .filter { $0.hasSuffix(suffix) }.sorted()
        return try await files.asyncMap { file in
            Page(file: file, text: try String(contentsOf: manDirectory.appendingPathComponent(file), encoding: .utf8))
        }
    }

    /// The top-level commands of `guestmode --experimental-dump-help`; `serve` as guestmode-serve
    /// dumps it (`guestmode serve --experimental-dump-help`, through guestmode's exec of it), since
    /// guestmode's own tree only names it.
    static func commands() async throws -> [Command] {
        guard let document = try await dumpedTree(["--experimental-dump-help"]),
            let serve = try await dumpedTree(["serve", "--experimental-dump-help"])
        else { return [] }
        func longOptions(of command: [String: Any]) -> Set<String> {
            var names = Set<String>()
            for argument in command["arguments"] as? [[String: Any]] ?? [] {
                for name in argument["names"] as? [[String: Any]] ?? [] where name["kind"] as? String == "long" {
                    if let text = name["name"] as? String { names.insert(text) }
                }
            }
            for subcommand in command["subcommands"] as? [[String: Any]] ?? [] {
                names.formUnion(longOptions(of: subcommand))
            }
            return names
        }
        return (document["subcommands"] as? [[String: Any]] ?? []).compactMap { command in
            guard let name = command["commandName"] as? String, !builtInCommands.contains(name) else { return nil }
            let tree = name == "serve" ? serve : command
            return Command(
                name: name, longOptions: longOptions(of: tree).subtracting(globalOptions).subtracting(builtInOptions)
            )
        }
    }

    /// The `command` object of a help dump.
    static func dumpedTree(_ arguments: [String]) async throws -> [String: Any]? {
        let result = try await Sandbox().run(arguments: arguments)
        #expect(result.status == 0, "\(arguments.joined(separator: " ")) failed: \(result.stderr)")
        guard let tree = result.object["command"] as? [String: Any] else {
            Issue.record("\(arguments.joined(separator: " ")) printed no command tree")
            return nil
        }
        return tree
    }

    @Test("every command has a page naming it, and the page documents every option of it and its subcommands")
    func everyCommandAndOptionIsDocumented() async throws {
        let pages = try await Self.pages(suffix: ".1")
        let commands = try await Self.commands()
        #expect(commands.count >= 14, "expected the commands of the binary, got \(commands.map(\.name))")
        for command in commands {
            if Self.pagesPending.contains(command.name) {
                withKnownIssue("guestmode-\(command.name)(1) is not written yet") {
                    Self.check(command, against: pages)
                }
            } else {
                Self.check(command, against: pages)
            }
        }
        for pending in Self.pagesPending where !commands.contains(where: { $0.name == pending }) {
            Issue.record("'\(pending)' is listed as waiting for its page but the binary has no such command")
        }
    }

    static func check(_ command: Command, against pages: [Page]) {
        let pageName = "guestmode-\(command.name)"
        let naming = pages.filter { $0.names.contains(pageName) }
        guard let page = naming.first else {
            Issue.record("no man/guestmode-*.1 names \(pageName) in its NAME section (.Nm \(pageName))")
            return
        }
        if naming.count > 1 { Issue.record("\(pageName) is named by several pages: \(naming.map(\.file))") }
        for option in command.longOptions.sorted() where !page.documents(longOption: option) {
            Issue.record("man/\(page.file) does not document --\(option) of '\(command.name)' as 'Fl -\(option)'")
        }
    }

    @Test("guestmode(1) documents the global options, the environment and the exit status table")
    func mainPage() async throws {
        let url = Self.manDirectory.appendingPathComponent("guestmode.1")
        let page = Page(file: "guestmode.1", text: try String(contentsOf: url, encoding: .utf8))
        #expect(page.names == ["guestmode"])
        for option in Self.globalOptions.sorted() where !page.documents(longOption: option) {
            Issue.record("guestmode.1 does not document --\(option) as 'Fl -\(option)'")
        }
        for option in ["q", "v"] where !page.documents(shortOption: option) {
            Issue.record("guestmode.1 does not document -\(option) as 'Fl \(option)'")
        }
        let environment = page.section("ENVIRONMENT").joined(separator: "\n")
        for variable in ["GUESTMODE_STORE", "GUESTMODE_NOW", "GUESTMODE_TEMPLATES", "NO_COLOR"] {
            #expect(environment.contains("Ev \(variable)"), "guestmode.1 ENVIRONMENT does not describe \(variable)")
        }
        let exitSection = page.section("EXIT STATUS")
        let statuses = exitSection.prefix { !$0.hasPrefix(".Ss ") }
            .filter { $0.hasPrefix(".It ") }
            .map { $0.dropFirst(4).split(separator: " ").first.map(String.init) ?? "" }
        #expect(
            statuses == Self.exitStatuses,
            "guestmode.1 EXIT STATUS lists \(statuses), the README has \(Self.exitStatuses)")
        // The JSON error codes: exactly the engine's catalogue, in its order.
        let listedCodes = exitSection.drop { $0 != ".Ss Error codes" }
            .filter { $0.hasPrefix(".It Li ") }
            .map { String($0.dropFirst(7)) }
        #expect(
            listedCodes == GuestModeError.Code.allCases.map(\.rawValue).sorted(),
            "guestmode.1 'Error codes' differs from GuestModeError.Code.allCases; run 'make man-codes'")
        // Every page of man/ is listed in SEE ALSO.
        let seeAlso = page.section("SEE ALSO").joined(separator: "\n")
        for other in try await Self.pages(suffix: ".1") + Self.pages(suffix: ".5") where other.file != "guestmode.1" {
            let parts = other.file.split(separator: ".")
            #expect(
                seeAlso.contains("Xr \(parts[0]) \(parts[1])"),
                "guestmode.1 SEE ALSO does not list \(other.file)")
        }
    }

    @Test("the profile format page exists and covers every top-level key")
    func profileFormatPage() async throws {
        let url = Self.manDirectory.appendingPathComponent("guestmode-profile.5")
        let page = Page(file: "guestmode-profile.5", text: try String(contentsOf: url, encoding: .utf8))
        for key in [
            "name", "version", "description", "guest_owner", "free_form_actions", "identity", "collections",
            "actions", "meters", "tiers", "plans", "prompts", "experiments", "backup", "migration", "upgrade",
        ] {
            #expect(page.text.contains(".It Ic \(key)\n"), "guestmode-profile.5 does not describe the key '\(key)'")
        }
    }

    @Test(
        "mandoc -Tlint -Wwarning finds nothing",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/mandoc")))
    func mandocLint() async throws {
        let files = try await (Self.pages(suffix: ".1") + Self.pages(suffix: ".5")).map {
            Self.manDirectory.appendingPathComponent($0.file).path
        }
        #expect(files.count >= 14)
        let outcome = try ChildProcess.run("/usr/bin/mandoc", arguments: ["-Tlint", "-Wwarning"] + files)
        let text = String(decoding: outcome.output + outcome.errors, as: UTF8.self)
        #expect(text.isEmpty, "mandoc -Tlint -Wwarning:\n\(text)")
    }

    @Test("groff -ww -z -man warns about nothing (no misused macros, no unbreakable lines, ASCII only)")
    func groffLint() async throws {
        let groff = ["/usr/bin/groff", "/bin/groff"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let groff else {
            Issue.record("groff is missing; install groff-base (make deps)")
            return
        }
        for page in try await Self.pages(suffix: ".1") + Self.pages(suffix: ".5") {
            let outcome = try ChildProcess.run(
                groff, arguments: ["-ww", "-z", "-man", Self.manDirectory.appendingPathComponent(page.file).path])
            let text = String(decoding: outcome.output + outcome.errors, as: UTF8.self)
            #expect(
                text.isEmpty && outcome.termination.status == 0, "groff -ww -z -man \(page.file):\n\(text)")
        }
    }

    @Test("every page has an EXAMPLES section, and Fl is never given words (it renders them as flags)")
    func examplesAndFlags() async throws {
        for page in try await Self.pages(suffix: ".1") {
            #expect(!page.section("EXAMPLES").isEmpty, "man/\(page.file) has no EXAMPLES section")
            // `.Pq or, with Fl -dry-run , could be .` renders "-could -be": words after Fl need No.
            let proseAfterFlag = try Regex(#"Fl -[A-Za-z0-9-]+ , [a-z]"#)
            for line in page.text.split(separator: "\n") where line.contains(proseAfterFlag) {
                Issue.record("man/\(page.file): '\(line)' puts prose after Fl; use No, Pc or a new line")
            }
        }
    }
}
