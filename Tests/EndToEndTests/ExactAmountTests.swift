import Foundation
import Testing

/// Meters add up exactly: what the JSON, the text
/// and the gate say always agree, and amounts are plain decimals or refused.
@Suite("Exact meter amounts")
struct ExactAmountTests {
    @Test("a voice guest who uses 12.2, 19.9, 12.9 and 15 × 1 minutes has exactly 60 used and the gate exits 12")
    func usageAddsUpExactly() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        for amount in ["12.2", "19.9", "12.9"] + Array(repeating: "1", count: 15) {
            let use = try await sandbox.run("meter", "use", guest, "api_minutes", amount, "--json")
            #expect(use.status == 0, "\(amount): \(use.stderr)")
        }
        let status = try await sandbox.run("meter", "status", guest, "api_minutes", "--json")
        #expect(status.status == 0)
        let meter = try #require((status.json as? [[String: Any]])?.first)
        #expect(meter["used"] as? Double == 60)
        #expect(meter["remaining"] as? Double == 0)
        #expect(meter["level"] as? String == "exhausted")
        #expect(status.stdout.contains(#""used" : 60\#n"#))
        #expect(status.stdout.contains(#""remaining" : 0,"#))
        #expect(!status.stdout.contains("99999"))

        let gate = try await sandbox.run("meter", "check", guest, "api_minutes")
        #expect(gate.status == 12)
        #expect(gate.stderr.contains("60/60 minutes used (100%), 0 left, level exhausted"))
        #expect(try await sandbox.run("meter", "check", guest, "api_minutes", "0.000001").status == 12)
        let text = try await sandbox.run("meter", "status", guest, "api_minutes")
        #expect(text.stdout.contains("60"))
        #expect(!text.stdout.contains("59.99"))
        // The usage report adds up the same way.
        let report = try await sandbox.run("report", "usage", "--json")
        #expect(report.status == 0, "\(report.stderr)")
        #expect(report.stdout.contains(#""amount" : 60,"#), "\(report.stdout)")
        #expect(!report.stdout.contains("59.99"))
    }

    @Test("partial amounts print as written, in JSON and text")
    func partialAmountsPrintPlainly() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "12.2").status == 0)
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "2.8").status == 0)
        let status = try await sandbox.run("meter", "status", guest, "api_minutes", "--json")
        #expect(status.stdout.contains(#""used" : 15\#n"#))
        #expect(status.stdout.contains(#""remaining" : 45,"#), "not 44.99999999999999")
        let use = try await sandbox.run("meter", "use", guest, "api_minutes", "0.1")
        #expect(use.stdout.contains("recorded 0.1 minutes: api_minutes 15.1/60 minutes used"))
        #expect(use.stdout.contains("44.9 left"))
        let check = try await sandbox.run("meter", "check", guest, "api_minutes", "44.9", "--json")
        #expect(check.status == 0)
        #expect(check.stdout.contains(#""requested" : 44.9,"#))
        #expect(try await sandbox.run("meter", "check", guest, "api_minutes", "44.900001").status == 12)
    }

    @Test(
        "amounts that are not plain positive decimals are usage errors, exit 64, and record nothing",
        arguments: ["1e308", "0x10", "nan", "inf", "0", "-5", "0.1234567", "1000000000", "1,5"])
    func badAmountsAreRefused(amount: String) async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let guest = try await sandbox.newGuest()
        // After '--' a leading '-' is an operand, not an option.
        let operand = amount.hasPrefix("-") ? ["--", amount] : [amount]
        let use = try await sandbox.run(arguments: ["meter", "use", guest, "api_minutes"] + operand)
        #expect(use.status == 64, "meter use \(amount): \(use.stdout)")
        #expect(use.stderr.contains("'\(amount)'"), "the message names the amount: \(use.stderr)")
        let check = try await sandbox.run(arguments: ["meter", "check", guest, "api_minutes"] + operand)
        #expect(check.status == 64, "meter check \(amount): \(check.stdout)")
        #expect(check.stderr.contains("'\(amount)'"))
        let json = try await sandbox.run(arguments: ["meter", "use", "--json", guest, "api_minutes"] + operand)
        #expect(json.status == 64)
        #expect(json.errorJSON["code"] as? String == "invalid_amount")
        #expect(try await sandbox.run(arguments: ["meter", "use", guest, "api_minutes", amount]).status == 64)
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM meter_usage") == "0")
        let status = try await sandbox.run("meter", "status", guest, "api_minutes", "--json")
        #expect(status.status == 0)
        #expect(((status.json as? [[String: Any]])?.first)?["used"] as? Double == 0)
    }
}
