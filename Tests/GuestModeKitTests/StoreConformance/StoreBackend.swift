import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// The backends the store conformance suite runs against. Every conformance
/// test takes one as its argument, so adding a backend here runs the whole
/// suite against it without copying a test.
enum StoreBackend: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite
    case postgres

    var description: String { rawValue }

    /// An empty store of this backend, bound to the named template.
    func makeStore(profile name: String, now: Date = day(1)) throws -> (store: any GuestStore, profile: Profile) {
        let text = try template(name)
        let profile = try ProfileLoader.parse(text, file: "\(name).yaml")
        let store: any GuestStore
        switch self {
        case .sqlite: store = try SQLiteStore.inMemory()
        case .postgres: store = try StoreBackend.makePostgresStore()
        }
        try store.bindProfile(text: text, origin: "\(name).yaml", now: now)
        return (store, profile)
    }

    /// A fresh schema on the server `make test` starts (scripts/with-postgres.sh).
    /// A missing server is a failure, never a skip.
    static func makePostgresStore() throws -> PostgresStore {
        guard let uri = ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"], !uri.isEmpty else {
            throw MissingTestServer()
        }
        let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try PostgresStore.create(uri: uri, schema: schema, replacing: false) { _ in }
        return try PostgresStore.open(uri: uri, schema: schema)
    }

    struct MissingTestServer: Error, CustomStringConvertible {
        var description: String {
            "GUESTMODE_TEST_POSTGRES is not set: run the tests through 'make test' (scripts/with-postgres.sh starts a server)"
        }
    }
}
