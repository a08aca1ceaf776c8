import Foundation
import GuestModeKit
import Synchronization

/// What a caller on the internet is told of a failure (guestmode-serve(1),
/// "Errors"). The engine's messages are written for the operator at a
/// terminal: they may name the store's file or URL, a temporary file, the
/// server's folders, or echo what the caller sent. A caller receives the
/// code and a message written for it; the operator's message goes to the
/// request's access-log line, which the `X-Request-Id` joins.
extension GuestModeError {
    var publicMessage: String {
        if let fixed = Self.publicMessages[code] { return fixed }
        switch kind {
        case .internalFailure, .ioError, .cannotCreate:
            return "the server could not answer this request; the operator's log has the details under its X-Request-Id"
        case .tryAgainLater:
            return "the server cannot answer this request now; nothing was done: try again shortly"
        default:
            return PublicText.scrubbed(message)
        }
    }

    /// The codes whose message is about the server rather than the request, or echoes a header: each
    /// gets a sentence of its own.
    private static let publicMessages: [Code: String] = [
        .storeBusy: "the store is busy; nothing was done: try again shortly",
        .storeUnreachable: "the store cannot be reached; nothing was done: try again shortly",
        .poolExhausted:
            "every store connection stayed busy for as long as a request may wait; nothing was done: try again shortly",
        .serverBusy: "the server is answering as many requests as it allows; nothing was done: try again in a moment",
        .commitUnknown:
            "the store did not confirm the change: it may or may not have been made; retry with the same Idempotency-Key",
        .migrationInterrupted: "the store is being upgraded; try again shortly",
        .idempotencyKeyReused:
            "this idempotency key (the Idempotency-Key header, or the body's id) was already used for another request; use a new key for a new request",
        .corruptStore: "the server's store failed a check; the operator's log has the details",
        .storeTooNew: "the server's store needs a newer version of the server",
        .storeWithoutProfile: "the server's store is not set up",
        .profileMismatch: "the server's store is bound to another profile",
        .schemaMigrationFailed: "the server's store could not be upgraded",
        .notAStore: "the server's store cannot be read",
        .routeNotFound: "no such route",
    ]
}

/// Takes out of a message what names the server's inside, whatever raised
/// it: file paths, URLs and network addresses. A safety net under the
/// public messages: the engine's sentences about a request (a cap, a key
/// not found) pass unchanged.
///
/// Read as UTF-8 bytes: every refusal a caller receives passes through here,
/// and the same rules over `Character`s (a set of them built for every word)
/// cost about 60 k instructions an answer (bench/results.md, "Serving, round 16").
/// What it looks for is ASCII; words are split at the space byte.
enum PublicText {
    static func scrubbed(_ message: String) -> String {
        let bytes = Array(message.utf8)
        // Nothing it replaces can be written without one of these.
        guard bytes.contains(where: { $0 == slash || $0 == colon || $0 == dot }) || mentionsLocalhost(bytes) else {
            return message
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var changed = false
        var start = 0
        while start <= bytes.count {
            let end = bytes[start...].firstIndex(of: space) ?? bytes.count
            let word = bytes[start..<end]
            if let replacement = replacement(for: word) {
                output.append(contentsOf: replacement)
                changed = true
            } else {
                output.append(contentsOf: word)
            }
            if end < bytes.count { output.append(space) }
            start = end + 1
        }
        return changed ? String(decoding: output, as: UTF8.self) : message
    }

    private static let space = UInt8(ascii: " ")
    private static let slash = UInt8(ascii: "/")
    private static let colon = UInt8(ascii: ":")
    private static let dot = UInt8(ascii: ".")

    private static func isWrapping(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ","),
            UInt8(ascii: ";"):
            true
        default: false
        }
    }

    /// What stands for `word` when it names the server's inside, keeping the
    /// quotes and punctuation around it; nil when it names nothing.
    private static func replacement(for word: ArraySlice<UInt8>) -> [UInt8]? {
        guard let first = word.firstIndex(where: { !isWrapping($0) }) else { return nil }
        var end = word.endIndex
        while end > first, isWrapping(word[end - 1]) || word[end - 1] == dot { end -= 1 }
        var core = word[first..<end]
        // `host=127.0.0.1`, `path=/var/…`: the value is what names something.
        if let equals = core.firstIndex(of: UInt8(ascii: "=")) { core = core[(equals + 1)...] }
        let kind: String
        if core.firstRange(of: "://".utf8) != nil {
            kind = "(a location on the server)"
        } else if core.starts(with: "/".utf8) || core.starts(with: "~/".utf8), core.dropFirst().contains(slash) {
            kind = "(a file on the server)"
        } else if isAddress(core) {
            kind = "(an address)"
        } else {
            return nil
        }
        return Array(word[word.startIndex..<first]) + Array(kind.utf8) + Array(word[end...])
    }

    /// An IPv4 address or `localhost`, with or without a port, or a bracketed IPv6 address.
    private static func isAddress(_ text: ArraySlice<UInt8>) -> Bool {
        var host = text
        if host.first == UInt8(ascii: "["), let close = host.firstIndex(of: UInt8(ascii: "]")) {
            let inside = host[(host.startIndex + 1)..<close]
            return inside.allSatisfy { isHexDigit($0) || $0 == colon || $0 == dot } && inside.contains(colon)
        }
        if let colonIndex = host.lastIndex(of: colon), host[(colonIndex + 1)...].allSatisfy(isDigit) {
            host = host[..<colonIndex]
        }
        if isLocalhost(host) { return true }
        let parts = host.split(separator: dot, omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(isDigit) }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
    }

    /// `localhost` in any case: ASCII letters differ from their capitals by one bit.
    private static func isLocalhost(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.count == 9 && zip(bytes, "localhost".utf8).allSatisfy { $0 | 0x20 == $1 }
    }

    private static func mentionsLocalhost(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 9 && (0...(bytes.count - 9)).contains { isLocalhost(bytes[$0..<($0 + 9)]) }
    }
}

/// The failure a request was answered with, as the operator should read it:
/// `ObservabilityMiddleware` puts one in the request's task and writes what
/// it holds on the request's access-log line.
final class FailureNote: Sendable {
    private let failure = Mutex<GuestModeError?>(nil)
    private let facts = Mutex<[String: String]>([:])

    /// The note of the request being answered in this task; nil outside a request.
    @TaskLocal static var current: FailureNote?

    func record(_ error: GuestModeError) {
        failure.withLock { $0 = error }
    }

    var recorded: GuestModeError? { failure.withLock { $0 } }

    /// What a route did that the operator reads on the access line (an App Store notification's type,
    /// id and outcome): values the server decided or verified, never a token or a caller's text.
    func add(_ name: String, _ value: String) {
        facts.withLock { $0[name] = value }
    }

    var details: [String: String] { facts.withLock { $0 } }
}
