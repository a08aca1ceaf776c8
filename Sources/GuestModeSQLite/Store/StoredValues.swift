import Foundation
internal import GRDB
import GuestModeKit

/// A time column, decoded only from the ISO 8601 UTC text `Timestamp`
/// writes. GRDB's own `Date` accepts other formats and numbers, so a value
/// written by hand could read as a different instant; this type refuses it
/// instead, and the refusal reaches the caller as a corrupt store through
/// `StoreFile.corrupt(_:path:)`.
struct StoredTime: DatabaseValueConvertible {
    let date: Date

    var databaseValue: DatabaseValue { Timestamp.format(date).databaseValue }

    static func fromDatabaseValue(_ dbValue: DatabaseValue) -> StoredTime? {
        guard case .string(let text) = dbValue.storage, let date = Timestamp.parse(text) else { return nil }
        return StoredTime(date: date)
    }
}

/// A column holding one case of a string enumeration; a value this build
/// does not know fails to decode, as any other mismatched value does.
struct StoredCase<Value: RawRepresentable & Sendable>: DatabaseValueConvertible where Value.RawValue == String {
    let value: Value

    var databaseValue: DatabaseValue { value.rawValue.databaseValue }

    static func fromDatabaseValue(_ dbValue: DatabaseValue) -> StoredCase? {
        guard case .string(let text) = dbValue.storage, let value = Value(rawValue: text) else { return nil }
        return StoredCase(value: value)
    }
}
