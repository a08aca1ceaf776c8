import Foundation
import Testing

/// `backup import` refuses rows dated after the current time, and the
/// current time is `--now` (or `GUESTMODE_NOW`) when given, as for every
/// other command; only without either is it the wall clock.
@Suite("backup import and the clock")
struct BackupClockTests {
    static let lastSeen = "2027-05-01T00:00:00Z"

    /// A habits store whose one user was created and last seen at `lastSeen`, exported to `seen.gmbackup`.
    static func backupSeen(at time: String) async throws -> Sandbox {
        let sandbox = try Sandbox()
        #expect(try await sandbox.run("init", "--profile", "habits").status == 0)
        let guest = try await sandbox.run(arguments: ["--now", time, "guest", "new"])
        #expect(guest.status == 0, "\(guest.stderr)")
        let exported = try await sandbox.run(
            arguments: ["--now", time, "backup", "export", "--all", "--out", "seen.gmbackup"])
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(try await sandbox.run("--store", "fresh.sqlite", "init", "--profile", "habits").status == 0)
        return sandbox
    }

    @Test("--now 2027-06-01 imports a user last seen 2027-05-01; GUESTMODE_NOW does the same")
    func nowAfterTheBackup() async throws {
        let sandbox = try await Self.backupSeen(at: Self.lastSeen)
        let imported = try await sandbox.run(
            arguments: [
                "--now", "2027-06-01T00:00:00Z", "--store", "fresh.sqlite", "backup", "import", "seen.gmbackup",
            ])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains("imported"), "\(imported.stdout)")
        #expect(try await sandbox.run("--store", "fresh.sqlite", "user", "list").stdout.contains("2027-05-01"))

        #expect(try await sandbox.run("--store", "other.sqlite", "init", "--profile", "habits").status == 0)
        let fromEnvironment = try await sandbox.run(
            arguments: ["--store", "other.sqlite", "backup", "import", "seen.gmbackup"],
            environment: ["GUESTMODE_NOW": "2027-06-01T00:00:00Z"])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
    }

    @Test("a --now before the backup refuses it with 65 and changes nothing")
    func nowBeforeTheBackup() async throws {
        let sandbox = try await Self.backupSeen(at: Self.lastSeen)
        let refused = try await sandbox.run(
            arguments: [
                "--now", "2027-04-01T00:00:00Z", "--store", "fresh.sqlite", "backup", "import", "seen.gmbackup",
            ])
        #expect(refused.status == 65, "\(refused.stderr)")
        #expect(refused.stderr.contains("after the current time 2027-04-01"), "\(refused.stderr)")
        let users = try await sandbox.run("--store", "fresh.sqlite", "user", "list", "--json")
        #expect(!users.stdout.contains("2027-05-01"), "\(users.stdout)")
    }

    @Test("without --now the wall clock decides: a backup from a year ahead is refused with 65")
    func wallClock() async throws {
        // The literal 2027 backup is ahead of the clock only until 2027; one
        // made a year ahead of the clock proves the same for any date.
        let ahead = try await Self.backupSeen(at: "+365d")
        let refused = try await ahead.run("--store", "fresh.sqlite", "backup", "import", "seen.gmbackup")
        #expect(refused.status == 65, "\(refused.stderr)")
        #expect(refused.stderr.contains("after the current time"), "\(refused.stderr)")

        let literal = try await Self.backupSeen(at: Self.lastSeen)
        let imported = try await literal.run("--store", "fresh.sqlite", "backup", "import", "seen.gmbackup")
        if let lastSeen = ISO8601DateFormatter().date(from: Self.lastSeen),
            Date() < lastSeen.addingTimeInterval(-86_400)
        {
            #expect(imported.status == 65, "\(imported.stderr)")
            #expect(imported.stderr.contains("after the current time"), "\(imported.stderr)")
        } else {
            #expect(imported.status == 0, "\(imported.stderr)")
        }
    }
}
