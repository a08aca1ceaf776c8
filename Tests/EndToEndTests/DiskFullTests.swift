import Foundation
import GuestModeCommandLine
import Testing

/// A small tmpfs mounted inside a sandbox: a disk that can really be filled.
/// Mounting needs root, which `make test` has on the machines it runs on; a
/// machine where it cannot mount fails these tests and says why, it does not skip them.
final class SmallDisk {
    let path: String

    init(in sandbox: Sandbox, name: String = "disk", kilobytes: Int = 256) throws {
        path = sandbox.path(name)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let mounted = SmallDisk.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k,mode=1777", "tmpfs", path])
        try #require(
            mounted.status == 0,
            "cannot mount a tmpfs at \(path) (\(mounted.output.trimmingCharacters(in: .whitespacesAndNewlines))): the disk-full tests need root (mount -t tmpfs)"
        )
    }

    deinit { _ = SmallDisk.run("/bin/umount", ["-l", path]) }

    /// Fills the disk, then gives back `bytes` (rounded to pages by tmpfs).
    func leave(_ bytes: Int) throws {
        let fill = (path as NSString).appendingPathComponent("fill")
        _ = FileManager.default.createFile(atPath: fill, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: fill))
        let chunk = Data(count: 4096)
        while (try? handle.write(contentsOf: chunk)) != nil {}
        try? handle.close()
        let size = (try FileManager.default.attributesOfItem(atPath: fill)[.size] as? Int) ?? 0
        try #require(truncate(fill, off_t(max(0, size - bytes))) == 0)
    }

    /// What is on the disk besides the filler.
    var files: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? ["(unreadable)"]).filter { $0 != "fill" }
            .sorted()
    }

    private static func run(_ executable: String, _ arguments: [String]) -> (status: Int32, output: String) {
        let outcome: ChildProcess.Outcome
        do { outcome = try ChildProcess.run(executable, arguments: arguments) } catch { return (-1, "\(error)") }
        return (outcome.termination.status, String(decoding: outcome.output + outcome.errors, as: UTF8.self))
    }
}

@Suite("A full disk: exit 74 naming the folder that is full, nothing left half-made")
struct DiskFullTests {
    func expectDiskFull(
        _ result: Sandbox.Result, naming folder: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(!result.signalled, "signal: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.status == 74, "exit \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains("no space left"), "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(folder), "\(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test("init on a full disk exits 74 and leaves no store, whatever room is left", arguments: [0, 4, 12, 20, 28, 60])
    func initOnAFullDisk(kilobytesLeft: Int) async throws {
        let sandbox = try Sandbox()
        let disk = try SmallDisk(in: sandbox)
        try disk.leave(kilobytesLeft * 1024)
        sandbox.environment["GUESTMODE_STORE"] = disk.path + "/guestmode.sqlite"
        sandbox.environment["GUESTMODE_BACKUP_KEY_FILE"] = sandbox.path("deployment.key")
        let result = try await sandbox.run("init", "--profile", "recipes")
        expectDiskFull(result, naming: disk.path)
        #expect(disk.files == [], "left behind: \(disk.files)")
        let json = try await sandbox.run("init", "--profile", "recipes", "--json")
        #expect(json.status == 74)
        #expect(json.errorJSON["code"] as? String == "disk_full", "\(json.stderr)")
    }

    @Test("a write that finds the store's disk full exits 74 and changes nothing")
    func writeOnAFullDisk() async throws {
        let sandbox = try Sandbox()
        // Room for a new store and its write-ahead log while it is created (about 500 KB); the test then fills the rest.
        let disk = try SmallDisk(in: sandbox, kilobytes: 1024)
        sandbox.environment["GUESTMODE_STORE"] = disk.path + "/guestmode.sqlite"
        #expect(try await sandbox.run("init", "--profile", "recipes").status == 0)
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("record", "put", guest, "recipes", "a", "--data", "{}").status == 0)
        try disk.leave(0)
        let big = "{\"text\":\"" + String(repeating: "x", count: 200_000) + "\"}"
        try sandbox.write("big.json", big)
        let put = try await sandbox.run("record", "put", guest, "recipes", "b", "--file", "big.json")
        expectDiskFull(put, naming: "'\(disk.path)/guestmode.sqlite'")
        try FileManager.default.removeItem(atPath: disk.path + "/fill")
        let listed = try await sandbox.run("record", "list", guest, "recipes", "--format", "tsv", "-q")
        #expect(listed.stdout.split(separator: "\n").count == 1, "\(listed.stdout)")
        #expect(try await sandbox.run("db", "check").status == 0)
    }

    @Test("a full TMPDIR during backup export --out - is named as TMPDIR, not blamed on the store")
    func fullTemporaryFolder() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guest = try await sandbox.newGuest()
        var random = SystemRandomNumberGenerator()
        for index in 0..<8 {
            let noise = (0..<6000).map { _ in String(UInt8.random(in: 0...255, using: &random), radix: 16) }.joined()
            let put = try await sandbox.run(
                "record", "put", guest, "recipes", "r\(index)", "--data", "{\"n\":\"\(noise)\"}")
            #expect(put.status == 0, "\(put.stderr)")
        }
        let before = try sandbox.snapshot()
        let disk = try SmallDisk(in: sandbox, name: "tmp")
        try disk.leave(8 * 1024)
        sandbox.environment["TMPDIR"] = disk.path
        let exported = try await sandbox.run("backup", "export", "--all", "--out", "-")
        expectDiskFull(exported, naming: "'\(disk.path)' (TMPDIR)")
        #expect(!exported.stderr.contains("disk holding the store"), "\(exported.stderr)")
        #expect(exported.stdout.isEmpty)
        #expect(disk.files == [], "left behind: \(disk.files)")
        #expect(try sandbox.snapshot() == before)
        // Standard input spooled for reading goes to TMPDIR too.
        sandbox.environment["TMPDIR"] = nil
        #expect(try await sandbox.run("backup", "export", "--all", "--out", "all.tar.zst").status == 0)
        sandbox.environment["TMPDIR"] = disk.path
        let verified = try await sandbox.shell(
            "cat all.tar.zst all.tar.zst all.tar.zst 2>/dev/null | TMPDIR='\(disk.path)' '\(Sandbox.binary.path)' backup verify -"
        )
        expectDiskFull(verified, naming: "'\(disk.path)' (TMPDIR)")
        #expect(disk.files == [], "left behind: \(disk.files)")
    }

    /// A whole-store export keeps its user list past 1 MiB in a temporary file (read twice: header.json's size,
    /// then its bytes); a full TMPDIR there is a full disk like any other, not an I/O error.
    @Test("a full TMPDIR under a whole-store export's user list exits 74 naming TMPDIR, and no archive is left")
    func fullTemporaryFolderUnderTheUserList() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        // 9,000 users of 118-byte ids: more than the list's 1 MiB held in memory.
        let lines = (0..<9_000).map { index in
            #"{"user":"u\#(String(repeating: "x", count: 110))-\#(index)","action":"app_opened","at":"2026-11-01T08:00:00Z"}"#
        }
        try sandbox.write("users.ndjson", lines.joined(separator: "\n") + "\n")
        let tracked = try await sandbox.run("track", "--from", "users.ndjson", "--create-users", "--quiet")
        #expect(tracked.status == 0, "\(tracked.stderr)")
        let before = try sandbox.snapshot()
        let disk = try SmallDisk(in: sandbox, name: "tmp")
        try disk.leave(0)
        sandbox.environment["TMPDIR"] = disk.path
        let exported = try await sandbox.run("backup", "export", "--all", "--out", "all.tar.zst")
        expectDiskFull(exported, naming: "'\(disk.path)' (TMPDIR)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("all.tar.zst")))
        #expect(disk.files == [], "left behind: \(disk.files)")
        #expect(try sandbox.snapshot() == before)
        let json = try await sandbox.run("backup", "export", "--all", "--out", "all.tar.zst", "--json")
        #expect(json.status == 74)
        #expect(json.errorJSON["code"] as? String == "disk_full", "\(json.stderr)")
        // With room, the same export is whole.
        sandbox.environment["TMPDIR"] = nil
        let whole = try await sandbox.run("backup", "export", "--all", "--out", "all.tar.zst", "--json")
        #expect(whole.status == 0, "\(whole.stderr)")
    }

    @Test("an archive written onto a full disk exits 74 naming it, and no partial file is left")
    func archiveOnAFullDisk() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guest = try await sandbox.newGuest()
        let noise = (0..<20000).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        #expect(
            try await sandbox.run("record", "put", guest, "recipes", "r", "--data", "{\"n\":\"\(noise)\"}").status == 0)
        let disk = try SmallDisk(in: sandbox)
        try disk.leave(4 * 1024)
        for format in ["tar.zst", "tar.gz", "zip"] {
            let result = try await sandbox.run("backup", "export", "--all", "--out", disk.path + "/all." + format)
            expectDiskFull(result, naming: disk.path)
            #expect(disk.files == [], "\(format) left behind: \(disk.files)")
        }
    }

    @Test("standard output on a full device is disk_full, exit 74, not a crash, with and without --json")
    func standardOutputOnAFullDevice() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("track", guest, "app_opened").status == 0)
        let before = try sandbox.snapshot()
        let binary = Sandbox.binary.path
        let message =
            "no space left on the disk standard output is written to; free space there and run the command again"
        // A table, a JSON document, and a listing written in chunks (`user list`).
        for command in ["counters \(guest)", "counters \(guest) --json", "user list", "user list --json"] {
            let result = try await sandbox.shell("'\(binary)' \(command) >/dev/full")
            #expect(!result.signalled, "\(command): signal: \(result.stderr)")
            #expect(result.status == 74, "\(command): exit \(result.status): \(result.stderr)")
            #expect(!result.stderr.contains("Fatal error"), "\(command): \(result.stderr)")
            if command.hasSuffix("--json") {
                #expect(result.errorJSON["code"] as? String == "disk_full", "\(command): \(result.stderr)")
                #expect(result.errorJSON["message"] as? String == message, "\(command): \(result.stderr)")
            } else {
                #expect(result.stderr == "guestmode: \(message)\n", "\(command)")
            }
        }
        // Standard output closed: any other failed write is io_error.
        let closed = try await sandbox.shell("'\(binary)' counters \(guest) >&-")
        #expect(!closed.signalled && closed.status == 74, "exit \(closed.status): \(closed.stderr)")
        #expect(closed.stderr == "guestmode: cannot write standard output: Bad file descriptor\n")
        let closedJSON = try await sandbox.shell("'\(binary)' counters \(guest) --json >&-")
        #expect(
            closedJSON.status == 74 && closedJSON.errorJSON["code"] as? String == "io_error", "\(closedJSON.stderr)")
        #expect(try sandbox.snapshot() == before, "the store changed")
    }
}
