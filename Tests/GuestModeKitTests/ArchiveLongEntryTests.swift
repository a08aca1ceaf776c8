import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit

private let now = Timestamp.parse("2026-11-22T09:00:00Z")!

/// Data entries of thousands of rows, read in many chunks: every row reaches
/// the store, in order; a row that cannot be decoded is refused at its line only
/// after every row before it was checked; and a row the checks refuse early wins
/// over a later one that cannot be decoded. (A second thread that decoded while
/// the first checked was tried and measured slower: `bench/results.md`.)
@Suite struct ArchiveLongEntryTests {
    typealias Archives = ArchiveHeaderStreamTests

    static func users(_ count: Int) -> [String] { (1...count).map { "u\($0)" } }

    @Test func everyRowOfAnEntryManyBatchesLongReachesTheStore() throws {
        let directory = try Archives.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Not a multiple of the batch: the last, partial batch arrives too.
        let users = Self.users(2_001)
        let path = try Archives.archive(
            header: Archives.header(users: users), userRows: users.map(Archives.userRow), in: directory)
        let engine = try Archives.engine()
        let report = try engine.importBackup(
            from: path, onConflict: .fail, dryRun: false, trustUnsigned: true, now: now)
        #expect(report.addedCount == 2_001)
        #expect(try engine.user("u1").id == "u1")
        #expect(try engine.user("u2001").id == "u2001")
    }

    @Test func aMalformedRowLateInALongEntryIsRefusedAtItsLine() throws {
        let directory = try Archives.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let users = Self.users(2_000)
        var rows = users.map(Archives.userRow)
        rows[1_499] = "{\"id\":\"u1500\",\n"
        let path = try Archives.archive(header: Archives.header(users: users), userRows: rows, in: directory)
        let refusal = try #require(try Archives.refusal(importing: path))
        #expect(refusal.code == .badRow)
        #expect(refusal.message.contains("line 1500 of data/users/000001.ndjson"), "\(refusal.message)")
    }

    /// A row refused by the checks at line 3 wins over a row the reading side
    /// cannot decode at line 1,900, as it did when one thread did both.
    @Test func aRowRefusedEarlyIsReportedBeforeALaterUndecodableOne() throws {
        let directory = try Archives.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let users = Self.users(2_000)
        var rows = users.map(Archives.userRow)
        rows[2] =
            #"{"id":"u3","state":"bogus","created_at":"2026-01-01T00:00:00.000Z","last_seen_at":"2026-01-01T00:00:00.000Z"}"#
            + "\n"
        rows[1_899] = "not json\n"
        let path = try Archives.archive(header: Archives.header(users: users), userRows: rows, in: directory)
        let refusal = try #require(try Archives.refusal(importing: path))
        #expect(refusal.message.contains("line 3 of data/users/000001.ndjson"), "\(refusal.message)")
        #expect(refusal.message.contains("users.state"), "\(refusal.message)")
    }
}
