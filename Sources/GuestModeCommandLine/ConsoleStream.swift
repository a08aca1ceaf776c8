import Foundation
import GuestModeKit

/// Standard output and standard error, written whole with write(2).
///
/// Foundation's `FileHandle.write(_:)` traps when a write fails, so `guestmode counters U >/dev/full`
/// crashed. Here a failed write to standard output ends the command the way guestmode(1) documents a
/// full disk or an I/O failure (`StandardStream.writeFailure`): one line on standard error (a JSON
/// document with --json) and exit status 74, as `cat` and `sqlite3` end on a full disk. A failed write
/// to standard error is dropped: there is nowhere left to say it.
///
/// ```swift
/// ConsoleStream.output.write("ACTION  TOTAL\n")
/// ```
package enum ConsoleStream {
    case output
    case error

    private var descriptor: Int32 {
        switch self {
        case .output: STDOUT_FILENO
        case .error: STDERR_FILENO
        }
    }

    /// Writes all of `text`, retrying after a signal or a partial write.
    package func write(_ text: String) {
        var text = text
        let failure = text.withUTF8 { StandardStream.writeAll(UnsafeRawBufferPointer($0), to: descriptor) }
        guard let failure, self == .output else { return }
        // With SIGPIPE at its default a closed pipe never gets here; a parent that ignores it
        // sends EPIPE, which is an I/O failure like any other.
        let error = StandardStream.writeFailure(failure)
        // Not through `CommandLineMain`, which closes the stores first: a write can come from inside a
        // transaction, whose connection cannot be closed from here. The store rolls it back when next opened.
        exit(report(error, isJSON: CommandLine.arguments.dropFirst().contains("--json")))
    }
}
