import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The harness's launcher (`ChildProcess`): with a thousand descriptors open in the test process, as a parallel
/// run has, every child starts, sees only its three standard streams, gets its input, and reports its status and
/// signal. (Foundation's `Process.run()` crashed this suite once in such a state: swift-corelibs-foundation#5472.)
@Suite("the test harness's child processes")
struct ChildProcessTests {
    @Test func childrenOfAProcessWithAThousandDescriptorsSeeOnlyTheirOwn() throws {
        let held = (0..<1_000).map { _ in open("/dev/null", O_RDONLY) }
        defer { for descriptor in held where descriptor >= 0 { close(descriptor) } }
        #expect(held.allSatisfy { $0 >= 0 })
        for _ in 0..<50 {
            let outcome = try ChildProcess.run(
                "/bin/sh", arguments: ["-c", "ls /proc/$$/fd"], environment: ["PATH": "/usr/bin:/bin"],
                directory: "/", input: nil)
            #expect(outcome.status == 0 && !outcome.signalled)
            let listed = String(decoding: outcome.stdout, as: UTF8.self).split(separator: "\n")
            // The shell's own three, and at most the few the shell opens itself (below 20).
            #expect(["0", "1", "2"].allSatisfy(listed.contains), "\(listed)")
            #expect(listed.compactMap { Int($0) }.allSatisfy { $0 < 20 }, "\(listed)")
        }
    }

    @Test func inputStatusSignalDirectoryAndEnvironmentReachTheChild() throws {
        let echoed = try ChildProcess.run(
            "/bin/sh", arguments: ["-c", "cat; pwd; echo \"$ONLY\" >&2; exit 7"], environment: ["ONLY": "this"],
            directory: "/tmp", input: Data("in\n".utf8))
        #expect(echoed.status == 7 && !echoed.signalled)
        #expect(String(decoding: echoed.stdout, as: UTF8.self) == "in\n/tmp\n")
        #expect(String(decoding: echoed.stderr, as: UTF8.self) == "this\n")

        let killed = try ChildProcess.run(
            "/bin/sh", arguments: ["-c", "kill -9 $$"], environment: [:], directory: "/", input: nil)
        #expect(killed.signalled && killed.status == 9)

        #expect(throws: ChildProcess.LaunchFailure.self) {
            try ChildProcess.run("/nonexistent/program", arguments: [], environment: [:], directory: "/", input: nil)
        }
    }
}
