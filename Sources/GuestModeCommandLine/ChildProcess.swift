import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A program started with `posix_spawn`, for `guestmode tour`, the shell completions of `guestmode
/// serve` and the tests. Not Foundation's `Process`: on Linux (Swift 6.3.1) its `run()` copies each
/// `/proc/self/fd` entry's name as a whole 256-byte field, which can read past the end of glibc's
/// directory buffer and crash the parent (swift-corelibs-foundation#5472, fixed after 6.3.1); a CI
/// run of the tests died so. This reads no directory: the child closes every descriptor above 2
/// itself (`closefrom`), after taking its standard streams. Every libc call of it is in this file.
///
/// ```swift
/// let child = try ChildProcess("/usr/bin/env", arguments: ["true"])
/// let ending = try child.wait()  // ChildProcess.Termination(status: 0, signalled: false)
/// ```
package final class ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    package enum Stream: Sendable {
        /// The parent's own.
        case inherit
        /// `/dev/null`.
        case null
        /// A pipe, whose other end is the child's `input`, `output` or `errors`.
        case pipe
        /// An open descriptor of the parent's (a file), which the parent still owns.
        case descriptor(Int32)
    }

    /// How the child ended: its exit status, or the signal that ended it.
    package struct Termination: Sendable, Equatable {
        /// The exit status, or the signal's number when `signalled` (as `Process.terminationStatus`).
        package var status: Int32
        package var signalled: Bool
        /// Exited with status 0.
        package var succeeded: Bool { status == 0 && !signalled }

        package init(status: Int32, signalled: Bool) {
            self.status = status
            self.signalled = signalled
        }
    }

    /// A child run to its end by ``run(_:arguments:environment:directory:input:)``.
    package struct Outcome: Sendable {
        package var termination: Termination
        package var output: Data
        package var errors: Data
    }

    /// The child could not be started or waited for; `description` says why.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    package let processIdentifier: pid_t
    /// The parent's ends of the pipes asked for (`.pipe`), each closed when its handle goes.
    package let input: FileHandle?
    package let output: FileHandle?
    package let errors: FileHandle?
    /// Set once the child is reaped, under the lock, so its id is never signalled after the
    /// system may have given it to another process.
    private let ending = Mutex<Termination?>(nil)

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

    /// Starts `executable` (a path) with `arguments`, in `directory` (the parent's when nil), with
    /// `environment` exactly (the parent's when nil), in a process group of its own, as Foundation's
    /// `Process` starts it.
    package init(
        _ executable: String, arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        input: Stream = .null, output: Stream = .inherit, errors: Stream = .inherit
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group, every signal at its default action and none blocked, whatever the
        // parent ignores or blocks (a test runner, a server), as Foundation's Process starts it.
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)

        // The child's ends are closed here once it has them (or has failed to start); the parent's are kept.
        var childEnds: [Int32] = []
        defer { for end in childEnds { close(end) } }
        var parentEnds: [Int32?] = [nil, nil, nil]
        do {
            for (target, stream) in [input, output, errors].enumerated() {
                switch stream {
                case .inherit:
                    break
                case .null:
                    _ = "/dev/null".withCString {
                        posix_spawn_file_actions_addopen(
                            &actions, Int32(target), $0, target == 0 ? O_RDONLY : O_WRONLY, 0)
                    }
                case .descriptor(let descriptor):
                    posix_spawn_file_actions_adddup2(&actions, descriptor, Int32(target))
                case .pipe:
                    let (read, write) = try Self.pipe()
                    let (mine, theirs) = target == 0 ? (write, read) : (read, write)
                    parentEnds[target] = mine
                    childEnds.append(theirs)
                    posix_spawn_file_actions_adddup2(&actions, theirs, Int32(target))
                }
            }
            if let addClosefrom = Self.addClosefrom { _ = addClosefrom(&actions, 3) }
            if let directory {
                guard let addChdir = Self.addChdir else {
                    throw Failure(description: "this C library cannot start a program in another directory")
                }
                _ = directory.withCString { addChdir(&actions, $0) }
            }

            let argv = ([executable] + arguments).map { strdup($0) }
            let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } }
            defer {
                for pointer in argv + (envp ?? []) { free(pointer) }
            }
            var pid = pid_t()
            let spawned = (argv + [nil]).withUnsafeBufferPointer { argvBuffer in
                let arguments = UnsafeMutablePointer(mutating: argvBuffer.baseAddress!)
                guard let envp else { return posix_spawn(&pid, executable, &actions, &attributes, arguments, environ) }
                return (envp + [nil]).withUnsafeBufferPointer { envpBuffer in
                    posix_spawn(
                        &pid, executable, &actions, &attributes, arguments,
                        UnsafeMutablePointer(mutating: envpBuffer.baseAddress!))
                }
            }
            guard spawned == 0 else {
                throw Failure(description: "cannot start \(executable): \(String(cString: strerror(spawned)))")
            }
            processIdentifier = pid
        } catch {
            for case let end? in parentEnds { close(end) }
            throw error
        }
        self.input = parentEnds[0].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.output = parentEnds[1].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.errors = parentEnds[2].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
    }

    /// Runs `executable` with `input` on its standard input (then closed) and waits for it, reading
    /// both outputs to their end as it runs, so a chatty child never blocks on a full pipe. A child
    /// that exits before reading all of `input` raises SIGPIPE in the caller: pass input only from a
    /// process that ignores SIGPIPE (a test runner does; guestmode, which keeps its default, passes none).
    package static func run(
        _ executable: String, arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        input: Data? = nil
    ) throws -> Outcome {
        let child = try ChildProcess(
            executable, arguments: arguments, environment: environment, directory: directory,
            input: input == nil ? .null : .pipe, output: .pipe, errors: .pipe)
        let output = Collected()
        let errors = Collected()
        let group = DispatchGroup()
        for (reader, box) in [(child.output, output), (child.errors, errors)] {
            guard let reader else { continue }
            group.enter()
            DispatchQueue.global().async {
                let data = readAll(reader.fileDescriptor)
                box.data.withLock { $0 = data }
                group.leave()
            }
        }
        // A child may exit without reading its input; that is its answer, not a failure to run it.
        if let input, let writer = child.input {
            try? writer.write(contentsOf: input)
            try? writer.close()
        }
        let termination = try child.wait()
        group.wait()
        return Outcome(
            termination: termination, output: output.data.withLock { $0 }, errors: errors.data.withLock { $0 })
    }

    /// The pipe's bytes to its end, going on after an interrupted read (many children ending at
    /// once interrupt one another's reads), where `FileHandle` would stop.
    private static func readAll(_ descriptor: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                data.append(contentsOf: buffer[0..<count])
            } else if count == 0 || errno != EINTR {
                return data
            }
        }
    }

    private final class Collected: Sendable {
        let data = Mutex(Data())
    }

    /// Waits for the child to end (at once if it has).
    @discardableResult
    package func wait() throws -> Termination {
        if let ended = ending.withLock({ $0 }) { return ended }
        var status: Int32 = 0
        while waitpid(processIdentifier, &status, 0) == -1 {
            switch errno {
            case EINTR:
                continue
            case ECHILD:
                // Reaped by `isRunning` on another thread, which noted how it ended under the lock.
                if let ended = ending.withLock({ $0 }) { return ended }
                throw Failure(description: "process \(processIdentifier) is not this process's child")
            default:
                throw Failure(description: "cannot wait for a child: \(String(cString: strerror(errno)))")
            }
        }
        let ended = Self.termination(status)
        ending.withLock { $0 = ended }
        return ended
    }

    /// Whether the child has not ended yet; reaps it if it has.
    package var isRunning: Bool {
        ending.withLock { ended in
            if ended != nil { return false }
            var status: Int32 = 0
            guard waitpid(processIdentifier, &status, WNOHANG) == processIdentifier else { return true }
            ended = Self.termination(status)
            return false
        }
    }

    /// Sends `signal` to the child, unless it has been reaped (its id may then be another's).
    package func send(_ signal: Int32) {
        ending.withLock { ended in
            if ended == nil { _ = kill(processIdentifier, signal) }
        }
    }

    private static func termination(_ status: Int32) -> Termination {
        let signal = status & 0x7f
        return Termination(status: signal == 0 ? (status >> 8) & 0xff : signal, signalled: signal != 0)
    }

    private static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        guard Glibc.pipe(&ends) == 0 else {
            throw Failure(description: "cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        // Close-on-exec, so a child started meanwhile on another thread does not hold them open.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }
}
