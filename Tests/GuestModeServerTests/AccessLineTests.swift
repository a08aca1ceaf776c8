import Foundation
import GuestModeKit
import Logging
import Testing

@testable import GuestModeServer

/// An access line written straight from its values (`JSONLineLogHandler.write(_:label:time:to:)`) is, byte for
/// byte, the line `JSONLineLogHandler.log` writes from the same line's swift-log metadata, which is what any
/// other handler is given.
@Suite("the access line")
struct AccessLineTests {
    static let time = Date(timeIntervalSince1970: 1_795_000_000.125)

    static func written(_ line: AccessLine, label: String = "guestmode.access") -> String {
        var writer = JSONWriter(pretty: false)
        JSONLineLogHandler.write(line, label: label, time: time, to: &writer)
        return writer.withBytes { String(decoding: $0, as: UTF8.self) }
    }

    static func logged(_ line: AccessLine, label: String = "guestmode.access") -> String {
        let bytes = JSONLineLogHandler.line(
            metadata: line.metadata, level: .info, message: AccessLine.message, label: label, time: time)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("a routed request's line, with and without its optional members")
    func routedLines() {
        var line = AccessLine(
            method: "GET", route: "/v1/users/{user}/meters/{meter}/check", status: 200, nanoseconds: 1_234_567,
            client: "127.0.0.1")
        #expect(Self.written(line) == Self.logged(line))
        line.requestID = "0a1b2c3d"
        line.bytes = 182
        line.bytesIn = 0
        #expect(Self.written(line) == Self.logged(line))
        line.errorCode = "store_unavailable"
        line.error = "the store at \"/var/lib/x\" is locked\n\ttry again"
        #expect(Self.written(line) == Self.logged(line))
        #expect(
            Self.written(line)
                == #"{"bytes":182,"bytes_in":0,"client":"127.0.0.1","duration_ms":1.235,"error":"the store at \"/var/lib/x\" is locked\n\ttry again","error_code":"store_unavailable","level":"info","logger":"guestmode.access","message":"request","method":"GET","request_id":"0a1b2c3d","route":"/v1/users/{user}/meters/{meter}/check","status":200,"time":"2026-11-18T11:06:40.125Z"}"#
                + "\n")
    }

    @Test("a connection refusal's line: no request id, the code as its error")
    func refusalLine() {
        var line = AccessLine(method: "-", route: "none", status: 408, nanoseconds: 10_000_000_000, client: "::1")
        line.error = "request_timeout"
        #expect(Self.written(line) == Self.logged(line))
    }

    @Test("durations as Double's description writes them, from none to hours, rounded half away from zero")
    func durations() {
        var nanoseconds: [Int64] = [0, 1, 499, 500, 501, 999, 1_000, 1_499, 1_500, 49_999, 50_000, 999_500, 1_000_000]
        nanoseconds += [10_000_500, 123_456_789, 3_600_000_000_000, 86_400_000_000_499, -1, -500, -1_500]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            nanoseconds.append(
                Int64.random(in: 0...(1 << Int64.random(in: 1...50, using: &generator)), using: &generator))
        }
        for value in nanoseconds {
            let line = AccessLine(method: "GET", route: "none", status: 404, nanoseconds: value, client: "c")
            #expect(Self.written(line) == Self.logged(line), "nanoseconds \(value)")
            #expect(line.microseconds == Int64((Double(value) / 1000).rounded()), "nanoseconds \(value)")
        }
    }

    @Test("texts with every escape, in every member that is text")
    func escapes() {
        let texts = [
            "", "plain", "quote \" backslash \\ slash /", "\u{0}\u{1}\u{1F}\u{7F}", "tab\tline\nreturn\r", "é ü 中 🙂",
        ]
        for text in texts {
            var line = AccessLine(method: text, route: text, status: 500, nanoseconds: 42, client: text)
            line.requestID = text
            line.errorCode = text
            line.error = text
            #expect(Self.written(line, label: text) == Self.logged(line, label: text), "text \(text.debugDescription)")
        }
    }

    @Test("a line with details goes through swift-log, where they are members like the others")
    func detailsGoThroughTheLogger() {
        var line = AccessLine(
            method: "POST", route: "/v1/app-store/notifications", status: 200, nanoseconds: 9, client: "c")
        line.details = ["notification_type": "DID_RENEW", "status": "overridden"]
        let logged = Self.logged(line)
        #expect(logged.contains(#""notification_type":"DID_RENEW""#))
        #expect(logged.contains(#""status":"overridden""#))
    }

    @Test("the handler's own metadata and another handler take the swift-log path")
    func whichPathALineTakes() {
        #expect(AccessLog(Logger(label: "a", factory: { JSONLineLogHandler(label: $0) })).writesDirectly)
        var withMetadata = Logger(label: "a", factory: { JSONLineLogHandler(label: $0) })
        withMetadata[metadataKey: "deployment"] = "eu"
        #expect(!AccessLog(withMetadata).writesDirectly)
        #expect(!AccessLog(Logger(label: "a", factory: { _ in SwiftLogNoOpLogHandler() })).writesDirectly)
    }
}
