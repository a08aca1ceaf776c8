import Foundation

/// Reads CSV as `psql \copy … TO … CSV HEADER` writes it, one record at a
/// time: fields separated by commas, quoted with `"` when they hold a
/// comma, a quote (doubled) or a line break; NULL as an empty unquoted
/// field, the empty string as `""`.
struct CSVRecordReader {
    /// The longest record accepted; a user row is well under a kilobyte.
    static let maximumRecordLength = 1 << 20

    let label: String
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0
    private var isAtEnd = false
    /// The line the next record starts on.
    private(set) var line = 1

    init(url: URL, label: String) throws {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw GuestModeError(.fileNotFound, "cannot open the export '\(label)'")
        }
        self.handle = handle
        self.label = label
    }

    func close() { try? handle.close() }

    private mutating func nextByte() throws -> UInt8? {
        if position == buffer.count {
            guard !isAtEnd else { return nil }
            let chunk = try handle.nextChunk(of: "the export '\(label)'")
            if chunk.isEmpty {
                isAtEnd = true
                return nil
            }
            buffer = [UInt8](chunk)
            position = 0
        }
        defer { position += 1 }
        return buffer[position]
    }

    /// The next record and the line it starts on; nil at the end of the file.
    mutating func next() throws -> (line: Int, fields: [String?])? {
        let start = line
        var fields: [String?] = []
        var field: [UInt8] = []
        var isQuoted = false
        var isInQuotes = false
        var length = 0
        func refuse(_ what: String) -> GuestModeError {
            GuestModeError(.invalidImportFile, "\(label):\(start): \(what)")
        }
        func finishField() throws {
            guard let text = String(validating: field, as: UTF8.self) else {
                throw refuse("field \(fields.count + 1) is not valid UTF-8")
            }
            fields.append(isQuoted || !field.isEmpty ? text : nil)
            field = []
            isQuoted = false
        }
        while true {
            guard let byte = try nextByte() else {
                if isInQuotes { throw refuse("a quoted field is not closed before the end of the file") }
                if fields.isEmpty && field.isEmpty && !isQuoted { return nil }
                try finishField()
                return (start, fields)
            }
            length += 1
            guard length <= Self.maximumRecordLength else {
                throw refuse("the record is longer than \(Self.maximumRecordLength) bytes")
            }
            if byte == 0x0A { line += 1 }
            if isInQuotes {
                if byte == UInt8(ascii: "\"") {
                    isInQuotes = false
                } else {
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                // A doubled quote inside a quoted field, or the opening quote.
                if isQuoted {
                    field.append(byte)
                } else if !field.isEmpty {
                    throw refuse("a quote in the middle of an unquoted field")
                }
                isQuoted = true
                isInQuotes = true
            case UInt8(ascii: ","):
                try finishField()
            case 0x0A:
                if field.last == 0x0D && !isQuoted { field.removeLast() }
                try finishField()
                return (start, fields)
            default:
                if isQuoted && byte != 0x0D { throw refuse("text after the closing quote of a field") }
                if byte != 0x0D || !isQuoted { field.append(byte) }
            }
        }
    }
}

/// Reads Supabase's `auth.users` and `auth.identities`, each exported by
/// psql as CSV with a header and ordered by user id:
///
///     \copy (SELECT * FROM auth.users ORDER BY id) TO 'users.csv' CSV HEADER
///     \copy (SELECT * FROM auth.identities ORDER BY user_id) TO 'identities.csv' CSV HEADER
///
/// The two files are walked side by side, so an import of any size holds
/// one user and its identities at a time.
struct SupabaseExportReader {
    let users: URL
    let usersLabel: String
    let identities: URL
    let identitiesLabel: String

    /// Supabase provider names and the profile provider each becomes.
    static let providers = [
        "email": "email", "phone": "phone", "apple": "apple", "google": "google", "github": "github",
        "facebook": "facebook", "twitter": "twitter", "azure": "microsoft", "discord": "discord",
        "gitlab": "gitlab", "bitbucket": "bitbucket", "slack": "slack", "spotify": "spotify",
        "twitch": "twitch", "linkedin_oidc": "linkedin", "notion": "notion", "zoom": "zoom", "figma": "figma",
        "kakao": "kakao", "keycloak": "keycloak", "workos": "workos",
    ]

    /// A header's column positions, by name.
    private struct Columns {
        let positions: [String: Int]
        let label: String

        init(_ header: [String?], label: String, requiring required: [String]) throws {
            var positions: [String: Int] = [:]
            for (index, name) in header.enumerated() { if let name { positions[name] = index } }
            if let missing = required.first(where: { positions[$0] == nil }) {
                throw GuestModeError(
                    .invalidImportFile,
                    "\(label):1: no column '\(missing)'; export the whole table with psql: \\copy (SELECT * FROM auth.…) TO '…' CSV HEADER"
                )
            }
            self.positions = positions
            self.label = label
        }

        func value(_ name: String, in fields: [String?]) -> String? {
            guard let index = positions[name], index < fields.count else { return nil }
            return fields[index]
        }
    }

    /// Calls `body` with each user's line in the users file and a way to
    /// read it as an account (throwing what is wrong with it, so the import
    /// names every bad user). A file out of order, without the needed
    /// columns, or not CSV at all is refused as a whole.
    func forEachAccount(_ body: (_ line: Int, _ account: () throws -> ImportedAccount) throws -> Void) throws {
        var userRows = try CSVRecordReader(url: users, label: usersLabel)
        defer { userRows.close() }
        var identityRows = try CSVRecordReader(url: identities, label: identitiesLabel)
        defer { identityRows.close() }
        guard let userHeader = try userRows.next() else {
            throw GuestModeError(.invalidImportFile, "\(usersLabel):1: the file is empty")
        }
        let userColumns = try Columns(
            userHeader.fields, label: usersLabel, requiring: ["id", "created_at", "last_sign_in_at", "is_anonymous"])
        guard let identityHeader = try identityRows.next() else {
            throw GuestModeError(.invalidImportFile, "\(identitiesLabel):1: the file is empty")
        }
        let identityColumns = try Columns(
            identityHeader.fields, label: identitiesLabel, requiring: ["user_id", "provider", "provider_id"])
        var pending = try identityRows.next()
        var previousUser: String?
        var previousIdentityUser: String?
        func unordered(_ label: String, _ line: Int, _ column: String, _ table: String) -> GuestModeError {
            GuestModeError(
                .invalidImportFile,
                "\(label):\(line): the rows are not ordered by \(column); export with \\copy (SELECT * FROM auth.\(table) ORDER BY \(column)) TO '…' CSV HEADER"
            )
        }
        while let (line, fields) = try userRows.next() {
            let id = userColumns.value("id", in: fields) ?? ""
            if let previousUser, !previousUser.utf8.lexicographicallyPrecedes(id.utf8) {
                throw unordered(usersLabel, line, "id", "users")
            }
            previousUser = id
            // Identities of users before this one have no user in the users file.
            var identities: [(line: Int, fields: [String?])] = []
            var orphan: (line: Int, user: String)?
            while let row = pending {
                let owner = identityColumns.value("user_id", in: row.fields) ?? ""
                if let previousIdentityUser, owner.utf8.lexicographicallyPrecedes(previousIdentityUser.utf8) {
                    throw unordered(identitiesLabel, row.line, "user_id", "identities")
                }
                previousIdentityUser = owner
                if owner == id {
                    identities.append(row)
                } else if owner.utf8.lexicographicallyPrecedes(id.utf8) {
                    if orphan == nil { orphan = (row.line, owner) }
                } else {
                    break
                }
                pending = try identityRows.next()
            }
            try body(line) {
                if let orphan {
                    throw GuestModeError(
                        .invalidImportFile,
                        "\(identitiesLabel):\(orphan.line) has an identity of user '\(orphan.user)', who is not in \(usersLabel)"
                    )
                }
                return try ImportedAccount(
                    supabaseUser: fields, columns: userColumns.value, identities: identities,
                    identityColumns: identityColumns.value, identitiesLabel: identitiesLabel, line: line)
            }
        }
        if let row = pending {
            throw GuestModeError(
                .invalidImportFile,
                "\(identitiesLabel):\(row.line): an identity of user '\(identityColumns.value("user_id", in: row.fields) ?? "")', who is not in \(usersLabel)"
            )
        }
    }
}

extension ImportedAccount {
    /// A time as psql prints a `timestamptz`: `2024-05-01 12:34:56.123456+00`.
    static func supabaseTime(_ text: String) -> Date? {
        var iso = Array(text)
        guard iso.count > 19, iso[10] == " " else { return nil }
        iso[10] = "T"
        // psql writes a whole-hour offset as ±HH; Timestamp wants ±HH:MM.
        if iso.count >= 3, iso[iso.count - 3] == "+" || iso[iso.count - 3] == "-" { iso += [":", "0", "0"] }
        return Timestamp.parse(String(iso))
    }

    /// One row of `auth.users` with its rows of `auth.identities`: `id` is
    /// the user id; each identity keeps its `provider_id` as the subject;
    /// a user with no identity row but an email or phone gets that
    /// identity; `is_anonymous` users must have none.
    init(
        supabaseUser fields: [String?], columns value: (String, [String?]) -> String?,
        identities: [(line: Int, fields: [String?])], identityColumns identityValue: (String, [String?]) -> String?,
        identitiesLabel: String, line: Int
    ) throws {
        func invalid(_ what: String) -> GuestModeError { GuestModeError(.invalidImportFile, what) }
        guard let id = value("id", fields), !id.isEmpty else { throw invalid("the user has no 'id'") }
        try TextRule.check(id, what: "the user id")
        func time(_ name: String) throws -> Date? {
            guard let text = value(name, fields) else { return nil }
            guard let time = Self.supabaseTime(text) else {
                throw invalid("user '\(id)' has a '\(name)' that is not a psql timestamp: \(text.debugDescription)")
            }
            return time
        }
        guard let createdAt = try time("created_at") else { throw invalid("user '\(id)' has no 'created_at'") }
        let isAnonymous: Bool
        switch value("is_anonymous", fields) {
        case "t", "true": isAnonymous = true
        case "f", "false": isAnonymous = false
        case let other: throw invalid("user '\(id)' has is_anonymous \(other.debugDescription), not t or f")
        }
        var linked: [Identity] = []
        for row in identities {
            let location = "\(identitiesLabel):\(row.line)"
            guard let name = identityValue("provider", row.fields), let provider = SupabaseExportReader.providers[name]
            else {
                throw invalid(
                    "\(location): user '\(id)' has the provider \(identityValue("provider", row.fields).debugDescription), which guestmode does not know"
                )
            }
            guard let subject = identityValue("provider_id", row.fields), !subject.isEmpty else {
                throw invalid("\(location): user '\(id)' has a \(name) identity without 'provider_id'")
            }
            let email = identityValue("email", row.fields).flatMap { $0.isEmpty ? nil : $0 }
            try TextRule.check(["the subject": subject, "the email": email])
            let linkedAt = try identityValue("created_at", row.fields).map { text in
                guard let time = Self.supabaseTime(text) else {
                    throw invalid("\(location): 'created_at' is not a psql timestamp: \(text.debugDescription)")
                }
                return time
            }
            linked.append(
                Identity(
                    provider: provider, subject: subject, email: email, linkedAt: max(createdAt, linkedAt ?? createdAt))
            )
        }
        if isAnonymous {
            guard linked.isEmpty else { throw invalid("user '\(id)' is anonymous but has identities") }
        } else if linked.isEmpty {
            if let email = value("email", fields), !email.isEmpty {
                try TextRule.check(email, what: "the email")
                linked.append(Identity(provider: "email", subject: email, email: email, linkedAt: createdAt))
            } else if let phone = value("phone", fields), !phone.isEmpty {
                try TextRule.check(phone, what: "the phone number")
                linked.append(Identity(provider: "phone", subject: phone, email: nil, linkedAt: createdAt))
            } else {
                throw invalid("user '\(id)' is not anonymous but has no identity, email or phone")
            }
        }
        self.init(
            line: line, id: id, createdAt: createdAt,
            lastSeenAt: max(createdAt, try time("last_sign_in_at") ?? createdAt),
            identities: linked, hasPasswordHash: !(value("encrypted_password", fields) ?? "").isEmpty)
    }
}
