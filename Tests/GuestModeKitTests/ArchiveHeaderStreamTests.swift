import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

private let now = Timestamp.parse("2026-11-22T09:00:00Z")!

/// header.json read as a stream (`HeaderStream`) and the listed users kept
/// on disk (`ListedUsers`): the same refusals as when the header was read
/// whole and the users held in sets, for headers past what is read whole.
@Suite struct ArchiveHeaderStreamTests {
    /// Whitespace that puts a header past `ArchiveWalk.retainedHeaderLimit`,
    /// so only the streaming reader sees it.
    static let padding = String(repeating: " ", count: ArchiveWalk.retainedHeaderLimit + 10)

    static func header(users: [String], padding: String = "", tail: String = "]\n}") -> String {
        #"{"created":"2026-11-01T00:00:00.000Z","format":"guestmode-backup","format_version":2,"#
            + #""profile":{"name":"habits","version":1},"tool_version":"test","users":["# + padding
            + users.map { "\"\($0)\"" }.joined(separator: ",") + tail
    }

    static func userRow(_ id: String) -> String {
        #"{"id":"\#(id)","created_at":"2026-01-01T00:00:00.000Z","last_seen_at":"2026-01-01T00:00:00.000Z"}"# + "\n"
    }

    /// An archive of `header` and these users rows, with a matching manifest.
    static func archive(header: String, userRows: [String], in directory: URL) throws -> String {
        var entries: [(String, [UInt8], String?, Int?)] = [(BackupFormat.headerName, Array(header.utf8), nil, nil)]
        if !userRows.isEmpty {
            entries.append(("data/users/000001.ndjson", Array(userRows.joined().utf8), "users", userRows.count))
        }
        let manifest = BackupManifest(
            formatVersion: 2,
            entries: entries.map {
                .init(
                    name: $0.0, size: Int64($0.1.count), sha256: StreamingSHA256.hex(of: $0.1), table: $0.2,
                    rows: $0.3)
            },
            tables: userRows.isEmpty ? [:] : ["users": userRows.count])
        let path = directory.appendingPathComponent("\(UUID().uuidString).gmbackup").path
        try AtomicFile.write(path: path) { descriptor in
            try ArchiveWriter.write(to: descriptor, path: path, format: .tarZstd, level: nil) { writer in
                for (name, bytes, _, _) in entries {
                    try bytes.withUnsafeBytes { try writer.addEntry(name: name, contents: $0, modified: now) }
                }
                try Array(try BackupFormat.encoder().encode(manifest)).withUnsafeBytes {
                    try writer.addEntry(name: BackupFormat.manifestName, contents: $0, modified: now)
                }
            }
        }
        return path
    }

    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("guestmode-header-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func engine() throws -> GuestMode {
        try GuestMode.inMemory(profileText: try backupFixtureProfile(), origin: "habits.yaml", now: now)
    }

    /// The import's refusal, with the store left without any user.
    static func refusal(importing path: String) throws -> GuestModeError? {
        let engine = try engine()
        do {
            _ = try engine.importBackup(from: path, onConflict: .fail, dryRun: false, trustUnsigned: true, now: now)
            return nil
        } catch let error as GuestModeError {
            #expect(throws: GuestModeError.self, "the store changed") { try engine.user("u1") }
            return error
        }
    }

    // MARK: the stream

    static func parse(_ text: String, byteByByte: Bool) throws -> ([String: JSONValue], [String]) {
        final class Users { var list: [String] = [] }
        let users = Users()
        var stream = HeaderStream { users.list.append($0) }
        let bytes = Array(text.utf8)
        if byteByByte {
            for byte in bytes { try [byte].withUnsafeBytes { try stream.feed($0) } }
        } else {
            try bytes.withUnsafeBytes { try stream.feed($0) }
        }
        return (try stream.finish(), users.list)
    }

    @Test("the stream gives the members and every user, whatever the chunks; escapes are decoded")
    func streams() throws {
        let text = Self.header(users: ["u1", #"a\"b"#, #"\u00e9t\u00e9"#, "x y"]) + "  \n"
        for byteByByte in [false, true] {
            let (members, users) = try Self.parse(text, byteByByte: byteByByte)
            #expect(users == ["u1", "a\"b", "été", "x y"])
            #expect(members["format_version"] == .number("2"))
            #expect(members["profile"] == .object(["name": .string("habits"), "version": .number("1")]))
            #expect(members["users"] == .array([]))
        }
    }

    @Test("a user id's plain bytes read in runs give the same users and the same limit, whatever the chunks")
    func userRuns() throws {
        let ids = ["g1", "g12345", #"a\"b\\c"#, "été", String(repeating: "x", count: 300)]
        let text = Self.header(users: ids)
        let whole = try Self.parse(text, byteByByte: true)
        #expect(whole.1 == ["g1", "g12345", "a\"b\\c", "été", String(repeating: "x", count: 300)])
        let bytes = Array(text.utf8)
        for size in [2, 3, 7, 64] {
            final class Users { var list: [String] = [] }
            let users = Users()
            var stream = HeaderStream { users.list.append($0) }
            for start in stride(from: 0, to: bytes.count, by: size) {
                try bytes[start..<min(start + size, bytes.count)].withUnsafeBytes { try stream.feed($0) }
            }
            #expect(try stream.finish() == whole.0, "chunks of \(size)")
            #expect(users.list == whole.1, "chunks of \(size)")
        }
        // An id of the most bytes a token may take (its quotes included) passes; one byte more fails at that byte.
        let longest = String(repeating: "y", count: HeaderStream.memberLimit - 2)
        #expect(try Self.parse(Self.header(users: [longest]), byteByByte: false).1 == [longest])
        let prefix = Array(Self.header(users: []).utf8).count - Array("]\n}".utf8).count
        for byteByByte in [false, true] {
            do {
                _ = try Self.parse(Self.header(users: [longest + "y"]), byteByByte: byteByByte)
                Issue.record("an id past the limit was accepted")
            } catch let failure as HeaderStream.Failure {
                #expect(failure.reason.hasPrefix("a value longer than"), "\(failure)")
                #expect(failure.offset == prefix + 1, "the token's first byte, \(failure)")
            }
        }
    }

    @Test(
        "a header that is not well-formed fails at the byte at fault",
        arguments: [
            (#"{"users":["a","b"]"#, "unexpected end of input", 19),
            (#"{"users":["a",]}"#, "expected a user id", 15),
            (#"{"users":["a" "b"]}"#, "expected ',' or ']'", 15),
            (#"{"users":["a"],"users":[]}"#, "duplicate member name 'users'", 24),
            (#"{"a":1,"a":2}"#, "duplicate member name 'a'", 12),
            (#"{"a":tru}"#, "", 0),
            (#"{"users":[1]}"#, "expected a user id", 11),
            (#"{"users":["a\u0000"]}"#, "", 0),
            (#"{"users":[]} x"#, "unexpected 'x' after the header", 14),
            ("[]", "expected a JSON object", 1),
            ("{\"users\":[\"a\tb\"]}", "", 0),
        ] as [(String, String, Int)])
    func malformed(text: String, reason: String, offset: Int) throws {
        for byteByByte in [false, true] {
            do {
                _ = try Self.parse(text, byteByByte: byteByByte)
                // "a\u0000" is well-formed JSON: the NUL is refused later, as text.
                #expect(text.contains(#"\u0000"#), "\(text) was accepted")
            } catch let failure as HeaderStream.Failure {
                #expect(failure.reason.hasPrefix(reason), "\(text): \(failure)")
                if offset > 0 { #expect(failure.offset == offset, "\(text): \(failure)") }
            }
        }
    }

    // MARK: refusals past the size read whole

    @Test("a header past the size read whole that lists a user twice is refused as before, the store unchanged")
    func repeatedUser() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for padding in ["", Self.padding] {
            let path = try Self.archive(
                header: Self.header(users: ["u1", "u2", "u3", "u2", "u1"], padding: padding),
                userRows: ["u1", "u2", "u3"].map(Self.userRow), in: directory)
            let error = try #require(try Self.refusal(importing: path))
            #expect(error.code == .badHeader)
            #expect(error.message.contains("lists user 'u2' twice in header.json"), "\(error.message)")
        }
    }

    @Test("a user id that is empty, listed before a repeat, is the one refused")
    func misfitBeforeRepeat() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.archive(
            header: Self.header(users: ["u1", "", "u1"], padding: Self.padding), userRows: [Self.userRow("u1")],
            in: directory)
        let error = try #require(try Self.refusal(importing: path))
        #expect(error.code == .badHeader)
        #expect(error.message.contains("lists '' as a user"), "\(error.message)")
    }

    @Test(
        "a header cut short past the size read whole is a malformed header naming the byte; verify and inspect say so")
    func truncated() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let text = Self.header(users: ["u1", "u2"], padding: Self.padding, tail: "")
        let path = try Self.archive(header: text, userRows: [Self.userRow("u1")], in: directory)
        let error = try #require(try Self.refusal(importing: path))
        #expect(error.code == .badHeader)
        #expect(
            error.message.contains("malformed header.json (unexpected end of input at byte \(text.utf8.count + 1))"),
            "\(error.message)")
        let verification = try BackupArchive.verify(path: path, full: true)
        #expect(!verification.ok && verification.errors.first?.contains("malformed header.json") == true)
        #expect { try BackupArchive.inspect(path: path) } throws: { ($0 as? GuestModeError)?.code == .badHeader }
    }

    @Test("a NUL in a listed user past the size read whole is refused naming its place in the list")
    func nulUser() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.archive(
            header: Self.header(users: ["u1", #"new\u0000u1"#], padding: Self.padding), userRows: [Self.userRow("u1")],
            in: directory)
        let error = try #require(try Self.refusal(importing: path))
        #expect(error.message.contains("users[1] in header.json"), "\(error.message)")
    }

    @Test("a listed user without a users row, a row of a user not listed and a user twice are refused as before")
    func rowsAgainstTheList() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for padding in ["", Self.padding] {
            let missing = try Self.archive(
                header: Self.header(users: ["u1", "u3", "u2"], padding: padding),
                userRows: ["u1", "u3"].map(Self.userRow), in: directory)
            let noRow = try #require(try Self.refusal(importing: missing))
            #expect(noRow.code == .missingUserRow && noRow.message.contains("user 'u2'"), "\(noRow.message)")

            let foreign = try Self.archive(
                header: Self.header(users: ["u1"], padding: padding), userRows: ["u1", "u9"].map(Self.userRow),
                in: directory)
            let unlisted = try #require(try Self.refusal(importing: foreign))
            #expect(
                unlisted.code == .foreignRow && unlisted.message.contains("line 2 of data/users"), "\(unlisted.message)"
            )

            let twice = try Self.archive(
                header: Self.header(users: ["u1", "u2"], padding: padding),
                userRows: ["u1", "u2", "u1"].map(Self.userRow),
                in: directory)
            let repeated = try #require(try Self.refusal(importing: twice))
            #expect(
                repeated.code == .badRow && repeated.message.contains("has user 'u1' twice (line 3 of data/users"),
                "\(repeated.message)")
        }
    }

    /// Past 256 KiB the index of the listed users is read from disk through a
    /// cache of its blocks: rows in no order, then a row of a user the header
    /// does not list, the last of the archive, refused as before and nothing
    /// changed, on either backend.
    @Test(arguments: [StoreBackend.sqlite, .postgres])
    func aRowOfAUserNotListedIsRefusedWhenTheListIsOnDisk(backend: StoreBackend) throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let users = (0..<20_000).map { "listed-user-\($0)" }
        var generator = SplitMix64(state: 36)
        let rows = users.shuffled(using: &generator).map(Self.userRow) + [Self.userRow("listed-user-20000")]
        let path = try Self.archive(
            header: Self.header(users: users, padding: Self.padding), userRows: rows, in: directory)
        let store: any GuestStore =
            switch backend {
            case .postgres: try StoreBackend.makePostgresStore()
            default: try SQLiteStore.inMemory()
            }
        let engine = try GuestMode(
            store: store, profileText: try backupFixtureProfile(), origin: "habits.yaml", now: now)
        do {
            _ = try engine.importBackup(from: path, onConflict: .fail, dryRun: false, trustUnsigned: true, now: now)
            Issue.record("a row of a user not listed was imported")
        } catch let error as GuestModeError {
            #expect(
                error.code == .foreignRow && error.message.contains("line 20001 of data/users"), "\(error.message)")
        }
        #expect(throws: GuestModeError.self, "the store changed") { try engine.user("listed-user-0") }
    }

    @Test("a header past the size read whole imports, and verify and inspect count its users")
    func bigHeaderImports() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let users = (0..<1500).map { "u\($0)" }
        let path = try Self.archive(
            header: Self.header(users: users, padding: Self.padding), userRows: users.map(Self.userRow), in: directory)
        let engine = try Self.engine()
        let report = try engine.importBackup(
            from: path, onConflict: .fail, dryRun: false, trustUnsigned: true, now: now)
        #expect(report.addedCount == 1500)
        #expect(report.added.count == BackupImportReport.listLimit)
        #expect(report.added == Array(users.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.prefix(1000)))
        #expect(try engine.user("u1499").id == "u1499")
        let verification = try BackupArchive.verify(path: path, full: true)
        #expect(verification.ok && verification.users == 1500, "\(verification.errors)")
        let inspection = try BackupArchive.inspect(path: path)
        #expect(inspection.userCount == 1500 && inspection.header.users == Array(users.prefix(1000)))
        #expect(try BackupArchive.lists("u1499", path: path) && !BackupArchive.lists("u1500", path: path))

        let again = try engine.importBackup(from: path, onConflict: .skip, dryRun: true, trustUnsigned: true, now: now)
        #expect(again.skippedCount == 1500 && again.addedCount == 0)
    }

    // MARK: the list on disk

    @Test("listed users spilled to disk are found, repeats named by their second mention, unseen users by id")
    func listedUsersOnDisk() throws {
        let listed = ListedUsers(memoryLimit: 4 << 10, sampleLimit: 3)
        var users = (0..<5000).map { "user-\($0)" }
        users.append("user-17")  // second mention at index 5000
        users.append("user-4")  // second mention at index 5001
        for user in users { try listed.add(user) }
        var batches: [[String]] = []
        let repeated = try listed.classify { batch in
            batches.append(batch)
            return batch.map { user in user.hasSuffix("7") ? (.skipped, "created-\(user)") : (.added, nil) }
        }
        // Asked in id order, a batch at a time, each distinct user once.
        #expect(batches.map(\.count) == [1000, 1000, 1000, 1000, 1000])
        #expect(batches.joined().elementsEqual(users.dropLast(2).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }))
        #expect(repeated == ListedUsers.Repeat(user: "user-17", index: 5000))
        #expect(listed.distinct == 5000)
        #expect(listed.count(.skipped) == 500 && listed.count(.added) == 4500)
        #expect(listed.sample(.added) == ["user-0", "user-1", "user-10"])
        let entry = try #require(try listed.entry(of: "user-4997"))
        #expect(entry.fate == .skipped && entry.created == "created-user-4997")
        #expect(
            try listed.entry(of: "user-5000") == nil && listed.entry(of: "") == nil && listed.entry(of: "zzz") == nil)
        for user in (0..<5000).map({ "user-\($0)" }) where user != "user-2345" {
            let found = try #require(try listed.entry(of: user))
            #expect(listed.markSeen(found))
        }
        #expect(try !listed.markSeen(#require(try listed.entry(of: "user-0"))))
        #expect(try listed.firstUnseen(among: [.added]) == "user-2345")
        #expect(try listed.firstUnseen(among: [.skipped]) == nil)
    }

    @Test(
        "listed users on disk are found through a cache smaller than the list, whatever the order of the look-ups",
        arguments: [(slots: 1, bytes: 1 << 20), (slots: 7, bytes: 3 << 10), (slots: 64, bytes: 0)])
    func listedUsersThroughASmallCache(slots: Int, bytes: Int) throws {
        let listed = ListedUsers(memoryLimit: 4 << 10, sampleLimit: 3, cacheSlots: slots, cacheBytes: bytes)
        let users = (0..<3000).map { "user-\($0)" }
        for user in users { try listed.add(user) }
        _ = try listed.classify { batch in
            batch.map { user in user.hasSuffix("3") ? (.kept, "created-\(user)") : (.replaced, nil) }
        }
        let byID = users.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let positions = Dictionary(uniqueKeysWithValues: byID.enumerated().map { ($1, $0) })
        var generator = SplitMix64(state: 36)
        // In order (neighbours share blocks), then shuffled (blocks evicted and read again), then in order again.
        for order in [users, users.shuffled(using: &generator), byID] {
            for user in order {
                let entry = try #require(try listed.entry(of: user))
                #expect(entry.position == positions[user])
                #expect(entry.fate == (user.hasSuffix("3") ? .kept : .replaced))
                #expect(entry.created == (user.hasSuffix("3") ? "created-\(user)" : nil))
                #expect(try listed.entry(of: user + "-") == nil)
            }
        }
        #expect(try listed.entry(of: "user-3000") == nil && listed.entry(of: "user-") == nil)
    }
}
