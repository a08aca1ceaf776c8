import Foundation
import GuestModeKit

/// A number for people: whole numbers without decimals, others to two places.
package func formatAmount(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(format: "%.2f", value)
}

package func csvField(_ text: String) -> String {
    guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
    return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// `text` cut or filled with spaces to `width` characters, as Foundation's `padding(toLength:withPad:startingAt:)`
/// gives it, without going through `NSString`, whose first use costs a command about 0.8 M instructions of
/// first-time generic instantiations and conformance look-ups (bench/results.md, "Start-up").
///
/// ```swift
/// padded("users", to: 8)  // "users   "
/// ```
package func padded(_ text: String, to width: Int) -> String {
    let count = text.count
    return count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - count)
}

package func percent(_ value: Double?) -> String { value.map { String(format: "%.1f%%", $0 * 100) } ?? "" }
package func hours(_ value: Double?) -> String { value.map { String(format: "%.1f", $0) } ?? "" }

/// How a merge or migration resolved one record conflict, in a sentence.
package enum ConflictText {
    package static func describe(_ conflict: RecordConflict) -> String {
        let resolution: String
        switch conflict.resolution {
        case .keptGuest:
            resolution =
                "the guest's record kept (updated \(Timestamp.format(conflict.guestUpdatedAt))); the account's archived"
        case .keptAccount:
            resolution =
                "the account's record kept (updated \(Timestamp.format(conflict.accountUpdatedAt))); the guest's archived"
        case .keptBoth: resolution = "both kept; the guest's moves to \(conflict.guestKeyAfter ?? "?")"
        }
        return "\(conflict.collection)/\(conflict.key): \(resolution)"
    }
}

/// "1 record", "2 records", "0 records"; `plural` for irregular words ("1 entry", "2 entries").
package func counted(_ count: Int, _ singular: String, _ plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}
