import Foundation
import GuestModeCommandLine
import GuestModeKit

/// Runs the tour's commands as a shell script would: each narrated line is
/// split like a shell word list, run as a child `guestmode` process against
/// the tour's own store, and checked against what the narration promises.
/// A step that does not behave as narrated stops the tour with exit 1, so
/// the tour doubles as a smoke test of the installed binary.
final class TourRunner {
    struct Step: Encodable {
        var profile: String
        var command: String
        var exitStatus: Int32
        var stdout: String
        var stderr: String
        var note: String
    }

    struct Failure: Error, CustomStringConvertible {
        var profile: String
        var command: String
        var problem: String
        var stdout: String
        var stderr: String

        var description: String {
            var text = "tour: \(profile): `\(command)` \(problem)"
            if !stdout.isEmpty {
                text += "\n  stdout: " + stdout.split(separator: "\n").joined(separator: "\n          ")
            }
            if !stderr.isEmpty {
                text += "\n  stderr: " + stderr.split(separator: "\n").joined(separator: "\n          ")
            }
            return text
        }
    }

    let executable: URL
    let directory: URL
    let start: Date
    let output: Output
    /// Set only by the test suite (`FaultHooks.brokenTourStep`): the first step
    /// whose command contains this text is made to expect the wrong exit
    /// status, to prove that a broken promise fails the tour.
    private var brokenStep: String?
    private(set) var steps: [Step] = []
    private var variables: [String: String] = [:]
    private var profile = ""
    private var store = ""

    init(executable: URL, directory: URL, start: Date, output: Output, brokenStep: String?) {
        self.executable = executable
        self.directory = directory
        self.start = start
        self.output = output
        self.brokenStep = brokenStep.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Starts a profile's walk on a store of its own.
    func begin(profile name: String, summary: String) {
        profile = name
        store = "\(name).sqlite"
        variables = [:]
        if output.isJSON || output.isQuiet { return }
        if !steps.isEmpty { output.line() }
        output.line(output.bold("== \(name): \(summary)"))
    }

    /// The tour's clock moved by a duration, as an explicit `--now` value.
    func time(_ amount: Int, _ unit: TimeSpan.Unit) -> String {
        Timestamp.format(TimeSpan(amount: amount, unit: unit).added(to: start))
    }

    /// Writes a file the next commands read, shown as the heredoc that would make it.
    func write(_ name: String, _ lines: [String], note: String) throws {
        let text = lines.map { substitute($0) }.joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: directory.appendingPathComponent(name))
        show(command: "cat > \(name) <<'EOF'\n" + text + "EOF", exitStatus: 0, stdout: "", stderr: "", note: note)
    }

    /// Runs one narrated command line and checks its exit status and output.
    /// - Parameters:
    ///   - line: the command as a user types it; `$name` refers to a value captured earlier.
    ///   - expectedStatus: the exit status the narration promises.
    ///   - showing: texts that must appear in stdout or stderr.
    ///   - capture: a variable that receives stdout's first line (shown as `name=$(…)`).
    @discardableResult
    func run(
        _ line: String, exit expectedStatus: Int32 = 0, showing expectedTexts: [String] = [],
        capture variable: String? = nil, note: String
    ) throws -> String {
        let shown = variable.map { "\($0)=$(\(line))" } ?? line
        let (status, stdout, stderr) = try perform(line, shown: shown, expecting: expectedStatus)
        show(command: shown, exitStatus: status, stdout: stdout, stderr: stderr, note: note)
        try check(shown, status: status, expected: expectedStatus, stdout: stdout, stderr: stderr, texts: expectedTexts)
        if let variable {
            let value = String(stdout.prefix { $0 != "\n" })
            guard !value.isEmpty else {
                throw Failure(
                    profile: profile, command: shown, problem: "printed nothing to capture", stdout: stdout,
                    stderr: stderr)
            }
            variables[variable] = value
        }
        return stdout
    }

    /// Runs a command once per value, shown as the shell loop that would do it.
    func runEach(
        _ line: String, variable: String, over values: [String], exit expectedStatus: Int32 = 0,
        showing expectedTexts: [String] = [], note: String
    ) throws {
        let shown = "for \(variable) in \(values.joined(separator: " ")); do \(line); done"
        var (allOutput, allErrors, lastStatus): (String, String, Int32) = ("", "", 0)
        for value in values {
            variables[variable] = value
            let (status, stdout, stderr) = try perform(line, shown: shown, expecting: expectedStatus)
            allOutput += stdout
            allErrors += stderr
            lastStatus = status
            if status != expectedStatus { break }
        }
        variables[variable] = nil
        show(command: shown, exitStatus: lastStatus, stdout: allOutput, stderr: allErrors, note: note)
        try check(
            shown, status: lastStatus, expected: expectedStatus, stdout: allOutput, stderr: allErrors,
            texts: expectedTexts)
    }

    /// Creates a directory the next commands write into.
    func makeDirectory(_ name: String, note: String) throws {
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent(name), withIntermediateDirectories: true)
        show(command: "mkdir \(name)", exitStatus: 0, stdout: "", stderr: "", note: note)
    }

    /// Copies an archive with one byte changed, shown as the `dd` that would do it.
    func damage(_ name: String, into copy: String, note: String) throws {
        var bytes = try Data(contentsOf: directory.appendingPathComponent(name))
        let offset = bytes.count / 2
        guard offset < bytes.count else {
            throw Failure(
                profile: profile, command: "damage \(name)", problem: "found an empty file", stdout: "", stderr: "")
        }
        bytes[offset] ^= 0xFF
        try bytes.write(to: directory.appendingPathComponent(copy))
        let byte = String(bytes[offset], radix: 8)
        show(
            command: "cp \(name) \(copy) && printf '\\\(byte)' | dd of=\(copy) bs=1 seek=\(offset) conv=notrunc",
            exitStatus: 0, stdout: "", stderr: "", note: note)
    }

    private func perform(
        _ line: String, shown: String, expecting expectedStatus: Int32
    ) throws -> (Int32, String, String) {
        let words: [String]
        do {
            words = try ShellWords.split(line, variables: variables)
        } catch {
            throw Failure(profile: profile, command: shown, problem: "cannot be read: \(error)", stdout: "", stderr: "")
        }
        guard words.first == "guestmode" else {
            throw Failure(
                profile: profile, command: shown, problem: "is not a guestmode command", stdout: "", stderr: "")
        }
        return try execute(Array(words.dropFirst()))
    }

    private func check(
        _ shown: String, status: Int32, expected expectedStatus: Int32, stdout: String, stderr: String, texts: [String]
    ) throws {
        var expected = expectedStatus
        if let broken = brokenStep, shown.contains(broken) {
            expected = expectedStatus == 0 ? 1 : 0
            brokenStep = nil
        }
        if status != expected {
            throw Failure(
                profile: profile, command: shown, problem: "exited \(status), but the tour expects \(expected)",
                stdout: stdout, stderr: stderr)
        }
        for text in texts.map({ substitute($0) }) where !stdout.contains(text) && !stderr.contains(text) {
            throw Failure(
                profile: profile, command: shown, problem: "did not print \"\(text)\"", stdout: stdout, stderr: stderr)
        }
    }

    private func substitute(_ text: String) -> String {
        (try? ShellWords.expand(text, variables: variables)) ?? text
    }

    private func execute(_ arguments: [String]) throws -> (Int32, String, String) {
        var environment = ProcessInfo.processInfo.environment
        environment["GUESTMODE_STORE"] = store
        environment["GUESTMODE_NOW"] = Timestamp.format(start)
        environment["NO_COLOR"] = "1"
        for name in ["GUESTMODE_BACKUP_KEY_FILE", "GUESTMODE_SCHEMA"] + FaultHooks.variables {
            environment[name] = nil
        }
        // Files rather than pipes: a child that fills a pipe nobody reads yet would block forever.
        let outputURL = directory.appendingPathComponent(".tour-stdout")
        let errorURL = directory.appendingPathComponent(".tour-stderr")
        for url in [outputURL, errorURL] where !FileManager.default.createFile(atPath: url.path, contents: nil) {
            throw Failure(
                profile: profile, command: arguments.joined(separator: " "),
                problem: "could not be run: cannot create \(url.path)", stdout: "", stderr: "")
        }
        let outputHandle = try FileHandle(forWritingTo: outputURL)
        let errorHandle = try FileHandle(forWritingTo: errorURL)
        defer {
            try? outputHandle.close()
            try? errorHandle.close()
        }
        let child = try ChildProcess(
            executable.path, arguments: arguments, environment: environment, directory: directory.path,
            input: .null, output: .descriptor(outputHandle.fileDescriptor),
            errors: .descriptor(errorHandle.fileDescriptor))
        let ending = try child.wait()
        let stdout = String(decoding: try Data(contentsOf: outputURL), as: UTF8.self)
        let stderr = String(decoding: try Data(contentsOf: errorURL), as: UTF8.self)
        return (ending.status, stdout, stderr)
    }

    private func show(command: String, exitStatus: Int32, stdout: String, stderr: String, note: String) {
        steps.append(
            Step(
                profile: profile, command: command, exitStatus: exitStatus, stdout: stdout, stderr: stderr,
                note: note))
        if output.isJSON || output.isQuiet { return }
        let lines = command.split(separator: "\n", omittingEmptySubsequences: false)
        output.line("  \(output.dim("$")) \(lines[0])")
        for line in lines.dropFirst() { output.line("    \(line)") }
        let printed = stdout.split(separator: "\n").map(String.init)
        let limit = 6
        for line in printed.prefix(limit) { output.line("    \(line)") }
        if printed.count > limit { output.line(output.dim("    … \(printed.count - limit) more lines")) }
        for line in stderr.split(separator: "\n").prefix(3) { output.line("    \(output.dim(String(line)))") }
        if exitStatus != 0 { output.line("    \(output.dim("(exit \(exitStatus))"))") }
        output.line("    \(output.dim("# \(note)"))")
    }
}

/// Splits a command line the way a POSIX shell does for the simple forms the
/// tour uses: words separated by blanks, 'single quotes' taken literally,
/// "double quotes" and bare words with `$name` and `${name}` expanded.
enum ShellWords {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func split(_ line: String, variables: [String: String]) throws -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            switch character {
            case " ", "\t":
                if inWord { words.append(current) }
                current = ""
                inWord = false
                index = line.index(after: index)
            case "'":
                guard let close = line[line.index(after: index)...].firstIndex(of: "'") else {
                    throw Failure(description: "unterminated ' in \(line)")
                }
                current += line[line.index(after: index)..<close]
                inWord = true
                index = line.index(after: close)
            case "\"":
                guard let close = line[line.index(after: index)...].firstIndex(of: "\"") else {
                    throw Failure(description: "unterminated \" in \(line)")
                }
                current += try expand(String(line[line.index(after: index)..<close]), variables: variables)
                inWord = true
                index = line.index(after: close)
            default:
                let end =
                    line[index...].firstIndex(where: { $0 == " " || $0 == "\t" || $0 == "'" || $0 == "\"" })
                    ?? line.endIndex
                current += try expand(String(line[index..<end]), variables: variables)
                inWord = true
                index = end
            }
        }
        if inWord { words.append(current) }
        return words
    }

    static func expand(_ text: String, variables: [String: String]) throws -> String {
        var result = ""
        var index = text.startIndex
        while index < text.endIndex {
            guard text[index] == "$" else {
                result.append(text[index])
                index = text.index(after: index)
                continue
            }
            var nameStart = text.index(after: index)
            var braced = false
            if nameStart < text.endIndex, text[nameStart] == "{" {
                braced = true
                nameStart = text.index(after: nameStart)
            }
            let nameEnd =
                text[nameStart...].firstIndex(where: { !($0.isLetter || $0.isNumber || $0 == "_") }) ?? text.endIndex
            let name = String(text[nameStart..<nameEnd])
            guard !name.isEmpty else {
                result.append("$")
                index = text.index(after: index)
                continue
            }
            guard let value = variables[name] else { throw Failure(description: "$\(name) is not set") }
            result += value
            index = nameEnd
            if braced {
                guard index < text.endIndex, text[index] == "}" else {
                    throw Failure(description: "unterminated ${\(name)")
                }
                index = text.index(after: index)
            }
        }
        return result
    }
}
