import Foundation
import GuestModeKit
import GuestModeSQLite

/// Where `--store` points and which backend serves it. A path is an embedded
/// SQLite file; other schemes are refused until their backend exists.
enum StoreLocation {
    case sqlite(path: String)

    init(_ text: String) throws {
        if let scheme = text.firstRange(of: "://").map({ String(text[..<$0.lowerBound]) }),
            scheme.allSatisfy({ $0.isLetter || $0 == "+" })
        {
            throw GuestModeError.usage(
                "--store '\(scheme)://…' is not a store this guestmode can open; give the path of a store file",
                code: .unsupportedStore)
        }
        self = .sqlite(path: text)
    }

    /// How the store is named in messages.
    var description: String {
        switch self {
        case let .sqlite(path): path
        }
    }

    /// Opens an existing store. Pending schema migrations are applied unless
    /// `migrating` is false (`db status` looks without writing).
    func open(migrating: Bool = true) throws -> any GuestStore {
        switch self {
        case let .sqlite(path): try SQLiteStore.open(path: path, migrating: migrating)
        }
    }

    /// Creates a store bound to a profile; with `replacing`, an existing one is
    /// replaced only once the new one is complete.
    func create(profile source: ProfileCatalog.Source, replacing: Bool, now: Date) throws {
        switch self {
        case let .sqlite(path):
            try SQLiteStore.create(path: path, replacing: replacing) { store in
                try store.bindProfile(text: source.text, origin: source.origin, now: now)
            }
        }
    }

    /// The profile a store is bound to, read without writing to it.
    func boundProfile() throws -> (text: String, origin: String)? {
        switch self {
        case let .sqlite(path): try SQLiteStore.boundProfile(readingOnly: path)
        }
    }
}
