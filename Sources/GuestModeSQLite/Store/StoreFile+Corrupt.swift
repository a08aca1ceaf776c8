import Foundation
internal import GRDB
import GuestModeKit

extension StoreFile {
    /// A stored value that does not have the type its column is read as
    /// (text in an INTEGER column, a number past Int64, NULL where NULL is
    /// never written): the store was changed outside guestmode. Reported as a
    /// corrupt store (exit 65), never a crash: every read decodes through
    /// GRDB's throwing `Row.decode` or a fetch method, never a trapping subscript.
    static func corrupt(_ error: RowDecodingError, path: String) -> GuestModeError {
        GuestModeError(
            .corruptStore,
            "the store '\(path)' holds a value guestmode cannot read (\(describe(error))); it was changed outside guestmode. Restore it from a backup or repair the value with sqlite3"
        )
    }

    /// GRDB's description goes on to print the whole row and the statement's
    /// arguments, which may hold a secret hash or a user's record: only the
    /// value and its column are kept.
    private static func describe(_ error: RowDecodingError) -> String {
        var text = "\(error)"
        if let row = text.range(of: ", row: ") { text = String(text[..<row.lowerBound]) }
        if text.count > 300 { text = String(text.prefix(300)) + "…" }
        return text
    }
}
