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
enum PublicText {
    static func scrubbed(_ message: String) -> String {
        var words: [Substring] = []
        var changed = false
        for word in message.split(separator: " ", omittingEmptySubsequences: false) {
            if let replacement = replacement(for: word) {
                words.append(replacement)
                changed = true
            } else {
                words.append(word)
            }
        }
        return changed ? words.joined(separator: " ") : message
    }

    /// What stands for `word` when it names the server's inside, keeping the
    /// quotes and punctuation around it; nil when it names nothing.
    private static func replacement(for word: Substring) -> Substring? {
        let wrapping: Set<Character> = ["'", "\"", "(", ")", ",", ";"]
        guard let first = word.firstIndex(where: { !wrapping.contains($0) }) else { return nil }
        var end = word.endIndex
        while end > first {
            let previous = word.index(before: end)
            guard wrapping.contains(word[previous]) || word[previous] == "." else { break }
            end = previous
        }
        var core = word[first..<end]
        // `host=127.0.0.1`, `path=/var/…`: the value is what names something.
        if let equals = core.firstIndex(of: "=") { core = core[core.index(after: equals)...] }
        let kind: String
        if core.contains("://") {
            kind = "(a location on the server)"
        } else if core.hasPrefix("/") || core.hasPrefix("~/"), core.dropFirst().contains("/") {
            kind = "(a file on the server)"
        } else if isAddress(core) {
            kind = "(an address)"
        } else {
            return nil
        }
        return word[word.startIndex..<first] + kind[...] + word[end...]
    }

    /// An IPv4 address or `localhost`, with or without a port, or a bracketed IPv6 address.
    private static func isAddress(_ text: Substring) -> Bool {
        var host = text
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            return host[host.index(after: host.startIndex)..<close].allSatisfy {
                $0.isHexDigit || $0 == ":" || $0 == "."
            }
                && host[host.index(after: host.startIndex)..<close].contains(":")
        }
        if let colon = host.lastIndex(of: ":"), host[host.index(after: colon)...].allSatisfy(\.isNumber) {
            host = host[..<colon]
        }
        if host.lowercased() == "localhost" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isNumber) }
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
