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
    let accessLog: AccessLog

    init(services: Services, logger: Logger) {
        self.services = services
        accessLog = AccessLog(logger)
    }

    func handle(
        _ request: Request, context: ServerContext, next: (Request, ServerContext) async throws -> Response
    ) async throws -> Response {
        let started = ContinuousClock.now
        let metrics = services.metrics
        metrics.inFlight.increment()
        defer { metrics.inFlight.decrement() }
        // Read once: the per-address limits and the access line both need it, and reading the peer's
        // address as text is 2.5 k instructions (bench/results.md, "Serving, round 21").
        var context = context
        let client = services.clientAddress(of: request, context: context)
        context.clientAddress = client
        let note = FailureNote()
        var response: Response
        do {
            response = try await FailureNote.$current.withValue(note) { [context] in try await next(request, context) }
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
        var line = AccessLine(
            method: method, route: route, status: status, nanoseconds: nanoseconds, client: client)
        line.requestID = requestID
        line.bytes = response.body.contentLength
        line.bytesIn = request.headers[.contentLength].flatMap { Int($0) }
        // Every failure's code; for a failure of the server or its store, the operator's own message,
        // which the caller was not shown (guestmode-serve(1), "Errors"). A refusal of the request's own
        // input keeps its message out: it would copy ids and query values into the log.
        if let failure = note.recorded {
            line.errorCode = failure.code.rawValue
            if failure.httpStatus.code >= 500 { line.error = failure.message }
        }
        line.details = note.details
        accessLog.write(line)
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
    let label: String

    /// A handler for the logger `label`.
    package init(label: String) {
        self.label = label
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        // The handler's own metadata is usually empty: merging into it copied and rehashed every member.
        let merged = metadata.isEmpty ? event.metadata ?? [:] : metadata.merging(event.metadata ?? [:]) { $1 }
        Self.emit(
            Self.line(
                metadata: merged, level: event.level, message: event.message.description, label: label,
                time: Self.now()))
    }

    /// The line of one log event: its metadata's members and `time`, `level`, `logger` and `message`, in
    /// the order of their names.
    ///
    /// Written by hand through JSONValue, not JSONSerialization over [String: Any]: Foundation's
    /// serialisation and date formatting were 30 % of the instructions of a whole `meter check`
    /// (callgrind, bench/results.md). The members are sorted as pairs and written, not gathered in a
    /// dictionary first, which hashed every name once more (bench/results.md, "Serving, round 7").
    static func line(
        metadata: Logger.Metadata, level: Logger.Level, message: String, label: String, time: Date
    ) -> [UInt8] {
        var members: [(String, JSONValue)] = []
        members.reserveCapacity(metadata.count + 4)
        for (key, value) in metadata {
            // The members every line has are not replaced by metadata of the same name.
            switch key {
            case "time", "level", "logger", "message": continue
            default: members.append((key, Self.json(value)))
            }
        }
        members.append(("time", .string(Timestamp.format(time))))
        members.append(("level", .string(level.rawValue)))
        members.append(("logger", .string(label)))
        members.append(("message", .string(message)))
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
        return line
    }

    /// An access line without details, byte for byte as `log` writes it from `line.metadata`: the members
    /// in the order of their names, written straight from their values. Through swift-log, the line's
    /// `Logger.Metadata` dictionary, its hashed names, the casts of its numbers and their sorting were 24 k
    /// instructions of every request (bench/results.md, "Serving, round 21").
    static func write(_ line: AccessLine, label: String, time: Date, to writer: inout JSONWriter) {
        var object = writer.openObject()
        if let bytes = line.bytes {
            writer.member("bytes", in: &object)
            writer.write(Int64(bytes))
        }
        if let bytesIn = line.bytesIn {
            writer.member("bytes_in", in: &object)
            writer.write(Int64(bytesIn))
        }
        writer.member("client", in: &object)
        writer.write(line.client)
        writer.member("duration_ms", in: &object)
        writer.write(thousandths: line.microseconds)
        if let error = line.error {
            writer.member("error", in: &object)
            writer.write(error)
        }
        if let errorCode = line.errorCode {
            writer.member("error_code", in: &object)
            writer.write(errorCode)
        }
        writer.member("level", in: &object)
        writer.write(Logger.Level.info.rawValue)
        writer.member("logger", in: &object)
        writer.write(label)
        writer.member("message", in: &object)
        writer.write(AccessLine.message)
        writer.member("method", in: &object)
        writer.write(line.method)
        if let requestID = line.requestID {
            writer.member("request_id", in: &object)
            writer.write(requestID)
        }
        writer.member("route", in: &object)
        writer.write(line.route)
        writer.member("status", in: &object)
        writer.write(Int64(line.status))
        writer.member("time", in: &object)
        writer.write(time)
        writer.close(object)
        writer.endLine()
    }

    /// Writes `line` to standard error, as `log` would write it at `info`.
    func write(_ line: AccessLine) {
        var writer = JSONWriter(pretty: false)
        Self.write(line, label: label, time: Self.now(), to: &writer)
        writer.withBytes(Self.emit)
    }

    private static let lock = NIOLock()

    /// One write per line: lines of concurrent requests never interleave.
    private static func emit(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        lock.withLock {
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(2, base + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    private static func emit(_ line: [UInt8]) {
        line.withUnsafeBufferPointer { emit($0) }
    }

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

    /// The log's time is when the line was written: the wall clock, never the requests' injected one.
    private static func now() -> Date { Date() }
}

/// One request's access line: what `ObservabilityMiddleware` logs for every routed request and the
/// connection layer for every request it answers itself.
struct AccessLine {
    /// Every access line's message.
    static let message = "request"

    var method: String
    /// The route's template, `none` when no route matched.
    var route: String
    var status: Int
    /// The time to answer, in microseconds (the line gives it in milliseconds).
    var microseconds: Int64
    var client: String
    var requestID: String?
    /// The answer's length, when it is known before it is sent.
    var bytes: Int?
    /// The request's `Content-Length`.
    var bytesIn: Int?
    var errorCode: String?
    /// The failure's message for the operator, or the code of a refusal by the connection layer.
    var error: String?
    /// What a route noted for the operator (`FailureNote.add`), under names of its own.
    var details: [String: String] = [:]

    init(method: String, route: String, status: Int, nanoseconds: Int64, client: String) {
        self.method = method
        self.route = route
        self.status = status
        // Rounded half away from zero, as `(Double(nanoseconds) / 1000).rounded()` was.
        microseconds = nanoseconds >= 0 ? (nanoseconds + 500) / 1000 : (nanoseconds - 500) / 1000
        self.client = client
    }

    /// The line as swift-log metadata, for a handler other than `JSONLineLogHandler`; numbers stay numbers.
    var metadata: Logger.Metadata {
        var metadata = Logger.Metadata(minimumCapacity: 12)
        metadata["method"] = .string(method)
        metadata["route"] = .string(route)
        metadata["status"] = .stringConvertible(status)
        metadata["duration_ms"] = .stringConvertible(Double(microseconds) / 1000)
        metadata["client"] = .string(client)
        if let requestID { metadata["request_id"] = .string(requestID) }
        if let bytes { metadata["bytes"] = .stringConvertible(bytes) }
        if let bytesIn { metadata["bytes_in"] = .stringConvertible(bytesIn) }
        if let errorCode { metadata["error_code"] = .string(errorCode) }
        if let error { metadata["error"] = .string(error) }
        for (name, value) in details { metadata[name] = .string(value) }
        return metadata
    }
}

/// Where access lines go. Straight to standard error when the logger's handler is the JSON-lines one with
/// no metadata of its own, which is what `guestmode-serve` logs through; through swift-log otherwise, and
/// for a line with details, whose names may be any.
struct AccessLog: Sendable {
    private let logger: Logger
    private let jsonLines: JSONLineLogHandler?

    init(_ logger: Logger) {
        self.logger = logger
        if let handler = logger.handler as? JSONLineLogHandler, handler.metadata.isEmpty {
            jsonLines = handler
        } else {
            jsonLines = nil
        }
    }

    /// Whether a line without details skips swift-log.
    var writesDirectly: Bool { jsonLines != nil }

    func write(_ line: AccessLine) {
        guard let jsonLines, line.details.isEmpty else {
            return logger.info(Logger.Message(stringLiteral: AccessLine.message), metadata: line.metadata)
        }
        guard jsonLines.logLevel <= .info else { return }
        jsonLines.write(line)
    }
}
