import Foundation

/// The one rule for every text guestmode stores: ids, keys, names, property
/// names and values, record data, from arguments, bulk files, archives or
/// requests. Text must arrive as valid UTF-8 (never repaired into U+FFFD) and
/// hold no U+0000, which SQLite's and libpq's C strings would silently cut.
///
/// ```swift
/// let key = try TextRule.decode(bytes, what: "the record key on line 3")
/// try TextRule.check(userID, what: "the user id")
/// ```
public enum TextRule {
    /// Decodes `bytes` as UTF-8 and applies ``check(_:what:)``; `what` names
    /// the text in the message ("the key on line 3").
    public static func decode(_ bytes: some Swift.Collection<UInt8>, what: String) throws -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let offset = StrictJSON.firstInvalidUTF8(in: Data(bytes)) ?? 0
            throw GuestModeError.badData(
                "\(what) is not valid UTF-8 (first bad byte at offset \(offset)); save it as UTF-8 and try again",
                code: .invalidUtf8)
        }
        try check(text, what: what)
        return text
    }

    /// Refuses text that holds U+0000.
    public static func check(_ text: String, what: String) throws {
        if text.utf8.contains(0) {
            throw GuestModeError.badData(
                "\(what) contains U+0000 (a NUL character), which guestmode never stores; remove it and try again",
                code: .nulInText)
        }
    }

    /// Whether `text` obeys the rule (valid UTF-8 is given by `String`).
    public static func isAcceptable(_ text: String) -> Bool { !text.utf8.contains(0) }
}
