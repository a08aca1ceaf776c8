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
package enum TextRule {
    /// Decodes `bytes` as UTF-8 and applies `check(_:what:)`; `what` names
    /// the text in the message ("the key on line 3").
    package static func decode(_ bytes: some Collection<UInt8>, what: String) throws -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let offset = StrictJSON.firstInvalidUTF8(in: Data(bytes)) ?? 0
            throw GuestModeError(
                .invalidUtf8,
                "\(what) is not valid UTF-8 (first bad byte at offset \(offset)); save it as UTF-8 and try again")
        }
        try check(text, what: what)
        return text
    }

    /// `bytes` as a string when they are valid UTF-8, else nil. The same
    /// answer as the standard library's `String(validating:as:)`, which on
    /// this toolchain runs unspecialised and looks up generic metadata for
    /// every call (a quarter of `backup verify --full`'s instructions): the
    /// bytes are decoded with repair, and accepted only when nothing was
    /// repaired, that is when the string holds exactly the bytes given.
    ///
    /// ```swift
    /// let text = bytes.withUnsafeBufferPointer { TextRule.validatedUTF8($0) }
    /// ```
    package static func validatedUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let start = bytes.baseAddress, !bytes.isEmpty else { return "" }
        var text = String(decoding: bytes, as: UTF8.self)
        let isExact = text.withUTF8 { decoded in
            decoded.count == bytes.count && memcmp(decoded.baseAddress!, start, bytes.count) == 0
        }
        return isExact ? text : nil
    }

    /// Whether `bytes` are valid UTF-8 as they are: text of bytes below
    /// 0x80 (nearly every cell) is seen so eight bytes at a time, without
    /// decoding it.
    ///
    /// ```swift
    /// let valid = bytes.withUnsafeBufferPointer { TextRule.isValidUTF8($0) }
    /// ```
    package static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        isASCII(bytes) || validatedUTF8(bytes) != nil
    }

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var index = 0
        var high: UInt64 = 0
        while index + 8 <= bytes.count {
            high |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < bytes.count {
            high |= UInt64(bytes[index])
            index += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    /// Refuses text that holds U+0000. `what` names the text and is worded only for a refusal: made for
    /// every check, "the path's \(name)" was about 400 instructions of every path segment a served request
    /// reads (bench/results.md, "Serving, round 19").
    package static func check(_ text: String, what: @autoclosure () -> String) throws {
        if !isAcceptable(text) {
            throw GuestModeError(
                .nulInText,
                "\(what()) contains U+0000 (a NUL character), which guestmode never stores; remove it and try again")
        }
    }

    /// Whether `text` obeys the rule (valid UTF-8 is given by `String`).
    /// Every event and record passes here: a native string is searched with
    /// memchr, not byte by byte.
    package static func isAcceptable(_ text: String) -> Bool {
        let found = text.utf8.withContiguousStorageIfAvailable { bytes in
            !bytes.isEmpty && memchr(bytes.baseAddress!, 0, bytes.count) != nil
        }
        return !(found ?? text.utf8.contains(0))
    }
}

extension TextRule {
    /// Applies ``check(_:what:)`` to every member name and string inside a
    /// JSON value. A `\u0000` escape is valid JSON but decodes to U+0000, so
    /// record data and properties are refused for it as raw text would be.
    package static func check(_ value: JSONValue, what: @autoclosure () -> String) throws {
        switch value {
        case .string(let text):
            try check(text, what: what())
        case .array(let elements):
            for element in elements { try check(element, what: what()) }
        case .object(let members):
            for (name, member) in members {
                try check(name, what: "\(what()) (member name \(name.debugDescription))")
                try check(member, what: "\(what()) (member \(name.debugDescription))")
            }
        case .null, .bool, .number:
            break
        }
    }

    /// Checks each named text; the first that breaks the rule is reported
    /// under its name ("the user id", "the record key").
    package static func check(_ fields: KeyValuePairs<String, String?>) throws {
        for (what, text) in fields {
            if let text { try check(text, what: what) }
        }
    }
}
