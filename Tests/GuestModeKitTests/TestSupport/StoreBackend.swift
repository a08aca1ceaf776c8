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
    /// SQLite in memory: one connection (a GRDB `DatabaseQueue`).
    case sqlite
    /// SQLite on disk through a GRDB `DatabasePool`: readers on their own
    /// connections, so anything that assumed one connection shows here.
    case sqlitePool = "sqlite-pool"
    case postgres

    var description: String { rawValue }

    /// An empty store of this backend, bound to the named template.
    func makeStore(profile name: String, now: Date = day(1)) throws -> (store: any GuestStore, profile: Profile) {
        let text = try template(name)
        let profile = try ProfileLoader.parse(text, file: "\(name).yaml")
        let store: any GuestStore
        switch self {
        case .sqlite: store = try SQLiteStore.inMemory()
        case .sqlitePool: store = try StoreBackend.makePooledSQLiteStore()
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

    /// A new store file in a folder of this test process's own, removed
    /// when the process exits, opened with a pool of readers.
    static func makePooledSQLiteStore() throws -> SQLiteStore {
        let path = (pooledStoreFolder as NSString).appendingPathComponent("\(UUID().uuidString).sqlite")
        try SQLiteStore.create(path: path, replacing: false) { _ in }
        return try SQLiteStore.open(path: path, connections: .pool(maximumReaders: 4))
    }

    /// In memory-backed /dev/shm where there is one: these stores test
    /// connections, not the disk, and the suite creates hundreds of them.
    private static let pooledStoreFolder: String = {
        let folder = pooledStoreParent + "/guestmode-kit-tests-\(getpid())"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: pooledStoreParent + "/guestmode-kit-tests-\(getpid())") }
        return folder
    }()

    private static var pooledStoreParent: String {
        FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    }

    struct MissingTestServer: Error, CustomStringConvertible {
        var description: String {
            "GUESTMODE_TEST_POSTGRES is not set: run the tests through 'make test' (scripts/with-postgres.sh starts a server)"
        }
    }
}
