import Foundation
import GuestModeKit

extension PostgresTransaction {
    /// A transaction-scoped advisory lock on this schema's profile binding.
    func lockProfileBinding() throws {
        try connection.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1))", [PostgresValue("guestmode-profile-upgrade:\(store.schema)")])
    }

    func countRecords(in collection: String) throws -> Int {
        try connection.execute(
            "SELECT count(*) AS n FROM records WHERE collection = $1", [PostgresValue(collection)]
        ).first?.int("n") ?? 0
    }

    /// "Has the field" is SQLite's `json_type(data, '$.field') IS NOT NULL`:
    /// a top-level member of a JSON object (arrays and scalars have none).
    func countRecords(in collection: String, havingFields fields: [String]) throws -> Int {
        try connection.execute(
            """
            SELECT count(*) AS n FROM records
            WHERE collection = $1 AND jsonb_typeof(data::jsonb) = 'object' AND data::jsonb ?& $2::text[]
            """,
            [PostgresValue(collection), PostgresValue.textArray(fields)]
        ).first?.int("n") ?? 0
    }

    func renameCollection(_ collection: String, to newName: String) throws {
        try connection.execute(
            "UPDATE records SET collection = $1 WHERE collection = $2",
            [PostgresValue(newName), PostgresValue(collection)])
    }

    /// The JSON is rewritten in Swift, not as jsonb (which would reorder keys
    /// and add spaces), to give exactly SQLite's text. Rows are read through
    /// a cursor and written back a batch at a time.
    func renameField(_ field: String, to newName: String, in collection: String) throws {
        try connection.execute(
            """
            DECLARE guestmode_rename NO SCROLL CURSOR FOR
            SELECT owner_id, key, data FROM records
            WHERE collection = $1 AND jsonb_typeof(data::jsonb) = 'object' AND data::jsonb ? $2
            """,
            [PostgresValue(collection), PostgresValue(field)])
        while true {
            let batch = try connection.execute("FETCH 1000 FROM guestmode_rename")
            if batch.count == 0 { break }
            var owners: [String] = []
            var keys: [String] = []
            var documents: [String] = []
            for row in batch {
                let data = try row.string("data")
                guard let renamed = JSONFieldRename.renaming(field, to: newName, in: data) else { continue }
                owners.append(try row.string("owner_id"))
                keys.append(try row.string("key"))
                documents.append(renamed)
            }
            guard !owners.isEmpty else { continue }
            try connection.execute(
                """
                UPDATE records r SET data = v.data
                FROM unnest($2::text[], $3::text[], $4::text[]) AS v (owner_id, key, data)
                WHERE r.collection = $1 AND r.owner_id = v.owner_id AND r.key = v.key
                """,
                [
                    PostgresValue(collection), PostgresValue.textArray(owners), PostgresValue.textArray(keys),
                    PostgresValue.textArray(documents),
                ])
        }
        try connection.execute("CLOSE guestmode_rename")
    }

    func setBoundProfile(text: String, origin: String, at time: Date) throws {
        for (key, value) in [("profile_text", text), ("profile_origin", origin), ("bound_at", Timestamp.format(time))] {
            try connection.execute(
                "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [PostgresValue(key), PostgresValue(value)])
        }
    }
}

/// Renaming one top-level member of a JSON object in its text, the way
/// SQLite's JSON functions do: the first member named `from` is removed,
/// its value is appended under `to`, and the whole document comes out
/// minified with every string, number and member otherwise kept verbatim.
enum JSONFieldRename {
    /// The renamed document, or nil when `text` is not an object holding `from`.
    static func renaming(_ from: String, to: String, in text: String) -> String? {
        guard var members = members(of: Array(text.utf8)) else { return nil }
        guard let index = members.firstIndex(where: { $0.name == from }) else { return nil }
        let value = members.remove(at: index).value
        var output: [UInt8] = [UInt8(ascii: "{")]
        for member in members {
            output += member.rawName
            output.append(UInt8(ascii: ":"))
            output += member.value
            output.append(UInt8(ascii: ","))
        }
        output += encodedName(to)
        output.append(UInt8(ascii: ":"))
        output += value
        output.append(UInt8(ascii: "}"))
        return String(decoding: output, as: UTF8.self)
    }

    private struct Member {
        var rawName: [UInt8]
        var name: String
        var value: [UInt8]
    }

    /// The object's members with their names as written and decoded, and
    /// their values minified; nil when the text is not a JSON object.
    private static func members(of bytes: [UInt8]) -> [Member]? {
        var position = 0
        skipSpace(bytes, &position)
        guard position < bytes.count, bytes[position] == UInt8(ascii: "{") else { return nil }
        position += 1
        var members: [Member] = []
        skipSpace(bytes, &position)
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
        } else {
            while true {
                skipSpace(bytes, &position)
                guard let rawName = string(bytes, &position), let name = decodedName(rawName) else { return nil }
                skipSpace(bytes, &position)
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
                position += 1
                skipSpace(bytes, &position)
                guard let value = value(bytes, &position) else { return nil }
                members.append(Member(rawName: rawName, name: name, value: value))
                skipSpace(bytes, &position)
                guard position < bytes.count else { return nil }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                guard bytes[position] == UInt8(ascii: "}") else { return nil }
                position += 1
                break
            }
        }
        skipSpace(bytes, &position)
        return position == bytes.count ? members : nil
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func skipSpace(_ bytes: [UInt8], _ position: inout Int) {
        while position < bytes.count, isSpace(bytes[position]) { position += 1 }
    }

    /// A string literal as written, quotes included.
    private static func string(_ bytes: [UInt8], _ position: inout Int) -> [UInt8]? {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
        let start = position
        position += 1
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: "\\"): position += 2
            case UInt8(ascii: "\""):
                position += 1
                return Array(bytes[start..<position])
            default: position += 1
            }
        }
        return nil
    }

    /// One value, minified: whitespace outside strings dropped, the rest verbatim.
    private static func value(_ bytes: [UInt8], _ position: inout Int) -> [UInt8]? {
        guard position < bytes.count else { return nil }
        var output: [UInt8] = []
        var depth = 0
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                guard let literal = string(bytes, &position) else { return nil }
                output += literal
            } else if isSpace(byte) {
                position += 1
            } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                depth += 1
                output.append(byte)
                position += 1
            } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                if depth == 0 { break }
                depth -= 1
                output.append(byte)
                position += 1
            } else if byte == UInt8(ascii: ","), depth == 0 {
                break
            } else {
                output.append(byte)
                position += 1
            }
        }
        return output.isEmpty || depth != 0 ? nil : output
    }

    /// A member's name as SQLite's path lookup compares it: the text between
    /// the quotes as written, escapes not decoded (so `"c\u006fst"` is not `cost`).
    private static func decodedName(_ raw: [UInt8]) -> String? {
        String(decoding: raw.dropFirst().dropLast(), as: UTF8.self)
    }

    /// The new member's name as SQLite writes a path label: between quotes,
    /// escaped only where JSON requires it (never `/`).
    private static func encodedName(_ name: String) -> [UInt8] {
        let needsEscaping = name.unicodeScalars.contains { $0 == "\"" || $0 == "\\" || $0.value < 0x20 }
        guard needsEscaping,
            let data = try? JSONSerialization.data(
                withJSONObject: name, options: [.fragmentsAllowed, .withoutEscapingSlashes])
        else { return Array("\"\(name)\"".utf8) }
        return Array(data)
    }
}
