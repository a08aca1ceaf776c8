import Foundation
import GuestModeKit

/// The bytes of a file named on the command line, or of standard input for `-`.
package func readInput(_ path: String) throws -> Data {
    if path == "-" { return try StandardStream.readStandardInput() }
    guard FileManager.default.fileExists(atPath: path) else {
        throw GuestModeError(.fileNotFound, "no file '\(path)'")
    }
    do {
        return try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
        throw GuestModeError(.ioError, "cannot read '\(path)': \(error.localizedDescription)")
    }
}
