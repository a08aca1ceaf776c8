import GRDB
import Testing

@testable import GuestModeSQLite

/// The per-request reads bind their parameters through SQLite's C API (`ReadParameter`); each must reach
/// SQLite as the value GRDB's own binding gives.
@Suite struct ReadParameterTests {
    @Test func eachParameterIsBoundAsTheValueItIs() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (a TEXT, b INTEGER)")
            try db.execute(
                sql: "INSERT INTO t VALUES ('', 1), (NULL, 2), ('été', 3), ('x', 4), (?, 5)",
                arguments: [String(repeating: "long ", count: 1_000)])
            func rows(where condition: String, _ parameters: [any ReadParameter]) throws -> [Int] {
                try readAll(
                    db.cachedStatement(sql: "SELECT b FROM t WHERE \(condition) ORDER BY b"), arguments: parameters
                ) { row in try row.decode(Int.self, forColumn: "b") }
            }
            // An empty text is a text, not NULL.
            #expect(try rows(where: "a = ?", [""]) == [1])
            #expect(try rows(where: "a IS ?", [String?.none]) == [2])
            #expect(try rows(where: "a = ?", ["été"]) == [3])
            #expect(try rows(where: "a = ?", [String?.some("x")]) == [4])
            #expect(try rows(where: "a = ?", [String(repeating: "long ", count: 1_000)]) == [5])
            #expect(try rows(where: "b > ? AND a = ?", [2, "été"]) == [3])
            // A statement read again is bound again: nothing of the last read is left.
            #expect(try rows(where: "a = ?", ["x"]) == [4])
            #expect(try rows(where: "a = ?", ["été"]) == [3])
            // As many parameters as the statement has, or GRDB's own error.
            #expect(throws: DatabaseError.self) { try rows(where: "a = ? AND b = ?", ["x"]) }
            #expect(
                try readOne(db.cachedStatement(sql: "SELECT count(*) AS n FROM t WHERE b >= ?"), arguments: [3]) {
                    row in try row.decode(Int.self, forColumn: "n")
                } == 3)
        }
    }
}
