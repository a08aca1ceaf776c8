import GuestModeKit
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Synchronization

/// What one connection may take of the server before it is cut: the time its requests' heads and bodies
/// may take in all, the slowest body it may send, and how many connections its address may hold.
struct ClientLimits: Sendable {
    /// From the connection's opening, or the end of its previous answer, to the end of the next head.
    var headTimeout: TimeAmount = .seconds(10)
    /// From a request's head to the end of its body.
    var bodyTimeout: TimeAmount = .seconds(60)
    /// The slowest body, in bytes a second on average since the head, once `bodyRateGrace` has passed; 0 for none.
    var minimumBodyRate = 1024
    /// How long a body may come at any pace before `minimumBodyRate` applies: a client's first round trips.
    var bodyRateGrace: TimeAmount = .seconds(5)
    /// Connections one address may hold open at once; 0 for no limit. A trusted proxy's are never capped.
    var connectionsPerAddress = 128
    /// The proxies whose connections carry many clients.
    var trustedProxies: Set<String> = []
}

/// How many of something each address holds now (connections, requests in flight), shared by every
/// connection of the server.
final class AddressCounts: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    /// Takes a place for `address`; false (and nothing taken) when it already holds `limit`.
    func enter(_ address: String, limit: Int) -> Bool {
        counts.withLock { counts in
            let held = counts[address, default: 0]
            guard held < limit else { return false }
            counts[address] = held + 1
            return true
        }
    }

    /// Gives back a place `enter` took; an address holding none is forgotten, so the table holds only
    /// the addresses connected now.
    func leave(_ address: String) {
        counts.withLock { counts in
            let held = counts[address, default: 1] - 1
            counts[address] = held > 0 ? held : nil
        }
    }
}

/// A request the connection layer answered (or cut) itself, for the access log and the metrics: the
/// router never saw it.
struct ConnectionRefusal: Sendable {
    /// The status answered (written, or meant to be when the peer was gone).
    var status: HTTPResponse.Status
    var code: GuestModeError.Code
    /// The request's method; nil when its head never arrived whole.
    var method: String?
    /// The client's address, as `Services.clientAddress` reads it.
    var client: String
    /// From the request's start (its head, or the start of the head's clock) to the refusal.
    var nanoseconds: Int64
}

/// Guards a connection below the router, between NIO's HTTP/1 decoder and Hummingbird (so it sees the
/// HTTP version and the decoder's errors), against clients that hold the server without sending
/// anything worth answering (issue 31):
///
/// - a head must arrive whole within `headTimeout` of the connection's opening or of the previous
///   answer, and a body within `bodyTimeout` of its head, at `minimumBodyRate` on average after
///   `bodyRateGrace`: the idle timeout alone is reset by every byte, so one byte every few seconds held
///   a connection, and a place of --max-requests, for ever;
/// - an address may hold `connectionsPerAddress` connections; one more is closed at once;
/// - a transfer coding other than plain `chunked` is 501 (a body read as plain text would be the
///   coded bytes), a body without a length on HTTP/1.0 is 411, and a head or chunk NIO cannot parse is
///   400: before, the decoder's errors reached the routes as failures and were answered 500;
/// - an HTTP/1.0 connection is closed after its answer unless it asked to be kept alive, and so is one
///   answered before its body ended, rather than drained for as long as the client takes.
///
/// A body cut off (a deadline, the rate, a malformed chunk, the peer gone) fails the route reading it
/// with that client fault, which the route answers (408, 400) as any failure; a request the router
/// never saw is answered here and reported through `report`.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum Reading {
        /// Waiting for a head; the clock runs from `since`, or not at all while an answer is owed.
        case head(since: NIODeadline?)
        /// A body whose head came at `since`; `received` bytes of it so far.
        case body(since: NIODeadline, received: Int)
        /// The connection is being closed: whatever else arrives is dropped.
        case closing
    }

    /// What an answer owes its request, oldest first: HTTP/1.1 clients may send the next request
    /// before the previous answer.
    private struct Owed {
        var keepAlive: Bool
        var http10: Bool
    }

    private let limits: ClientLimits
    private let connections: AddressCounts
    private let report: @Sendable (ConnectionRefusal) -> Void
    private var reading = Reading.head(since: nil)
    private var owed: [Owed] = []
    /// Bytes of the awaited head have arrived: the decoder passes on every read's end, even one that
    /// completed no part.
    private var headBegun = false
    private var peer = "unknown"
    /// The address whose connection count this connection holds a place of.
    private var counted: String?
    private var started = false
    /// Set when this side closes, so the decoder's end-of-input error is the cut's, not the peer's.
    private var closingLocally = false
    private var timer: Scheduled<Void>?
    /// When `timer`, armed by `arm`, fires; nil for the closing timer and when none is armed.
    private var timerFires: NIODeadline?

    init(limits: ClientLimits, connections: AddressCounts, report: @escaping @Sendable (ConnectionRefusal) -> Void) {
        self.limits = limits
        self.connections = connections
        self.report = report
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        peer = context.channel.remoteAddress?.ipAddress ?? "unknown"
        if limits.connectionsPerAddress > 0, !limits.trustedProxies.contains(peer) {
            let key = Services.limitKey(of: peer)
            guard connections.enter(key, limit: limits.connectionsPerAddress) else {
                // Closed without a word: an answer would cost the server more than the connection did.
                reading = .closing
                closingLocally = true
                context.close(promise: nil)
                return
            }
            counted = key
        }
        startHeadClock(context)
    }

    private func stop() {
        timer?.cancel()
        timer = nil
        timerFires = nil
        if let counted {
            connections.leave(counted)
            self.counted = nil
        }
    }

    // MARK: Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (reading, part) {
        case (.closing, _):
            return
        case (.head, .head(let head)):
            if let refusal = Self.refusal(of: head) {
                refuse(context, refusal, head: head, since: context.eventLoop.now)
                return
            }
            owed.append(Owed(keepAlive: head.isKeepAlive, http10: Self.isHTTP10(head)))
            reading = .body(since: context.eventLoop.now, received: 0)
            arm(context)
        case (.body(let since, let received), .body(let bytes)):
            reading = .body(since: since, received: received + bytes.readableBytes)
        case (.body, .end):
            // The body's clock stops; its timer is left to fire and find nothing to do (`check`).
            reading = .head(since: nil)
            if owed.isEmpty { startHeadClock(context) }
        default:
            // NIO's decoder never sends parts out of order; if it did, nothing more on it could be trusted.
            reading = .closing
            closingLocally = true
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    /// Why a head is refused before anything reads its body, or nil when it may go on.
    private static func refusal(of head: HTTPRequestHead) -> GuestModeError? {
        let codings = head.headers[canonicalForm: "transfer-encoding"]
        if isHTTP10(head) {
            // RFC 1945 §7.2.2 asks a Content-Length of every HTTP/1.0 body; chunked is HTTP/1.1's.
            let bodied = [HTTPMethod.POST, .PUT, .PATCH].contains(head.method)
            if !codings.isEmpty || (bodied && !head.headers.contains(name: "content-length")) {
                return GuestModeError(
                    .lengthRequired, "an HTTP/1.0 request with a body must give its Content-Length")
            }
        }
        if !codings.isEmpty, codings.count != 1 || codings[0].lowercased() != "chunked" {
            return GuestModeError(
                .unsupportedTransferEncoding,
                "the server reads request bodies sent whole or in plain chunks (Transfer-Encoding: chunked) only")
        }
        return nil
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .head = reading { headBegun = true }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parse = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        switch reading {
        case .closing:
            return
        case .body:
            if case .invalidEOFState = parse {
                cut(
                    context,
                    closingLocally
                        ? Self.timeout("the connection was closed before the request's body ended")
                        : GuestModeError(
                            .requestIncomplete, "the connection closed before the request's body ended"))
            } else {
                cut(context, Self.malformed(parse))
            }
        case .head:
            // A client gone in the middle of a head is owed nothing.
            guard context.channel.isActive, parse != .invalidEOFState else {
                reading = .closing
                return
            }
            refuse(context, Self.malformed(parse), head: nil, since: context.eventLoop.now)
        }
    }

    private static func isHTTP10(_ head: HTTPRequestHead) -> Bool {
        head.version.major < 1 || (head.version.major == 1 && head.version.minor == 0)
    }

    private static func malformed(_ error: HTTPParserError) -> GuestModeError {
        switch error {
        case .invalidChunkSize:
            GuestModeError(
                .malformedRequest, "a chunk size of the request body is not a hexadecimal number")
        case .headerOverflow:
            GuestModeError(.malformedRequest, "the request's head is larger than the server accepts")
        default:
            GuestModeError(.malformedRequest, "the request is not valid HTTP/1.1")
        }
    }

    private static func timeout(_ message: String) -> GuestModeError {
        GuestModeError(.requestTimeout, message)
    }

    // MARK: Answers

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            if let request = owed.first {
                if !request.keepAlive || closingLocally {
                    head.headers.replaceOrAdd(name: "Connection", value: "close")
                } else if request.http10 {
                    head.headers.replaceOrAdd(name: "Connection", value: "keep-alive")
                }
            }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            let request = owed.isEmpty ? nil : owed.removeFirst()
            // An answer given before its request's body ended (413, 429, 503, 401) leaves a body nobody
            // will read: Hummingbird would drain it to keep the connection, for as long as the client
            // takes to send it.
            var bodyLeft = false
            if owed.isEmpty, case .body = reading { bodyLeft = true }
            if closingLocally || request?.keepAlive == false || bodyLeft {
                closeAfter(context, writing: data, promise: promise)
                return
            }
            context.write(data, promise: promise)
            if owed.isEmpty, case .head(nil) = reading { startHeadClock(context) }
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // The idle timeout closes from above: a body it cuts is the client's lateness too.
        closingLocally = true
        context.close(mode: mode, promise: promise)
    }

    /// Answers a request the router never sees, then closes: the decoder cannot be trusted to find the
    /// next request after a refused one.
    private func refuse(
        _ context: ChannelHandlerContext, _ error: GuestModeError, head: HTTPRequestHead?, since: NIODeadline
    ) {
        let reply = Reply.failure(error)
        reading = .closing
        closingLocally = true
        timer?.cancel()
        timer = nil
        timerFires = nil
        report(
            ConnectionRefusal(
                status: reply.status, code: error.code, method: head?.method.rawValue,
                client: Services.clientAddress(
                    peer: peer, forwardedFor: head.map { $0.headers["x-forwarded-for"].joined(separator: ",") },
                    trustedProxies: limits.trustedProxies),
                nanoseconds: (context.eventLoop.now - since).nanoseconds))
        guard owed.isEmpty else {
            // An earlier answer is still being written: this connection ends with it.
            return
        }
        var headers = HTTPHeaders()
        for field in reply.headers { headers.add(name: field.name.rawName, value: field.value) }
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        headers.replaceOrAdd(name: "Content-Length", value: String(reply.body.utf8.count))
        headers.replaceOrAdd(name: "Connection", value: "close")
        let status = HTTPResponseStatus(statusCode: Int(reply.status.code), reasonPhrase: reply.status.reasonPhrase)
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: reply.body)))), promise: nil)
        closeAfter(context, writing: wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Fails the request whose body is being read with `error` (the route reading it answers it as any
    /// failure, and a route that never reads it finds it when Hummingbird skips the rest), then closes
    /// once that answer is written. A request already answered (a 503 before its body) has nothing more
    /// to say: its connection closes now.
    private func cut(_ context: ChannelHandlerContext, _ error: GuestModeError) {
        guard case .body = reading else { return }
        reading = .closing
        closingLocally = true
        timer?.cancel()
        timer = nil
        timerFires = nil
        guard !owed.isEmpty else {
            context.close(promise: nil)
            return
        }
        context.fireErrorCaught(error)
        // A route busy elsewhere (waiting for a store connection) does not hold the connection past
        // the deadline: its answer, if it ever comes, finds the connection gone.
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) {
            context.close(promise: nil)
        }
    }

    /// Writes the last part of an answer, then closes the connection's output, and the whole
    /// connection shortly after: closing at once would drop a response still in the socket's buffer,
    /// and a client still sending would get a reset instead of the answer.
    private func closeAfter(_ context: ChannelHandlerContext, writing data: NIOAny, promise: EventLoopPromise<Void>?) {
        reading = .closing
        closingLocally = true
        let written = context.eventLoop.makePromise(of: Void.self)
        if let promise { written.futureResult.cascade(to: promise) }
        context.writeAndFlush(data, promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in
            context.close(mode: .output, promise: nil)
        }
        timer?.cancel()
        timerFires = nil
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) {
            context.close(promise: nil)
        }
    }

    // MARK: Deadlines

    private func startHeadClock(_ context: ChannelHandlerContext) {
        guard case .head = reading else { return }
        reading = .head(since: context.eventLoop.now)
        headBegun = false
        arm(context)
    }

    /// Schedules the next look at the clock: the head's deadline, or the body's next rate check or deadline.
    /// A timer already armed to fire no later is kept: `check` finds it early and arms again. Each request
    /// moves the clocks twice, and a timer scheduled and cancelled each time cost the event loop two
    /// insertions into its heap of timers and two removals a request; kept, a connection's timer fires
    /// once every few seconds however many requests it carries.
    private func arm(_ context: ChannelHandlerContext) {
        let next: NIODeadline
        switch reading {
        case .head(let since?):
            next = since + limits.headTimeout
        case .body(let since, _):
            let deadline = since + limits.bodyTimeout
            guard limits.minimumBodyRate > 0 else {
                next = deadline
                break
            }
            let now = context.eventLoop.now
            let graceEnds = since + limits.bodyRateGrace
            next = min(deadline, graceEnds > now ? graceEnds : now + .seconds(1))
        case .head(nil), .closing:
            return
        }
        if timer != nil, let timerFires, timerFires <= next { return }
        timer?.cancel()
        timerFires = next
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: next) { [self] in
            timer = nil
            timerFires = nil
            check(context)
        }
    }

    private func check(_ context: ChannelHandlerContext) {
        let now = context.eventLoop.now
        switch reading {
        case .head(let since?):
            guard now >= since + limits.headTimeout else { return arm(context) }
            guard headBegun else {
                // A connection that asks nothing (a kept-alive one, a browser's preconnection) is closed as
                // an idle one is, without a word: an answer to no request could be taken for the next one's.
                reading = .closing
                closingLocally = true
                context.close(promise: nil)
                return
            }
            refuse(
                context, Self.timeout("the request's head did not arrive in the time the server gives it"),
                head: nil, since: since)
        case .body(let since, let received):
            if now >= since + limits.bodyTimeout {
                return cut(context, Self.timeout("the request's body did not arrive in the time the server gives it"))
            }
            // Bytes the server has not read yet (a route still waiting before it reads its body) are not
            // counted: reads stop at NIOAsyncChannel's high watermark, ten parts, which at any real rate
            // is far more than a few seconds of --min-body-rate.
            let elapsed = now - since
            if limits.minimumBodyRate > 0, elapsed >= limits.bodyRateGrace,
                Double(received) < Double(limits.minimumBodyRate) * Double(elapsed.nanoseconds) / 1e9
            {
                return cut(context, Self.timeout("the request's body came slower than the server accepts"))
            }
            arm(context)
        case .head(nil), .closing:
            return
        }
    }
}

/// Hummingbird's HTTP/1 child channel with a `ConnectionGuard` between NIO's decoder and the
/// conversion to HTTP types: `HTTP1Channel`'s additional handlers come after that conversion, where
/// the request's HTTP version and the decoder's errors are no longer seen.
struct GuardedHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let idleTimeout: Duration
    let makeGuard: @Sendable () -> ConnectionGuard

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            // As HTTP1Channel does: NIOAsyncChannel pipelines, Hummingbird handles errors, HTTP types validate headers.
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: .init())
            try pipeline.addHandler(makeGuard())
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: idleTimeout, logger: logger))
            return try NIOAsyncChannel(
                wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}
