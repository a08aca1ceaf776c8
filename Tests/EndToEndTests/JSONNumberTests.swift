import Foundation
import Testing

/// Stored JSON keeps its numbers exactly as written: a record's data and an
/// event's properties go through one writer (`JSONValue.canonicalText`),
/// compact with members sorted, and never through a binary floating point
/// number that would turn 12345678901234567890 into 1.2345678901234567e+19 or
/// 1.50 into 1.5.
@Suite("JSON numbers are kept as written")
struct JSONNumberTests {
    static let document = #"{"big":12345678901234567890,"r":1.50}"#

    static func store(_ backend: String, _ profile: String) async throws -> Sandbox {
        backend == "postgres" ? try await Sandbox.withPostgresStore(profile) : try await Sandbox.withStore(profile)
    }

    @Test("record put then record get gives the numbers back byte for byte", arguments: ["sqlite", "postgres"])
    func recordNumbers(backend: String) async throws {
        let sandbox = try await Self.store(backend, "recipes")
        let guest = try await sandbox.newGuest()
        let put = try await sandbox.run("record", "put", guest, "recipes", "k", "--data", Self.document)
        #expect(put.status == 0, "\(put.stderr)")
        let get = try await sandbox.run("record", "get", guest, "recipes", "k")
        #expect(get.stdout == Self.document + "\n")
        // Still the canonical form: compact, members sorted; the numbers untouched.
        let messy = #"{ "r" : 1.50, "a" : [ -0, 2.0E+2, 1e3 ], "big" : 12345678901234567890 }"#
        #expect(try await sandbox.run("record", "put", guest, "recipes", "m", "--data", messy).status == 0)
        let canonical = try await sandbox.run("record", "get", guest, "recipes", "m")
        #expect(canonical.stdout == #"{"a":[-0,2.0E+2,1e3],"big":12345678901234567890,"r":1.50}"# + "\n")
        let listed = try await sandbox.run("record", "list", guest, "recipes", "--json")
        // data is the object itself, its numbers with the digits they were written with.
        #expect(listed.stdout.contains(#""big" : 12345678901234567890"#), "\(listed.stdout)")
        #expect(listed.stdout.contains(#""r" : 1.50"#), "\(listed.stdout)")
        let compact = try await sandbox.run("record", "list", guest, "recipes", "--format", "ndjson")
        #expect(compact.stdout.contains(#""data":{"big":12345678901234567890,"r":1.50}"#), "\(compact.stdout)")
    }

    @Test("ownerless records and records loaded with --from keep their numbers too")
    func ownerlessAndBulkNumbers() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("record", "put-ownerless", "habits", "h1", "--data", Self.document).status == 0)
        #expect(try await sandbox.run("migrate", "adopt", guest).status == 0)
        #expect(try await sandbox.run("record", "get", guest, "habits", "h1").stdout == Self.document + "\n")
        try sandbox.write(
            "records.ndjson",
            #"{"user_id":"\#(guest)","collection":"habits","key":"h2","data":\#(Self.document)}"# + "\n")
        let load = try await sandbox.run("record", "load", "records.ndjson")
        #expect(load.status == 0, "\(load.stderr)")
        #expect(try await sandbox.run("record", "get", guest, "habits", "h2").stdout == Self.document + "\n")
    }

    @Test("a backup exported and imported into another store keeps the numbers")
    func backupNumbers() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("record", "put", guest, "recipes", "k", "--data", Self.document).status == 0)
        #expect(try await sandbox.run("backup", "export", guest, "--out", "user.gmbackup").status == 0)
        #expect(try await sandbox.run("--store", "other.sqlite", "init", "--profile", "recipes").status == 0)
        let imported = try await sandbox.run("--store", "other.sqlite", "backup", "import", "user.gmbackup")
        #expect(imported.status == 0, "\(imported.stderr)")
        let get = try await sandbox.run("--store", "other.sqlite", "record", "get", guest, "recipes", "k")
        #expect(get.stdout == Self.document + "\n", "\(get.stderr)")
    }

    @Test("track event properties come back from user events as written", arguments: ["sqlite", "postgres"])
    func eventNumbers(backend: String) async throws {
        let sandbox = try await Self.store(backend, "recipes")
        let guest = try await sandbox.newGuest()
        try sandbox.write(
            "events.ndjson",
            #"{"user":"\#(guest)","action":"app_opened","props":{"r":1.50,"big":12345678901234567890,"s":"x"}}"# + "\n")
        let track = try await sandbox.run("track", "--from", "events.ndjson")
        #expect(track.status == 0, "\(track.stderr)")
        let events = try await sandbox.run("user", "events", guest, "--json")
        #expect(events.stdout.contains(#""big" : 12345678901234567890,"#), "\(events.stdout)")
        #expect(events.stdout.contains(#""r" : 1.50,"#), "\(events.stdout)")
        let text = try await sandbox.run("user", "events", guest)
        #expect(text.stdout.contains("big=12345678901234567890 r=1.50 s=x"), "\(text.stdout)")
    }
}
