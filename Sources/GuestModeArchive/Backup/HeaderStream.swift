import Foundation
import GuestModeKit

/// `header.json` parsed as it streams in, so a header listing millions of
/// users is read in constant memory: every member but `users` is cut out and
/// parsed whole by the strict parser (a member may take at most
/// `memberLimit` bytes), and each string of the `users` array goes to
/// `onUser` as soon as it is complete. Nothing is lenient: a byte that
/// cannot continue the document is a `Failure` naming its offset.
///
/// ```swift
/// var stream = HeaderStream { user in print(user) }
/// try stream.feed(chunk)        // as often as chunks arrive
/// let members = try stream.finish()
/// ```
struct HeaderStream {
    /// Why the bytes are not a header, and where (1-based byte offset).
    struct Failure: Error, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "\(reason) at byte \(offset)" }
    }

    /// The most bytes one member other than `users`, or one user id, may take.
    static let memberLimit = 1 << 20

    private enum State {
        case start, firstKey, nextKey, key, colon, value, member, scalar, afterValue
        case usersFirst, user, usersNext, usersElement, end
    }

    private var state = State.start
    /// Bytes consumed before the current one.
    private var position = 0
    /// The token being cut out: a key, a member's value, a user id.
    private var token: [UInt8] = []
    private var tokenStart = 0
    private var inString = false
    private var escaped = false
    private var depth = 0
    private var key = ""
    private var members: [String: JSONValue] = [:]
    private let onUser: (String) throws -> Void

    init(onUser: @escaping (String) throws -> Void) { self.onUser = onUser }

    /// Parses the next bytes of the header.
    mutating func feed(_ chunk: UnsafeRawBufferPointer) throws {
        var index = chunk.startIndex
        while index < chunk.endIndex {
            if state == .user, !escaped {
                // A user id's run of plain bytes taken at once: byte by byte through `step`, the list of a
                // million users was a large part of reading a whole-store header. The same bytes, the same limit.
                var end = index
                while end < chunk.endIndex, chunk[end] != UInt8(ascii: "\""), chunk[end] != UInt8(ascii: "\\") {
                    end += 1
                }
                let run = end - index
                if run > 0, token.count + run <= Self.memberLimit {
                    token.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[index..<end]))
                    position += run
                    index = end
                    continue
                }
            }
            try step(chunk[index])
            position += 1
            index += 1
        }
    }

    /// The members other than `users`, once the whole header was fed.
    /// `users` is present (as an empty array) when the header had it.
    mutating func finish() throws -> [String: JSONValue] {
        if state == .scalar { try endMember() }
        guard state == .end else { throw Failure(offset: position + 1, reason: "unexpected end of input") }
        return members
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private func fail(_ reason: String) -> Failure { Failure(offset: position + 1, reason: reason) }

    private static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return String(format: "byte 0x%02X", byte)
    }

    private mutating func begin(_ byte: UInt8) {
        token.removeAll(keepingCapacity: true)
        token.append(byte)
        tokenStart = position
        inString = byte == UInt8(ascii: "\"")
        escaped = false
        depth = byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") ? 1 : 0
    }

    private mutating func append(_ byte: UInt8) throws {
        guard token.count < Self.memberLimit else {
            throw Failure(
                offset: tokenStart + 1,
                reason: "a value longer than \(Self.memberLimit) bytes (member '\(key)')")
        }
        token.append(byte)
    }

    /// Adds a byte to a string token; true when it closed the string.
    private mutating func stringByte(_ byte: UInt8) -> Bool {
        if escaped {
            escaped = false
        } else if byte == UInt8(ascii: "\\") {
            escaped = true
        } else if byte == UInt8(ascii: "\"") {
            inString = false
            return true
        }
        return false
    }

    /// The token parsed by the strict parser, its offsets made the header's.
    private func parsedToken() throws -> JSONValue {
        do {
            return try StrictJSON.parse(Data(token))
        } catch {
            throw Failure(offset: tokenStart + error.offset, reason: error.reason)
        }
    }

    private mutating func endMember() throws {
        let value = try parsedToken()
        guard members[key] == nil else {
            throw Failure(offset: tokenStart + 1, reason: "duplicate member name '\(key)'")
        }
        members[key] = value
        state = .afterValue
    }

    private mutating func endUser() throws {
        let user: String
        let inner = token.count - 2
        let plain = token.withUnsafeBufferPointer { bytes in
            !bytes[1..<(1 + inner)].contains { $0 < 0x20 || $0 == UInt8(ascii: "\\") }
        }
        if plain,
            let text = token.withUnsafeBufferPointer({
                TextRule.validatedUTF8(UnsafeBufferPointer(rebasing: $0[1..<(1 + inner)]))
            })
        {
            user = text
        } else if case .string(let text) = try parsedToken() {
            user = text
        } else {
            throw Failure(offset: tokenStart + 1, reason: "a user id that is not a string")
        }
        try onUser(user)
        state = .usersNext
    }

    private mutating func step(_ byte: UInt8) throws {
        switch state {
        case .start:
            if Self.isWhitespace(byte) { return }
            guard byte == UInt8(ascii: "{") else {
                throw fail(
                    byte == 0xEF
                        ? "a byte order mark is not JSON" : "expected a JSON object, found \(Self.describe(byte))")
            }
            state = .firstKey
        case .firstKey, .nextKey:
            if Self.isWhitespace(byte) { return }
            if byte == UInt8(ascii: "}"), state == .firstKey {
                state = .end
                return
            }
            guard byte == UInt8(ascii: "\"") else {
                throw fail("expected a member name, found \(Self.describe(byte))")
            }
            begin(byte)
            state = .key
        case .key:
            try append(byte)
            if stringByte(byte) {
                guard case .string(let name) = try parsedToken() else {
                    throw fail("a member name that is not a string")
                }
                key = name
                state = .colon
            }
        case .colon:
            if Self.isWhitespace(byte) { return }
            guard byte == UInt8(ascii: ":") else { throw fail("expected ':', found \(Self.describe(byte))") }
            state = .value
        case .value:
            if Self.isWhitespace(byte) { return }
            if key == "users" {
                guard members["users"] == nil else { throw fail("duplicate member name 'users'") }
                guard byte == UInt8(ascii: "[") else {
                    throw fail("expected the array of user ids, found \(Self.describe(byte))")
                }
                members["users"] = .array([])
                state = .usersFirst
                return
            }
            begin(byte)
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "["): state = .member
            default: state = .scalar
            }
        case .member:
            try append(byte)
            if inString {
                if stringByte(byte), depth == 0 { try endMember() }
                return
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 { try endMember() }
            default: break
            }
        case .scalar:
            if Self.isWhitespace(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}")
                || byte == UInt8(ascii: "]")
            {
                try endMember()
                try step(byte)
                return
            }
            try append(byte)
        case .afterValue:
            if Self.isWhitespace(byte) { return }
            if byte == UInt8(ascii: ",") {
                state = .nextKey
            } else if byte == UInt8(ascii: "}") {
                state = .end
            } else {
                throw fail("expected ',' or '}', found \(Self.describe(byte))")
            }
        case .usersFirst, .usersElement:
            if Self.isWhitespace(byte) { return }
            if byte == UInt8(ascii: "]"), state == .usersFirst {
                state = .afterValue
                return
            }
            guard byte == UInt8(ascii: "\"") else {
                throw fail("expected a user id (a string), found \(Self.describe(byte))")
            }
            begin(byte)
            state = .user
        case .user:
            try append(byte)
            if stringByte(byte) { try endUser() }
        case .usersNext:
            if Self.isWhitespace(byte) { return }
            if byte == UInt8(ascii: ",") {
                state = .usersElement
            } else if byte == UInt8(ascii: "]") {
                state = .afterValue
            } else {
                throw fail("expected ',' or ']' in the user list, found \(Self.describe(byte))")
            }
        case .end:
            guard Self.isWhitespace(byte) else { throw fail("unexpected \(Self.describe(byte)) after the header") }
        }
    }
}
