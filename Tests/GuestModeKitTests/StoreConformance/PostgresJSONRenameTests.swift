import Foundation
import GRDB
import Testing

@testable import GuestModePostgres

/// The PostgreSQL store renames record fields in Swift; the result must be
/// byte for byte what SQLite's JSON functions give for the same upgrade step.
@Suite struct PostgresJSONRenameTests {
    static let documents = [
        #"{"cost":15,"name":"Netflix"}"#,
        #"{"a":1,"cost":{"x":[1, 2,{"y":"z"}]},"z":null}"#,
        #"{ "cost" : "a \"quoted\" , value" , "b" : [ ] }"#,
        #"{"b":true,"cost":1.50,"c":"é/ü\u00e9"}"#,
        #"{"cost":1,"cost":2}"#,
        #"{"c\u006fst":3,"d":4}"#,
        #"{"only":1}"#,
        #"[1,2]"#,
        #""cost""#,
    ]

    @Test(arguments: documents)
    func renamingMatchesSQLite(document: String) throws {
        let sqlite = try DatabaseQueue().read { db in
            try String.fetchOne(
                db,
                sql: """
                    SELECT CASE WHEN json_type(?, '$.cost') IS NULL THEN NULL
                    ELSE json_remove(json_set(?, '$.price', json(? -> '$.cost')), '$.cost') END
                    """,
                arguments: [document, document, document])
        }
        #expect(JSONFieldRename.renaming("cost", to: "price", in: document) == sqlite)
    }
}
