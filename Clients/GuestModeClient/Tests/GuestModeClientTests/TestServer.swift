import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A folder of its own with a store initialised with a profile, and `guestmode serve` on loopback
/// started, stopped and started again on the same port. The binary is $GUESTMODE_BIN, else the
/// repository's .build/debug/guestmode (`make client-test` builds it first); the store is SQLite, or a
/// schema of its own in $GUESTMODE_TEST_POSTGRES when `backend` is `.postgres`.
final class TestServer: @unchecked Sendable {
    enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }

        /// SQLite always; PostgreSQL when scripts/with-postgres.sh set GUESTMODE_TEST_POSTGRES.
        static var available: [Backend] {
            ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"] == nil ? [.sqlite] : [.sqlite, .postgres]
        }
    }

    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static let binary: String =
        ProcessInfo.processInfo.environment["GUESTMODE_BIN"]
        ?? repository.appendingPathComponent(".build/debug/guestmode").path

    let directory: URL
    let port: Int
    let store: String
    var environment: [String: String]
    private var process: Process?

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    init(profile: String, backend: Backend = .sqlite) async throws {
        signal(SIGPIPE, SIG_IGN)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("guestmode-client-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Self.freePort()
        environment = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": directory.path, "NO_COLOR": "1",
            "GUESTMODE_TEMPLATES": Self.repository.appendingPathComponent("Templates").path,
        ]
        switch backend {
        case .sqlite:
            store = directory.appendingPathComponent("guestmode.sqlite").path
        case .postgres:
            let uri = try #require(ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"])
            store = uri
            environment["GUESTMODE_SCHEMA"] = "client_" + UUID().uuidString.prefix(8).lowercased()
        }
        let created = try run(["init", "--profile", profile, "--store", store])
        #expect(created.status == 0, "\(created.output)")
    }

    deinit {
        if let process, process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts `guestmode serve` on `port` and waits for its "listening" line.
    func start(_ options: [String] = []) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["serve", "--store", store, "--listen", "127.0.0.1:\(port)"] + options
        process.currentDirectoryURL = directory
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var line = [UInt8]()
        while let byte = try output.fileHandleForReading.read(upToCount: 1)?.first, byte != UInt8(ascii: "\n") {
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        #expect(text.contains("listening on http://127.0.0.1:\(port)"), "serve said '\(text)'")
        self.process = process
    }

    /// SIGTERM, and waits until the server has exited (the port is free again).
    func stop() {
        guard let process else { return }
        process.terminate()
        process.waitUntilExit()
        self.process = nil
    }

    /// Runs `guestmode ARGUMENTS` in the folder, on the same store.
    func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try Self.launch(Self.binary, arguments, in: directory, environment: environment)
    }

    /// Runs `executable` in `folder` to its end: its status, and its standard output and error together.
    static func launch(
        _ executable: String, _ arguments: [String], in folder: URL, environment: [String: String]? = nil
    ) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = folder
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func path(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// A port free now (bound and released).
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
