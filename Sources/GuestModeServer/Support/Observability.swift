import Foundation
import GuestModeKit
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOConcurrencyHelpers
import Synchronization

/// What the server measures, through swift-metrics: whatever backend the
/// process bootstrapped (`guestmode serve` exposes them on `/metrics` in
/// Prometheus's text format; without a bootstrap they go nowhere). Labels
/// are route templates, methods and statuses: never a path, a user id or
/// anything a request carried.
final class ServerMetrics: Sendable {
    /// The label of the request-latency histogram, whose buckets the process that exposes it chooses.
    static let durationLabel = "guestmode_http_request_duration_seconds"

    /// Requests being answered now.
    let inFlight = Meter(label: "guestmode_http_requests_in_flight")
    /// Engine calls holding a store connection (a thread of the pool) now.
    let storeInUse = Meter(label: "guestmode_store_pool_in_use")
    /// Engine calls waiting for a store connection now.
    let storeWaiting = Meter(label: "guestmode_store_pool_waiting")
    /// The pool's size: how many store connections there are.
    let storeSize = Meter(label: "guestmode_store_pool_size")

    private struct Key: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    /// What one route, method and status records into: its counter, and the latency timer of its route
    /// and method, which every status of them shares.
    private struct Series {
        let counter: Counter
        let timer: Metrics.Timer
    }

    private let series = NIOLockedValueBox<[Key: Series]>([:])
    private let timers = NIOLockedValueBox<[String: Metrics.Timer]>([:])

    init(threads: Int) {
        storeSize.set(threads)
    }

    /// The methods that are labels as themselves; any other (a client may send any token) is `other`,
    /// so no request can add labels without bound.
    static func label(ofMethod method: String) -> String {
        switch method {
        case "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "MOVE": method
        default: "other"
        }
    }

    /// One answered request: counted by route, method and status, its latency recorded by route and method.
    /// One look-up a request once its route, method and status were met: a look-up for the counter and
    /// another, under a key made by interpolation, for the timer were 3.8 k instructions of a served
    /// `meter check` (bench/results.md, "Serving, round 19").
    func record(route: String, method: String, status: Int, nanoseconds: Int64) {
        let key = Key(route: route, method: Self.label(ofMethod: method), status: status)
        let found = series.withLockedValue { $0[key] } ?? makeSeries(key)
        found.counter.increment()
        found.timer.recordNanoseconds(nanoseconds)
    }

    private func makeSeries(_ key: Key) -> Series {
        let timerKey = "\(key.method) \(key.route)"
        let timer = timers.withLockedValue { timers in
            if let timer = timers[timerKey] { return timer }
            let timer = Metrics.Timer(
                label: Self.durationLabel, dimensions: [("route", key.route), ("method", key.method)],
                preferredDisplayUnit: .seconds)
            timers[timerKey] = timer
            return timer
        }
        return series.withLockedValue { series in
            if let existing = series[key] { return existing }
            let made = Series(
                counter: Counter(
                    label: "guestmode_http_requests_total",
                    dimensions: [("route", key.route), ("method", key.method), ("status", String(key.status))]),
                timer: timer)
            series[key] = made
            return made
        }
    }
}

/// The outermost middleware: for every request, one access-log line and the
/// request metrics, with the status the client got (after `FailureMiddleware`
/// turned a failure into its document). It logs the route's template, never
/// the path (ids, record keys), the query or a header but the request id;
/// for a failure, its code and the operator's message.
struct ObservabilityMiddleware: RouterMiddleware {
    typealias Context = ServerContext

    let services: Services
    let logger: Logger

    func handle(
        _ request: Request, context: ServerContext, next: (Request, ServerContext) async throws -> Response
    ) async throws -> Response {
        let started = ContinuousClock.now
        let metrics = services.metrics
        metrics.inFlight.increment()
        defer { metrics.inFlight.decrement() }
        let note = FailureNote()
        var response: Response
        do {
            response = try await FailureNote.$current.withValue(note) { try await next(request, context) }
        } catch {
            response = Reply.failure(error, note: note).response
        }
        let elapsed = ContinuousClock.now - started
        let parts = elapsed.components
        let nanoseconds = parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
        let route = Self.route(of: context)
        let method = request.method.rawValue
        let status = Int(response.status.code)
        metrics.record(route: route, method: method, status: status, nanoseconds: nanoseconds)
        let requestID = context.id
        response.headers[.requestID] = requestID
        // Room for every member a line may have: a literal's dictionary grew, and rehashed, at the seventh.
        var metadata = Logger.Metadata(minimumCapacity: 12)
        metadata["method"] = .string(method)
        metadata["route"] = .string(route)
        metadata["status"] = .stringConvertible(status)
        metadata["duration_ms"] = .stringConvertible((Double(nanoseconds) / 1000).rounded() / 1000)
        metadata["request_id"] = .string(requestID)
        metadata["client"] = .string(services.clientAddress(of: request, context: context))
        if let bytes = response.body.contentLength { metadata["bytes"] = .stringConvertible(bytes) }
        if let length = request.headers[.contentLength].flatMap({ Int($0) }) {
            metadata["bytes_in"] = .stringConvertible(length)
        }
        // Every failure's code; for a failure of the server or its store, the operator's own message,
        // which the caller was not shown (guestmode-serve(1), "Errors"). A refusal of the request's own
        // input keeps its message out: it would copy ids and query values into the log.
        if let failure = note.recorded {
            metadata["error_code"] = .string(failure.code.rawValue)
            if failure.httpStatus.code >= 500 { metadata["error"] = .string(failure.message) }
        }
        for (name, value) in note.details { metadata[name] = .string(value) }
        logger.info("request", metadata: metadata)
        return response
    }

    /// The route's template (`/v1/users/{user}/records/{collection}/{key}`), as the OpenAPI
    /// document names it; `none` when no route matched.
    static func route(of context: ServerContext) -> String {
        guard let path = context.endpointPath, path != "NotFound" else { return "none" }
        if let known = templates.withLock({ $0[path] }) { return known }
        let made = template(of: path)
        templates.withLock { $0[path] = made }
        return made
    }

    /// Each route's template, made once: a path here is one the router registered, so there are as many as
    /// routes, and making it again was 3 k instructions of every request (bench/results.md, "Serving,
    /// round 19").
    private static let templates = Mutex<[String: String]>([:])

    /// `/v1/users/:user` → `/v1/users/{user}`.
    static func template(of path: String) -> String {
        // Byte by byte: splitting, mapping and joining the segments was 28 k instructions of every
        // request's access log line (bench/results.md, "Serving, round 5").
        var template: [UInt8] = []
        template.reserveCapacity(path.utf8.count + 8)
        var inParameter = false
        for byte in path.utf8 {
            let startsSegment = template.last == UInt8(ascii: "/") || template.isEmpty
            if byte == UInt8(ascii: ":") && startsSegment {
                template.append(UInt8(ascii: "{"))
                inParameter = true
            } else if byte == UInt8(ascii: "/") && inParameter {
                template.append(contentsOf: [UInt8(ascii: "}"), UInt8(ascii: "/")])
                inParameter = false
            } else {
                template.append(byte)
            }
        }
        if inParameter { template.append(UInt8(ascii: "}")) }
        return String(decoding: template, as: UTF8.self)
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
}

/// A swift-log handler writing one JSON object per line on standard error:
/// `time`, `level`, `logger`, `message` and the metadata's members, so a
/// log collector reads the server's lines without a pattern.
package struct JSONLineLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info
    private let label: String

    /// A handler for the logger `label`.
    package init(label: String) {
        self.label = label
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        // Written by hand through JSONValue, not JSONSerialization over [String: Any]: the access log
        // writes a line per request, and Foundation's serialisation and date formatting were 30 % of
        // the instructions of a whole `meter check` (callgrind, bench/results.md).
        // The handler's own metadata is usually empty: merging into it copied and rehashed every member.
        // The members are sorted as pairs and written, not gathered in a dictionary first, which hashed
        // every name once more (bench/results.md, "Serving, round 7").
        let merged = metadata.isEmpty ? event.metadata ?? [:] : metadata.merging(event.metadata ?? [:]) { $1 }
        var members: [(String, JSONValue)] = []
        members.reserveCapacity(merged.count + 4)
        for (key, value) in merged {
            // The members every line has are not replaced by metadata of the same name.
            switch key {
            case "time", "level", "logger", "message": continue
            default: members.append((key, Self.json(value)))
            }
        }
        members.append(("time", .string(Self.timestamp())))
        members.append(("level", .string(event.level.rawValue)))
        members.append(("logger", .string(label)))
        members.append(("message", .string(event.message.description)))
        members.sort { $0.0 < $1.0 }
        var line: [UInt8] = []
        line.reserveCapacity(256)
        line.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            JSONValue.open(index, name: member.0, in: &line, pretty: false, indent: 1)
            member.1.write(to: &line, pretty: false, indent: 1)
        }
        JSONValue.close(UInt8(ascii: "}"), in: &line, pretty: false, indent: 0)
        line.append(UInt8(ascii: "\n"))
        // One write per line: lines of concurrent requests never interleave.
        Self.lock.withLock {
            line.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    guard written > 0 else { return }
                    offset += written
                }
            }
        }
    }

    private static let lock = NIOLock()

    /// Numbers stay numbers (a status, a duration), everything else is text.
    private static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case let .string(text): return .string(text)
        case let .stringConvertible(convertible):
            switch convertible {
            case let number as Int: return .number(String(number))
            case let number as Double where number.isFinite: return .number(String(number))
            default: return .string(convertible.description)
            }
        case let .array(values): return .array(values.map(json))
        case let .dictionary(members): return .object(members.mapValues(json))
        }
    }

    private static func timestamp() -> String {
        // The log's time is when the line was written: the wall clock, never the requests' injected one.
        Timestamp.format(Date())
    }
}
