import Foundation
import Testing

/// The debug build's fault hook `GUESTMODE_TEST_FAIL_AT=track-key|meter-use-key`
/// fails a write after its idempotency key was checked and written, before the
/// commit (Sources/GuestModeCommandLine/FaultHooks.swift): the failed run leaves
/// nothing, the retry counts once, a second retry is a duplicate.
@Suite("Idempotency keys under an injected failure, through the binary")
struct IdempotencyFaultTests {
    private func sandbox(_ backend: String) async throws -> Sandbox {
        let sandbox =
            backend == "sqlite" ? try await Sandbox.withStore("voice") : try await Sandbox.withPostgresStore("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        return sandbox
    }

    /// What the failed write could have changed, as text (PostgreSQL has no file to compare).
    private func state(_ sandbox: Sandbox, _ backend: String, _ guest: String) async throws -> String {
        if backend == "sqlite" { return try sandbox.snapshot().base64EncodedString() }
        var text = ""
        for arguments in [
            ["counters", guest, "--json"], ["user", "events", guest, "--json"], ["meter", "status", guest, "--json"],
        ] {
            text += try await sandbox.run(arguments: arguments).stdout
        }
        return text
    }

    @Test(
        "track --id: a failure after the key check leaves nothing; the retry counts once",
        arguments: ["sqlite", "postgres"])
    func track(backend: String) async throws {
        let sandbox = try await sandbox(backend)
        let guest = try await sandbox.newGuest()
        let before = try await state(sandbox, backend, guest)
        let arguments = ["track", guest, "command_spoken", "--count", "3", "--id", "e1", "--json"]
        let failed = try await sandbox.run(arguments: arguments, environment: ["GUESTMODE_TEST_FAIL_AT": "track-key"])
        #expect(failed.status == 1, "\(failed.stderr)")
        #expect(failed.stderr.contains("fault injected at track-key"), "\(failed.stderr)")
        #expect(try await state(sandbox, backend, guest) == before, "the failed write left nothing, its key included")

        let retried = try await sandbox.run(arguments: arguments)
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(retried.object["counted"] as? Bool == true, "\(retried.stdout)")
        #expect(retried.object["total"] as? Int == 3, "\(retried.stdout)")
        let again = try await sandbox.run(arguments: arguments)
        #expect(again.object["counted"] as? Bool == false && again.object["total"] as? Int == 3, "\(again.stdout)")
        let counters = try await sandbox.run("counters", guest, "--json")
        #expect((counters.object["counters"] as? [String: Any])?["command_spoken"] as? Int == 3, "\(counters.stdout)")
    }

    @Test(
        "meter use --id: a failure after the key check leaves nothing; the retry counts once",
        arguments: ["sqlite", "postgres"])
    func meterUse(backend: String) async throws {
        let sandbox = try await sandbox(backend)
        let guest = try await sandbox.newGuest()
        let before = try await state(sandbox, backend, guest)
        let arguments = ["meter", "use", guest, "api_minutes", "10", "--id", "call-1", "--json"]
        let failed = try await sandbox.run(
            arguments: arguments, environment: ["GUESTMODE_TEST_FAIL_AT": "meter-use-key"])
        #expect(failed.status == 1, "\(failed.stderr)")
        #expect(failed.stderr.contains("fault injected at meter-use-key"), "\(failed.stderr)")
        #expect(try await state(sandbox, backend, guest) == before, "the failed write left nothing, its key included")
        // The hook of one write does not fire in another.
        let other = try await sandbox.run(
            arguments: ["track", guest, "app_opened", "--id", "o1"],
            environment: ["GUESTMODE_TEST_FAIL_AT": "meter-use-key"])
        #expect(other.status == 0, "\(other.stderr)")

        let retried = try await sandbox.run(arguments: arguments)
        #expect(retried.status == 0, "\(retried.stderr)")
        let again = try await sandbox.run(arguments: arguments)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.object["duplicate"] as? Bool == true, "\(again.stdout)")
        let status = try await sandbox.run("meter", "status", guest, "api_minutes", "--json")
        #expect((status.json as? [[String: Any]])?.first?["used"] as? Double == 10, "\(status.stdout)")
    }
}
