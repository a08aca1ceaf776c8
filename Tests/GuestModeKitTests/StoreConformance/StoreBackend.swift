import Foundation
import Testing
@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// The backends the store conformance suite runs against. Every conformance
/// test takes one as its argument, so adding a backend here runs the whole
/// suite against it without copying a test.
enum StoreBackend: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite

    var description: String { rawValue }

    /// An empty store of this backend, bound to the named template.
    func makeStore(profile name: String, now: Date = day(1)) throws -> (store: any GuestStore, profile: Profile) {
        let text = try template(name)
        let profile = try ProfileLoader.parse(text, file: "\(name).yaml")
        let store: any GuestStore
        switch self {
        case .sqlite: store = try SQLiteStore.inMemory()
        }
        try store.bindProfile(text: text, origin: "\(name).yaml", now: now)
        return (store, profile)
    }
}
