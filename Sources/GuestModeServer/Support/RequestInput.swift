import Foundation
import GuestModeKit
import Hummingbird
import NIOCore

/// What a route reads from a request: path segments, query items and a
/// body, each checked before the engine sees it.
enum RequestInput {
    static var tooLarge: GuestModeError {
        GuestModeError(.bodyTooLarge, "the request body is larger than the server accepts")
    }

    /// The body's bytes of a request in `context`, refused past `limit`
    /// bytes: by its declared length before anything is read, else while
    /// reading.
    static func body(of request: Request, context: ServerContext, limit: Int? = nil) async throws -> [UInt8] {
        try await body(of: request, limit: limit ?? context.maxUploadSize, lease: context.bodyLease)
    }

    /// The body's bytes, refused past `limit` bytes: by its declared length
    /// before anything is read, else while reading. The bytes are taken
    /// from `lease` before they are held: a declared length all at once,
    /// before anything is read, a body of unknown length a piece at a time
    /// as it comes; past `--body-memory` the request is 503 `server_busy`.
    /// A declared length is read straight into an array of that size, so
    /// the body takes the memory it counts, not a growing buffer and a copy.
    /// A body of unknown length grows its array by doubling, as appending
    /// would, and takes what the array reserves: counting only the bytes
    /// that came, the arrays could hold twice `--body-memory`.
    static func body(of request: Request, limit: Int, lease: BodyLease?) async throws -> [UInt8] {
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        var bytes: [UInt8] = []
        if let declared {
            guard declared <= limit else { throw tooLarge }
            try lease?.take(declared)
            bytes.reserveCapacity(declared)
        }
        let bound = declared ?? limit
        var reserved = declared ?? 0
        for try await piece in request.body {
            guard piece.readableBytes <= bound - bytes.count else { throw tooLarge }
            let needed = bytes.count + piece.readableBytes
            if needed > reserved {
                let grown = min(bound, max(needed, reserved * 2))
                try lease?.take(grown - reserved)
                bytes.reserveCapacity(grown)
                reserved = grown
            }
            bytes += piece.readableBytesView
        }
        return bytes
    }

    /// A JSON object body, parsed by the engine's strict parser; an empty
    /// body is an empty object.
    static func object(_ bytes: [UInt8]) throws -> [String: JSONValue] {
        guard !bytes.isEmpty else { return [:] }
        let parsed: JSONValue
        do {
            parsed = try StrictJSON.parse(Data(bytes))
        } catch {
            throw GuestModeError(.invalidJson, "the request body is not valid JSON: \(error)")
        }
        guard case let .object(members) = parsed else {
            throw GuestModeError(.invalidJson, "the request body must be a JSON object")
        }
        return members
    }

    /// A path segment, percent-decoded (a record key may hold a `/` as
    /// `%2F`), under the same text rule as every stored text: valid UTF-8
    /// and no U+0000, on reads as on writes, so `c1%00` never finds `c1`.
    static func segment(_ name: String, of context: some RequestContext) throws -> String {
        guard let raw = context.parameters.get(name), let decoded = percentDecoded(raw) else {
            throw GuestModeError(.usage, "the path's \(name) is not valid percent-encoded UTF-8")
        }
        try TextRule.check(decoded, what: "the path's \(name)")
        return decoded
    }

    /// `?limit=` of a route answered a page at a time: a whole number from 1 to `largest`, and `largest`
    /// when the query gives none; `beyond` tells a caller who asked for more where the rest is.
    static func pageLimit(of request: Request, largest: Int, beyond: String = "") throws -> Int {
        guard let text = try query("limit", of: request) else { return largest }
        guard let limit = Int(text), (1...largest).contains(limit) else {
            throw GuestModeError(.invalidLimit, "limit is a whole number from 1 to \(largest), not '\(text)'\(beyond)")
        }
        return limit
    }

    /// A query item's value, percent-decoded strictly (Hummingbird's
    /// `queryParameters` keeps an undecodable value as it was sent) and under
    /// the text rule; nil when the query does not name it.
    static func query(_ name: String, of request: Request) throws -> String? {
        guard let query = request.uri.query, let item = firstItem(named: name, in: query) else { return nil }
        guard let value = item.value.map({ percentDecoded($0, plusIsSpace: true) }) ?? "" else {
            throw GuestModeError(
                .usage, "the query's \(name) is not valid percent-encoded UTF-8")
        }
        try TextRule.check(value, what: "the query's \(name)")
        return value
    }

    /// The first of `items(of: query)` whose name decodes to `name`, found without making the others: the
    /// whole list, each item a pair of `Substring`s, was 2 k instructions of every `?amount=` read
    /// (bench/results.md, "Serving, round 19"). Names are compared as bytes, as a URL's are: a name with
    /// no `%` is its own bytes.
    static func firstItem(named name: String, in query: String) -> (name: Substring, value: Substring?)? {
        var found: (name: Substring, value: Substring?)?
        forEachItem(in: query) { itemName, value in
            let named =
                itemName.utf8.contains(UInt8(ascii: "%"))
                ? percentDecoded(itemName)?.utf8.elementsEqual(name.utf8) == true
                : itemName.utf8.elementsEqual(name.utf8)
            if named { found = (itemName, value) }
            return !named
        }
        return found
    }

    /// The names of the query's parameters, in order, a repeated one as often as it is given.
    static func queryNames(of request: Request) -> [String] {
        guard let query = request.uri.query else { return [] }
        return items(of: query).map { name, _ in percentDecoded(name) ?? String(name) }
    }

    /// The query's items, split at each `&` and their first `=` byte by byte,
    /// as a URL's query is written: splitting the `String` went grapheme by
    /// grapheme (about 10 k instructions of a request), and a `&` followed by
    /// a combining mark was no separator. An item without `=` has no value.
    static func items(of query: String) -> [(name: Substring, value: Substring?)] {
        var items: [(name: Substring, value: Substring?)] = []
        forEachItem(in: query) { name, value in
            items.append((name, value))
            return true
        }
        return items
    }

    /// Gives `body` the query's items in order, as `items(of:)` lists them (an empty one, `a=1&&b=2`, is
    /// none), until it answers false. Inlined into its two callers: called, its closure cost a served
    /// `meter check` 1.9 k instructions more than the loop written out.
    @inline(__always)
    private static func forEachItem(in query: String, _ body: (_ name: Substring, _ value: Substring?) -> Bool) {
        let utf8 = query.utf8
        var start = utf8.startIndex
        while start != utf8.endIndex {
            let end = utf8[start...].firstIndex(of: UInt8(ascii: "&")) ?? utf8.endIndex
            if start != end {
                let item = utf8[start..<end]
                let equals = item.firstIndex(of: UInt8(ascii: "="))
                let value = equals.map { Substring(item[utf8.index(after: $0)...]) }
                guard body(Substring(item[..<(equals ?? end)]), value) else { return }
            }
            guard end != utf8.endIndex else { return }
            start = utf8.index(after: end)
        }
    }

    /// `text` with every `%XX` replaced by the byte it names (and, in a
    /// query, every `+` by a space); nil when a `%` is not followed by two hex
    /// digits or the bytes are not UTF-8. Foundation's `removingPercentEncoding`
    /// answers the same (`RequestTextTests`) except that it turned a lone
    /// continuation byte (`%A9`) into U+FFFD, so two spellings named one key;
    /// and it went through `NSString` and UTF-16, 31 k instructions of every
    /// served request (bench/results.md, "Serving, round 5").
    static func percentDecoded(_ text: some StringProtocol, plusIsSpace: Bool = false) -> String? {
        let utf8 = text.utf8
        guard utf8.contains(UInt8(ascii: "%")) || (plusIsSpace && utf8.contains(UInt8(ascii: "+"))) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            utf8.formIndex(after: &index)
            switch byte {
            case UInt8(ascii: "%"):
                guard index != utf8.endIndex, let high = utf8[index].hexDigitValue else { return nil }
                utf8.formIndex(after: &index)
                guard index != utf8.endIndex, let low = utf8[index].hexDigitValue else { return nil }
                utf8.formIndex(after: &index)
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+") where plusIsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The body in a temporary file for `body`, removed afterwards: the
    /// engine reads a log twice (validation, then the batches), an archive by
    /// its path. `suffix` names the file as the reader expects.
    static func spooled<T>(_ bytes: [UInt8], suffix: String, _ body: (URL) throws -> T) throws -> T {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "guestmode-serve-\(UUID().uuidString)\(suffix)")
        guard FileManager.default.createFile(atPath: url.path, contents: Data(bytes)) else {
            throw GuestModeError(
                .ioError, "cannot hold the request body in the temporary directory")
        }
        defer { try? FileManager.default.removeItem(at: url) }
        return try body(url)
    }
}

extension RequestInput {
    /// A body's span and end time for a grant (`trial`/`expires` and `until`): each parsed as the
    /// command line parses it, and at most one of the two given.
    static func term(
        span spanText: String?, named spanName: String, example: String, until untilText: String?
    ) throws -> (span: TimeSpan?, until: Date?) {
        let span = try spanText.map { text in
            guard let span = TimeSpan(parsing: text) else {
                throw GuestModeError(.usage, "'\(spanName)' is a duration (\(example)), not '\(text)'")
            }
            return span
        }
        let until = try untilText.map { text in
            guard let time = Timestamp.parse(text) else {
                throw GuestModeError(.usage, "'until' is an ISO 8601 time, not '\(text)'")
            }
            return time
        }
        if span != nil && until != nil {
            throw GuestModeError(.usage, "give either '\(spanName)' or 'until', not both")
        }
        return (span, until)
    }
}

extension Result where Failure == any Error {
    /// What `body` gives, or what it throws: for a failure to answer only
    /// after something else was checked (`Services.perform(as:…)`).
    init(awaiting body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
