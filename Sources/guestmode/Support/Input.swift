import Foundation
import GuestModeKit

/// The bytes of a file named on the command line, or of standard input for `-`.
func readInput(_ path: String) throws -> Data {
    if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
    guard FileManager.default.fileExists(atPath: path) else {
        throw GuestModeError(.notFound, code: "file_not_found", "no file '\(path)'")
    }
    do {
        return try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
        throw GuestModeError(.ioError, code: "io_error", "cannot read '\(path)': \(error.localizedDescription)")
    }
}
