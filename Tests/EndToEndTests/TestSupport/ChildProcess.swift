import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child started with `posix_spawn`, for the harness's thousands of launches. Foundation's `Process.run()`
/// on Linux (Swift 6.3.1) copies each `/proc/self/fd` entry's name as a whole 256-byte field, which can read
/// past the end of glibc's directory buffer and crash the test process (swift-corelibs-foundation#5472, fixed
/// after 6.3.1); a CI run of this suite died so. This launcher reads no directory: the child closes every
/// descriptor above 2 itself (`closefrom`), after taking the pipes as its standard streams.
enum ChildProcess {
    struct Outcome {
        var status: Int32
        var stdout: Data
        var stderr: Data
        /// Ended by a signal; `status` is then the signal's number, as `Process.terminationStatus` gives it.
        var signalled: Bool
    }

    struct LaunchFailure: Error, CustomStringConvertible {
        var description: String
    }

    // glibc's chdir and closefrom file actions, which its headers declare only for _GNU_SOURCE.
    private typealias AddChdir =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private typealias AddClosefrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addChdir: AddChdir? = dlsym(nil, "posix_spawn_file_actions_addchdir_np").map {
        unsafeBitCast($0, to: AddChdir.self)
    }
    private static let addClosefrom: AddClosefrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddClosefrom.self)
    }

    /// Runs `executable` with `arguments` in `directory`, its environment exactly `environment`, `input` on its
    /// standard input (then closed), and waits for it; both outputs are read to their end as it runs.
    static func run(
        _ executable: String, arguments: [String], environment: [String: String], directory: String, input: Data?
    ) throws -> Outcome {
        guard let addChdir, let addClosefrom else {
            throw LaunchFailure(description: "this C library has no posix_spawn chdir or closefrom file action")
        }
        let stdin = try pipe()
        let stdout = try pipe()
        let stderr = try pipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin.read, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr.write, 2)
        _ = addClosefrom(&actions, 3)
        _ = directory.withCString { addChdir(&actions, $0) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group, as Foundation's Process gives it.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)

        let argv = ([executable] + arguments).map { strdup($0) }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") }
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid = pid_t()
        let spawned = (argv + [nil]).withUnsafeBufferPointer { argvBuffer in
            (envp + [nil]).withUnsafeBufferPointer { envpBuffer in
                posix_spawn(
                    &pid, executable, &actions, &attributes, UnsafeMutablePointer(mutating: argvBuffer.baseAddress!),
                    UnsafeMutablePointer(mutating: envpBuffer.baseAddress!))
            }
        }
        close(stdin.read)
        close(stdout.write)
        close(stderr.write)
        let writer = FileHandle(fileDescriptor: stdin.write, closeOnDealloc: true)
        let outputReader = FileHandle(fileDescriptor: stdout.read, closeOnDealloc: true)
        let errorReader = FileHandle(fileDescriptor: stderr.read, closeOnDealloc: true)
        guard spawned == 0 else {
            throw LaunchFailure(description: "cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        // Both pipes drained at once, so a chatty child never blocks on a full one.
        let outputBox = DataBox()
        let errorBox = DataBox()
        let group = DispatchGroup()
        for (reader, box) in [(outputReader, outputBox), (errorReader, errorBox)] {
            group.enter()
            DispatchQueue.global().async {
                box.data = reader.readDataToEndOfFile()
                group.leave()
            }
        }
        // A child may exit without reading its input; that is its answer, not a test failure.
        if let input { try? writer.write(contentsOf: input) }
        try? writer.close()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else {
                throw LaunchFailure(description: "cannot wait for \(executable): \(String(cString: strerror(errno)))")
            }
        }
        group.wait()
        let signal = status & 0x7f
        return Outcome(
            status: signal == 0 ? (status >> 8) & 0xff : signal, stdout: outputBox.data, stderr: errorBox.data,
            signalled: signal != 0)
    }

    private static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        guard Glibc.pipe(&ends) == 0 else {
            throw LaunchFailure(description: "cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        // Not inherited by children started elsewhere (Foundation's Process) before this one takes them.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }
}
