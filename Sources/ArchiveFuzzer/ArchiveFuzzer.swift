import Foundation
import GuestModeArchive
import GuestModeKit
import GuestModeSQLite

// libFuzzer target for the archive reader, header trust and row validation:
// each input is written to a file and imported (dry run) into an in-memory
// voice store. Any thrown GuestModeError is an accepted outcome; a crash,
// a trap or a hang is a finding. Built with -DFUZZING and run by `make fuzz`
// (swift build -Xswiftc -sanitize=fuzzer), seeded from Tests/Fuzz/corpus.

private let profileText: String = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    return (try? String(contentsOf: root.appendingPathComponent("Templates/voice.yaml"), encoding: .utf8)) ?? ""
}()
/// Fixed, and after every seed was written, so runs repeat exactly.
private let now = Date(timeIntervalSince1970: 1_900_000_000)
private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("guestmode-fuzz-\(getpid())")

/// libFuzzer's entry point: one input, read as an archive and imported into a fresh store.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    // The reader picks the format from the extension: name the file after its magic bytes.
    let magic = Array(UnsafeRawBufferPointer(start: start, count: min(count, 4)))
    let ext =
        magic.starts(with: [0x28, 0xB5, 0x2F, 0xFD]) ? "gmbackup" : magic.starts(with: [0x50, 0x4B]) ? "zip" : "tar.gz"
    let path = directory.appendingPathComponent("input.\(ext)").path
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes: start, count: count)) else { return 0 }
    guard let engine = try? GuestMode.inMemory(profileText: profileText, now: now) else { return 0 }
    _ = try? engine.importBackup(from: path, onConflict: .replace, dryRun: false, now: now)
    _ = try? BackupArchive.verify(path: path, full: true)
    return 0
}

#if FUZZING
// SwiftPM links an executable's entry point as `ArchiveFuzzer_main` and
// aliases `main` to it, which hides libFuzzer's own main; so enter
// libFuzzer through its documented driver instead.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafeRawPointer?, Int) -> CInt
) -> CInt

/// The process's `main`, which hands control to libFuzzer's driver.
@_cdecl("ArchiveFuzzer_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { data, size in
        guard let data else { return 0 }
        return fuzz(data, size)
    }
}
#else
/// Without libFuzzer (a plain `swift build`), replays the files given as
/// arguments through the same target, so a crashing input can be rerun
/// under a debugger: `.build/debug/ArchiveFuzzer crash-…`.
@main
enum Replay {
    static func main() {
        for path in CommandLine.arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            _ = data.withUnsafeBytes { bytes in bytes.baseAddress.map { fuzz($0, bytes.count) } }
            print("ok \(path)")
        }
    }
}
#endif
