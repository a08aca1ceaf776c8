import Foundation
import GuestModeCommandLine
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The launcher `guestmode tour`, the shell completions of `guestmode serve` and the tests start programs with
/// (`ChildProcess`): with a thousand descriptors open in the parent, as a parallel test run has, every child
/// starts, sees only its three standard streams, gets its input, and reports its status and signal.
/// (Foundation's `Process.run()` crashed the tests once in such a state: swift-corelibs-foundation#5472.)
@Suite("child processes")
struct ChildProcessTests {
    @Test func childrenOfAProcessWithAThousandDescriptorsSeeOnlyTheirOwn() throws {
        let held = (0..<1_000).map { _ in open("/dev/null", O_RDONLY) }
        defer { for descriptor in held where descriptor >= 0 { close(descriptor) } }
        #expect(held.allSatisfy { $0 >= 0 })
        for _ in 0..<50 {
            let outcome = try ChildProcess.run(
                "/bin/sh", arguments: ["-c", "ls /proc/$$/fd"], environment: ["PATH": "/usr/bin:/bin"],
                directory: "/")
            #expect(outcome.termination.succeeded)
            let listed = String(decoding: outcome.output, as: UTF8.self).split(separator: "\n")
            // The shell's own three, and at most the few the shell opens itself (below 20).
            #expect(["0", "1", "2"].allSatisfy(listed.contains), "\(listed)")
            #expect(listed.compactMap { Int($0) }.allSatisfy { $0 < 20 }, "\(listed)")
        }
    }

    @Test func inputStatusSignalDirectoryAndEnvironmentReachTheChild() throws {
        let echoed = try ChildProcess.run(
            "/bin/sh", arguments: ["-c", "cat; pwd; echo \"$ONLY\" >&2; exit 7"], environment: ["ONLY": "this"],
            directory: "/tmp", input: Data("in\n".utf8))
        #expect(echoed.termination == ChildProcess.Termination(status: 7, signalled: false))
        #expect(String(decoding: echoed.output, as: UTF8.self) == "in\n/tmp\n")
        #expect(String(decoding: echoed.errors, as: UTF8.self) == "this\n")

        let killed = try ChildProcess.run("/bin/sh", arguments: ["-c", "kill -9 $$"], environment: [:])
        #expect(killed.termination.signalled && killed.termination.status == 9)

        #expect(throws: ChildProcess.Failure.self) {
            try ChildProcess.run("/nonexistent/program", arguments: [], environment: [:])
        }
        #expect(throws: ChildProcess.Failure.self) {
            try ChildProcess.run("/bin/true", arguments: [], directory: "/nonexistent/directory")
        }
    }

    @Test func withoutAnEnvironmentTheChildGetsTheParentsAndNoInputIsEmpty() throws {
        let parentPath = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let outcome = try ChildProcess.run("/bin/sh", arguments: ["-c", "printf %s \"$PATH\"; wc -c"])
        #expect(outcome.termination.succeeded)
        #expect(String(decoding: outcome.output, as: UTF8.self) == parentPath + "0\n")
    }

    @Test func outputGoesToAFileTheParentOwnsAndTheChildIsSignalledUntilReaped() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try #require(FileHandle(forWritingAtPath: path))
        defer { try? file.close() }
        let writer = try ChildProcess(
            "/bin/sh", arguments: ["-c", "echo to-file; echo nothing >&2"], output: .descriptor(file.fileDescriptor),
            errors: .null)
        #expect(try writer.wait().succeeded)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "to-file\n")

        // A signal the parent ignores (SIGUSR1, which nothing else here uses) is the child's to take.
        let previous = signal(SIGUSR1, SIG_IGN)
        defer { signal(SIGUSR1, previous) }
        let sleeper = try ChildProcess("/bin/sleep", arguments: ["30"])
        #expect(sleeper.isRunning)
        sleeper.send(SIGUSR1)
        let ended = ChildProcess.Termination(status: SIGUSR1, signalled: true)
        #expect(try sleeper.wait() == ended)
        #expect(!sleeper.isRunning)
        #expect(try sleeper.wait() == ended, "waiting again")
        sleeper.send(SIGKILL)  // reaped: nothing is sent to an id the system may have given to another process
    }

    @Test func aChildReapedByIsRunningStillReportsHowItEnded() throws {
        let quick = try ChildProcess("/bin/sh", arguments: ["-c", "exit 3"])
        while quick.isRunning { usleep(1_000) }
        #expect(try quick.wait() == ChildProcess.Termination(status: 3, signalled: false))
    }
}
