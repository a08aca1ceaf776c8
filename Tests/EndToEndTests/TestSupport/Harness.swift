import Foundation
import GuestModeCommandLine
import Testing

/// Runs the built `guestmode` binary the way a shell script would: in its own
/// temporary directory, with a controlled environment, capturing stdout,
/// stderr and the exit status.
final class Sandbox {
    let directory: URL
    var environment: [String: String]

    init() throws {
        // A child that exits before reading its input must not end the test process by SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("guestmode-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        environment = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": directory.path,
            "NO_COLOR": "1",
            "GUESTMODE_TEMPLATES": Sandbox.packageRoot.appendingPathComponent("Templates").path,
        ]
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The binary next to the test bundle, where `swift build` put it.
    static let binary: URL = {
        if let override = ProcessInfo.processInfo.environment["GUESTMODE_BIN"] {
            return URL(fileURLWithPath: override)
        }
        let testExecutable = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0])
        var directory = testExecutable.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("guestmode")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return packageRoot.appendingPathComponent(".build/debug/guestmode")
    }()

    struct Result: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
        /// True when the process died by a signal (then `status` is the signal number).
        var signalled = false

        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
        var object: [String: Any] { json as? [String: Any] ?? [:] }
        /// Standard error without the JSON-lines progress of --json.
        var errorDocument: String {
            stderr.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !($0.hasPrefix("{") && $0.contains("\"message_type\":")) }.joined(separator: "\n")
        }

        var errorJSON: [String: Any] {
            // With --json, progress lines ({…"message_type":…}) may come before the error document.
            let document = try? JSONSerialization.jsonObject(with: Data(errorDocument.utf8)) as? [String: Any]
            return document?["error"] as? [String: Any] ?? [:]
        }
    }

    @discardableResult
    func run(_ arguments: String..., input: String? = nil) async throws -> Result {
        try await run(arguments: arguments, input: input.map { Data($0.utf8) })
    }

    func run(arguments: [String], input: Data? = nil, environment extra: [String: String] = [:]) async throws -> Result
    {
        try await launch(Sandbox.binary, arguments: arguments, input: input, environment: extra)
    }

    /// Runs a shell script in the sandbox directory (sqlite3, python3, zstd, bsdtar).
    @discardableResult
    func shell(_ script: String) async throws -> Result {
        try await launch(URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", script], input: nil, environment: [:])
    }

    /// Waits for the child on a thread of its own: a blocking wait on one of
    /// Swift Testing's few cooperative workers would stall every other test.
    private func launch(
        _ executable: URL, arguments: [String], input: Data?, environment extra: [String: String]
    ) async throws -> Result {
        let directory = directory
        let environment = environment.merging(extra) { $1 }
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Swift.Result {
                        try Sandbox.launchAndWait(
                            executable, arguments: arguments, input: input, environment: environment,
                            directory: directory)
                    })
            }
        }
    }

    private static func launchAndWait(
        _ executable: URL, arguments: [String], input: Data?, environment: [String: String], directory: URL
    ) throws -> Result {
        let outcome = try ChildProcess.run(
            executable.path, arguments: arguments, environment: environment, directory: directory.path, input: input)
        return Result(
            status: outcome.termination.status,
            stdout: String(decoding: outcome.output, as: UTF8.self),
            stderr: String(decoding: outcome.errors, as: UTF8.self),
            signalled: outcome.termination.signalled)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func write(_ name: String, _ contents: String) throws {
        try contents.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    func read(_ name: String) throws -> Data { try Data(contentsOf: directory.appendingPathComponent(name)) }

    /// The store file's bytes, for "nothing changed" checks.
    func snapshot(_ name: String = "guestmode.sqlite") throws -> Data { try read(name) }

    /// A store bound to a template, at ./guestmode.sqlite.
    static func withStore(_ profile: String) async throws -> Sandbox {
        let sandbox = try Sandbox()
        let result = try await sandbox.run("init", "--profile", profile)
        #expect(result.status == 0, "init failed: \(result.stderr)")
        return sandbox
    }
}

final class DataBox: @unchecked Sendable {
    var data = Data()
}

extension Sequence {
    /// `map` for transforms that run the binary.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
