import Foundation

/// One account of a user export, as guestmode will store it: the id kept,
/// the identities it can link, and what was left out.
struct ImportedAccount: Sendable, Equatable {
    /// Where the account starts in its file (1-based).
    var line: Int
    var id: String
    var createdAt: Date
    var lastSeenAt: Date
    /// Empty for an anonymous account.
    var identities: [Identity]
    /// The export held a password hash, which is never imported.
    var hasPasswordHash: Bool

    /// About the memory this account takes: its texts, and a little for each part.
    var heldBytes: Int {
        identities.reduce(128 + id.utf8.count) { bytes, identity in
            bytes + 96 + identity.provider.utf8.count + identity.subject.utf8.count
                + (identity.email?.utf8.count ?? 0)
        }
    }
}

/// Reads the `users` array of a firebase-tools `auth:export` JSON file
/// (`{"users": [ {…}, {…} ]}`, each account pretty-printed over many lines)
/// one account at a time, in constant memory: bytes are scanned for the
/// bounds of each account object, and only that object is decoded.
struct FirebaseExportReader {
    /// The largest account object accepted; a real one is a few kilobytes.
    static let maximumAccountLength = 1 << 20

    let url: URL
    let label: String

    private enum Phase { case beforeObject, beforeKey, afterKey, beforeArray, inArray, afterArray, done }

    /// Calls `body` with the line each account object starts on and its
    /// bytes. A file that is not shaped as an `auth:export` JSON file is
    /// refused as a whole (`invalid_import_file`), naming the line.
    func forEachAccount(_ body: (_ line: Int, _ object: [UInt8]) throws -> Void) throws {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw GuestModeError(.fileNotFound, "cannot open the export '\(label)'")
        }
        defer { try? handle.close() }
        var phase = Phase.beforeObject
        var line = 1
        var key: [UInt8] = []
        var object: [UInt8] = []
        var objectLine = 0
        var depth = 0
        var isInString = false
        var isEscaped = false
        func refuse(_ what: String) -> GuestModeError {
            GuestModeError(
                .invalidImportFile,
                "\(label):\(line): \(what); expected the JSON that 'firebase auth:export' writes: {\"users\": [ … ]}")
        }
        while true {
            let chunk = try handle.nextChunk(of: "the export '\(label)'")
            if chunk.isEmpty { break }
            for byte in chunk {
                let isSpace = byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
                switch phase {
                case .beforeObject:
                    if isSpace { break }
                    guard byte == UInt8(ascii: "{") else { throw refuse("the file does not start with '{'") }
                    phase = .beforeKey
                case .beforeKey:
                    if isInString {
                        if byte == UInt8(ascii: "\"") {
                            isInString = false
                            guard key == Array("users".utf8) else {
                                throw refuse("unexpected key '\(String(decoding: key, as: UTF8.self))'")
                            }
                            phase = .afterKey
                        } else {
                            key.append(byte)
                            if key.count > 64 { throw refuse("unexpected key") }
                        }
                        break
                    }
                    if isSpace { break }
                    guard byte == UInt8(ascii: "\"") else { throw refuse("expected the key \"users\"") }
                    isInString = true
                case .afterKey:
                    if isSpace { break }
                    guard byte == UInt8(ascii: ":") else { throw refuse("expected ':' after \"users\"") }
                    phase = .beforeArray
                case .beforeArray:
                    if isSpace { break }
                    guard byte == UInt8(ascii: "[") else { throw refuse("\"users\" is not an array") }
                    phase = .inArray
                case .inArray where depth == 0:
                    if isSpace || byte == UInt8(ascii: ",") { break }
                    if byte == UInt8(ascii: "]") {
                        phase = .afterArray
                        break
                    }
                    guard byte == UInt8(ascii: "{") else { throw refuse("an account is not a JSON object") }
                    depth = 1
                    object = [byte]
                    objectLine = line
                case .inArray:
                    object.append(byte)
                    guard object.count <= Self.maximumAccountLength else {
                        line = objectLine
                        throw refuse("the account is longer than \(Self.maximumAccountLength) bytes")
                    }
                    if isInString {
                        if isEscaped {
                            isEscaped = false
                        } else if byte == UInt8(ascii: "\\") {
                            isEscaped = true
                        } else if byte == UInt8(ascii: "\"") {
                            isInString = false
                        }
                    } else if byte == UInt8(ascii: "\"") {
                        isInString = true
                    } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                        depth += 1
                    } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                        depth -= 1
                        if depth == 0 { try body(objectLine, object) }
                    }
                case .afterArray:
                    if isSpace { break }
                    guard byte == UInt8(ascii: "}") else { throw refuse("expected '}' after the users") }
                    phase = .done
                case .done:
                    guard isSpace else { throw refuse("text after the end of the export") }
                }
                if byte == 0x0A { line += 1 }
            }
        }
        guard phase == .done else { throw refuse("the file ends before the export does") }
    }
}

extension ImportedAccount {
    /// Firebase provider ids and the profile provider each becomes.
    static let firebaseProviders = [
        "apple.com": "apple", "google.com": "google", "facebook.com": "facebook", "twitter.com": "twitter",
        "github.com": "github", "microsoft.com": "microsoft", "yahoo.com": "yahoo", "password": "email",
        "phone": "phone",
    ]

    /// One account object of a Firebase export. `localId` is the user id;
    /// each `providerUserInfo` entry an identity (its `rawId` the subject);
    /// an email with a password hash and no provider entry, the `email`
    /// identity; a phone number alone, the `phone` identity; none of them,
    /// an anonymous guest. `createdAt` and `lastSignedInAt` are epoch
    /// milliseconds, as strings or numbers.
    init(firebase bytes: [UInt8], line: Int) throws {
        func invalid(_ what: String) -> GuestModeError {
            GuestModeError(.invalidImportFile, what)
        }
        let object: [String: JSONValue]
        do {
            guard case .object(let parsed) = try StrictJSON.parse(Data(bytes)) else {
                throw invalid("the account is not a JSON object")
            }
            object = parsed
        } catch let failure as StrictJSON.Failure {
            throw invalid("the account is not valid JSON: \(failure)")
        }
        func string(_ name: String, in object: [String: JSONValue]) throws -> String? {
            switch object[name] {
            case nil, .null: return nil
            case .string(let value):
                try TextRule.check(value, what: "'\(name)'")
                return value
            default: throw invalid("'\(name)' is not a string")
            }
        }
        func milliseconds(_ name: String) throws -> Date? {
            let written: String
            switch object[name] {
            case nil, .null: return nil
            case .string(let value), .number(let value): written = value
            default: throw invalid("'\(name)' is not a number of milliseconds")
            }
            guard let number = Double(written), written.allSatisfy(\.isASCII), number.isFinite, number >= 0,
                number <= 253_402_300_799_000
            else {
                throw invalid(
                    "'\(name)' is not a number of milliseconds from 1970 to 9999: \(written.debugDescription)")
            }
            return Date(timeIntervalSince1970: (number / 1000).rounded(.down))
        }
        guard let id = try string("localId", in: object), !id.isEmpty else {
            throw invalid("the account has no 'localId'")
        }
        guard let createdAt = try milliseconds("createdAt") else {
            throw invalid("account '\(id)' has no 'createdAt'")
        }
        let email = try string("email", in: object)
        let hasPasswordHash = try string("passwordHash", in: object).map { !$0.isEmpty } ?? false
        var identities: [Identity] = []
        switch object["providerUserInfo"] {
        case nil, .null: break
        case .array(let entries):
            for entry in entries {
                guard case .object(let info) = entry else {
                    throw invalid("account '\(id)' has a 'providerUserInfo' entry that is not an object")
                }
                guard let providerID = try string("providerId", in: info), !providerID.isEmpty else {
                    throw invalid("account '\(id)' has a 'providerUserInfo' entry without 'providerId'")
                }
                guard let provider = Self.firebaseProviders[providerID] else {
                    throw invalid(
                        "account '\(id)' has the provider '\(providerID)', which guestmode does not know; known: \(Self.firebaseProviders.keys.sorted().joined(separator: ", "))"
                    )
                }
                guard let subject = try string("rawId", in: info), !subject.isEmpty else {
                    throw invalid("account '\(id)' has a \(providerID) entry without 'rawId'")
                }
                identities.append(
                    Identity(
                        provider: provider, subject: subject, email: try string("email", in: info) ?? email,
                        linkedAt: createdAt))
            }
        default: throw invalid("account '\(id)' has a 'providerUserInfo' that is not an array")
        }
        if let email, !email.isEmpty, hasPasswordHash || identities.isEmpty,
            !identities.contains(where: { $0.provider == "email" })
        {
            identities.append(Identity(provider: "email", subject: email, email: email, linkedAt: createdAt))
        }
        if identities.isEmpty, let phone = try string("phoneNumber", in: object), !phone.isEmpty {
            identities.append(Identity(provider: "phone", subject: phone, email: nil, linkedAt: createdAt))
        }
        self.init(
            line: line, id: id, createdAt: createdAt,
            lastSeenAt: max(createdAt, try milliseconds("lastSignedInAt") ?? createdAt), identities: identities,
            hasPasswordHash: hasPasswordHash)
    }
}
