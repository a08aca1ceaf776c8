import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import GuestModeServer

/// The connection guard's clocks on an event loop whose time the test moves: each deadline holds to
/// the nanosecond however many requests came before it on the connection, and however the guard
/// keeps its timers.
@Suite("Connection guard")
struct ConnectionGuardTests {
    /// Answers each request, empty and kept alive, once the read that brought its end is over: as the
    /// router does, whose answers come from another task.
    final class Answerer: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        var owed = 0

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .end = unwrapInboundIn(data) { owed += 1 }
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            while owed > 0 {
                owed -= 1
                let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "0"])
                context.write(wrapOutboundOut(.head(head)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }

    static let limits = ClientLimits(
        headTimeout: .seconds(10), bodyTimeout: .seconds(60), minimumBodyRate: 1024, bodyRateGrace: .seconds(5),
        connectionsPerAddress: 0)

    /// A connected channel: NIO's HTTP/1 codec, the guard, the answerer.
    static func connection() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(
            withPipeliningAssistance: false, withErrorHandling: false)
        try channel.pipeline.syncOperations.addHandler(
            ConnectionGuard(limits: limits, connections: AddressCounts(), report: { _ in }))
        try channel.pipeline.syncOperations.addHandler(Answerer())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        return channel
    }

    static func send(_ text: String, on channel: EmbeddedChannel) throws {
        try channel.writeInbound(ByteBuffer(string: text))
    }

    /// Everything the server wrote so far, as text.
    static func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = data else {
                Issue.record("a file region written")
                continue
            }
            text += String(buffer: buffer)
        }
        return text
    }

    @Test("after many answers, a kept-alive connection that asks nothing is closed at the head's deadline, not later")
    func headDeadlineAfterManyRequests() throws {
        let channel = try Self.connection()
        // Requests with bodies, each moving both clocks; the body's deadlines are later than the head's.
        for index in 0..<50 {
            try Self.send("POST /r HTTP/1.1\r\nHost: g\r\nContent-Length: 2\r\n\r\n", on: channel)
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(3))
            try Self.send("{}", on: channel)
            #expect(try Self.written(channel).hasPrefix("HTTP/1.1 200 OK"), "request \(index)")
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(7))
        }
        // The last answer was written 7 ms ago: the head's clock has 10 s less those 7 ms to run.
        channel.embeddedEventLoop.advanceTime(by: .seconds(10) - .milliseconds(8))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        // Closed without a word: it asked nothing.
        let closing = try Self.written(channel)
        #expect(closing.isEmpty, "\(closing)")
    }

    @Test("a body that stops coming is cut at the rate's first check, after a head deadline that came earlier")
    func bodyDeadlineAfterAHeadClock() throws {
        let channel = try Self.connection()
        try Self.send("GET /a HTTP/1.1\r\nHost: g\r\n\r\n", on: channel)
        _ = try Self.written(channel)
        // The head's clock (10 s) runs from this answer; the next head comes 1 s later, and its body's
        // first look at the rate is 5 s after that: the timer armed for the head's deadline fires first.
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        try Self.send("POST /r HTTP/1.1\r\nHost: g\r\nContent-Length: 100000\r\n\r\n", on: channel)
        try Self.send("x", on: channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(5) - .nanoseconds(1))
        #expect(channel.isActive)
        #expect(try Self.written(channel).isEmpty)
        // At the grace's end one byte in 5 s is under 1024 bytes a second: the body is cut, the route
        // reading it answers (here, nothing reads it), and the connection closes 2 s later at most.
        channel.embeddedEventLoop.advanceTime(by: .nanoseconds(1))
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
    }

    @Test("a head trickled in is refused 408 at its deadline, counted from the previous answer")
    func trickledHeadAfterAnAnswer() throws {
        let channel = try Self.connection()
        try Self.send("GET /a HTTP/1.1\r\nHost: g\r\n\r\n", on: channel)
        _ = try Self.written(channel)
        for byte in "GET /tric".utf8 {
            try Self.send(String(UnicodeScalar(byte)), on: channel)
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        channel.embeddedEventLoop.advanceTime(by: .seconds(1) - .nanoseconds(1))
        #expect(channel.isActive)
        #expect(try Self.written(channel).isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .nanoseconds(1))
        #expect(try Self.written(channel).hasPrefix("HTTP/1.1 408"))
    }
}
