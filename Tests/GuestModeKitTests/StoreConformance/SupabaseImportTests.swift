import Foundation
import Testing

@testable import GuestModeKit

/// `auth.users` and `auth.identities` exported by psql itself
/// (`\copy (SELECT * FROM auth.… ORDER BY …) TO … CSV HEADER`) from tables
/// shaped as Supabase's: an anonymous user, an Apple user and an email and
/// password user (`Fixtures/supabase/`).
private func supabaseExport() throws -> (users: URL, identities: URL) {
    (
        try #require(Bundle.module.url(forResource: "users", withExtension: "csv", subdirectory: "Fixtures/supabase")),
        try #require(
            Bundle.module.url(forResource: "identities", withExtension: "csv", subdirectory: "Fixtures/supabase"))
    )
}

private func scratch(_ text: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("supabase-\(UUID().uuidString).csv")
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url
}

private let now = Timestamp.parse("2026-11-20T00:00:00Z")!

@Suite struct CSVRecordReaderTests {
    private func records(_ text: String) throws -> [[String?]] {
        var reader = try CSVRecordReader(url: try scratch(text), label: "t.csv")
        defer { reader.close() }
        var records: [[String?]] = []
        while let record = try reader.next() { records.append(record.fields) }
        return records
    }

    @Test func readsPsqlCSVWithNullsEmptyStringsQuotesAndLineBreaks() throws {
        #expect(try records("a,b,c\n1,,\"\"\n") == [["a", "b", "c"], ["1", nil, ""]])
        #expect(try records("x,\"say \"\"hi\"\", ok\"\n") == [["x", "say \"hi\", ok"]])
        #expect(try records("\"two\nlines\",y\r\nz,w") == [["two\nlines", "y"], ["z", "w"]])
        #expect(try records("").isEmpty)
    }

    @Test func countsTheLineEachRecordStartsOn() throws {
        var reader = try CSVRecordReader(url: try scratch("h\n\"a\nb\"\nc\n"), label: "t.csv")
        defer { reader.close() }
        #expect(try reader.next()?.line == 1)
        #expect(try reader.next()?.line == 2)
        #expect(try reader.next()?.line == 4)
    }

    @Test(arguments: [
        ("\"open", "not closed"), ("ab\"c\n", "a quote in the middle"), ("\"a\"b\n", "after the closing quote"),
    ])
    func refusesWhatPsqlNeverWrites(text: String, reason: String) throws {
        #expect {
            _ = try records(text)
        } throws: { error in
            (error as? GuestModeError)?.code == .invalidImportFile
                && (error as? GuestModeError)?.message.contains(reason) == true
        }
    }
}

@Suite("user import from Supabase on every backend")
struct SupabaseImportTests {
    @Test func psqlTimesAreRead() {
        #expect(
            ImportedAccount.supabaseTime("2025-10-30 12:00:00.123456+00")
                == Timestamp.parse("2025-10-30T12:00:00.123456Z"))
        #expect(ImportedAccount.supabaseTime("2025-11-03 10:00:00+05:30") == Timestamp.parse("2025-11-03T04:30:00Z"))
        #expect(ImportedAccount.supabaseTime("2025-11-03T10:00:00Z") == nil)
        #expect(ImportedAccount.supabaseTime("yesterday") == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func importsUsersWithTheirIdentitiesKeepingIds(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let (users, identities) = try supabaseExport()
        let report = try engine.importUsers(from: users, identities: identities, format: .supabase, now: now)
        #expect(report.accounts == 3 && report.usersCreated == 3)
        #expect(report.anonymous == 1 && report.linked == 2 && report.identities == 2)
        #expect(report.passwordHashesSkipped == 1)
        let guest = try engine.details(user: "1f0e7a52-3c1b-4d6e-9a8b-2c3d4e5f6a7b", now: now)
        #expect(guest.user.state == .anonymous && guest.identities.isEmpty)
        #expect(guest.user.lastSeenAt == Timestamp.parse("2025-10-31T12:00:00.5Z"))
        let apple = try engine.details(user: "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d", now: now)
        #expect(apple.identities.map { "\($0.provider) \($0.subject)" } == ["apple 001234.5d9c0a1b2c3d.0912"])
        let email = try engine.details(user: "9c8b7a6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d", now: now)
        #expect(email.identities.map(\.provider) == ["email"] && email.user.state == .linked)
        let again = try engine.importUsers(from: users, identities: identities, format: .supabase, now: now)
        #expect(again.unchanged == 3 && again.usersCreated == 0)
    }

    @Test(arguments: StoreBackend.allCases)
    func filesOutOfOrderOrInconsistentAreRefusedWhole(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let (users, identities) = try supabaseExport()
        let lines = try String(contentsOf: users, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: true)
        let reversed = try scratch(([lines[0]] + lines.dropFirst().reversed()).joined(separator: "\n") + "\n")
        do {
            _ = try engine.importUsers(
                from: reversed, label: "users.csv", identities: identities, format: .supabase, now: now)
            Issue.record("imported users out of order")
        } catch let error as GuestModeError {
            #expect(error.code == .invalidImportFile)
            #expect(error.message.contains("users.csv:3: the rows are not ordered by id"), "\(error.message)")
        }
        // An identity whose user is not in the users file.
        let orphan = try scratch(
            "provider_id,user_id,provider\n0001,0000aaaa-0000-0000-0000-000000000000,google\n")
        expectFailure(.badData, code: .invalidImportFile) {
            _ = try engine.importUsers(from: users, identities: orphan, format: .supabase, now: now)
        }
        let noColumn = try scratch("id,created_at\n1,2025-10-30 12:00:00+00\n")
        expectFailure(.badData, code: .invalidImportFile) {
            _ = try engine.importUsers(from: noColumn, identities: identities, format: .supabase, now: now)
        }
        let anonymousWithIdentity = try scratch(
            "id,created_at,last_sign_in_at,is_anonymous\n5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d,2025-10-30 12:00:00+00,,t\n"
        )
        let appleOnly = try scratch(
            "provider_id,user_id,provider\n001234.x,5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d,apple\n")
        expectFailure(.badData, code: .invalidImportFile) {
            _ = try engine.importUsers(from: anonymousWithIdentity, identities: appleOnly, format: .supabase, now: now)
        }
        #expect(try engine.users(matching: UserFilter(), now: now).isEmpty, "nothing was imported")
    }
}
