import Foundation
import GuestModeCommandLine
import GuestModeKit
import Testing

@testable import GuestModeRemote

/// A Python `http.server` on 127.0.0.1 and a free port, answering by path: `/echo` sends back the method and the
/// body, `/redirect` answers 302, `/big` sends 100,000 bytes, `/slow` waits 3 s, `/status/N` answers N.
private final class ScriptedServer {
    let process: ChildProcess
    let port: Int

    init() throws {
        let script = #"""
            import http.server, sys, time
            class Handler(http.server.BaseHTTPRequestHandler):
                def log_message(self, *args): pass
                def answer(self):
                    length = int(self.headers.get("Content-Length") or 0)
                    body = self.rfile.read(length) if length else b""
                    if self.path == "/echo":
                        out = (self.command + " " + self.headers.get("Authorization", "-") + " ").encode() + body
                        self.send_response(200)
                    elif self.path == "/redirect":
                        out = b"moved"
                        self.send_response(302)
                        self.send_header("Location", "/echo")
                    elif self.path == "/big":
                        out = b"x" * 100000
                        self.send_response(200)
                    elif self.path == "/slow":
                        time.sleep(3)
                        out = b"late"
                        self.send_response(200)
                    else:
                        out = b"status"
                        self.send_response(int(self.path.rsplit("/", 1)[1]))
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                do_GET = do_POST = do_PUT = do_MOVE = answer
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """#
        process = try ChildProcess(
            "/usr/bin/env", arguments: ["python3", "-c", script], output: .pipe)
        let output = try #require(process.output)
        var line = Data()
        while let byte = try output.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            line += byte
        }
        port = Int(String(decoding: line, as: UTF8.self)) ?? 0
    }

    func url(_ path: String) throws -> RemoteURL {
        try RemoteURL("http://127.0.0.1:\(port)\(path)", what: "the test URL")
    }

    /// Stops the server for good: SIGKILL, which python3 cannot put off.
    func stop() {
        if process.isRunning { process.send(SIGKILL) }
        _ = try? process.wait()
    }

    deinit { stop() }
}

@Suite("HTTP transport") struct HTTPTransportTests {
    @Test func refusesAddressesThatAreNotHTTPOrLeaveTheMachineInPlainText() throws {
        for text in ["ftp://127.0.0.1/x", "http://example.com/hook", "https://user:secret@example.com/x", "/relative"] {
            #expect(throws: GuestModeError.self, "\(text)") { try RemoteURL(text, what: "the webhook URL") }
            do { _ = try RemoteURL(text, what: "the webhook URL") } catch let error as GuestModeError {
                #expect(error.code == .invalidURL)
                #expect(!error.message.contains("secret"))
            }
        }
        for text in [
            "https://hooks.example.com/guestmode", "http://127.0.0.1:8080/x", "http://[::1]:9/x", "http://localhost/x",
        ] {
            #expect(try RemoteURL(text, what: "the webhook URL").description == text)
        }
    }

    @Test func sendsTheMethodHeadersAndBodyAsked() async throws {
        let server = try ScriptedServer()
        let transport = HTTPTransport(userAgent: "guestmode-tests")
        let answer = try await transport.send(
            "PUT", to: try server.url("/echo"), headers: [("Authorization", "Bearer t0ken")],
            body: Array("payload".utf8))
        #expect(answer.status == 200)
        #expect(answer.bodyText == "PUT Bearer t0ken payload")
        let empty = try transport.sendWaiting("MOVE", to: try server.url("/echo"))
        #expect(empty.bodyText == "MOVE - ")
    }

    @Test func aRedirectIsAnAnswerNotFollowed() throws {
        let server = try ScriptedServer()
        let answer = try HTTPTransport(userAgent: "guestmode-tests").sendWaiting(
            "POST", to: try server.url("/redirect"), body: [1])
        #expect(answer.status == 302)
        #expect(!answer.isSuccess)
        #expect(answer.bodyText == "moved")
    }

    @Test func keepsOnlyTheStartOfALargeAnswer() throws {
        let server = try ScriptedServer()
        let answer = try HTTPTransport(userAgent: "guestmode-tests", responseLimit: 1000).sendWaiting(
            "GET", to: try server.url("/big"))
        #expect(answer.status == 200)
        #expect(answer.body.count == 1000)
        #expect(answer.isBodyCut)
    }

    @Test func anErrorStatusIsReturnedNotThrown() throws {
        let server = try ScriptedServer()
        let answer = try HTTPTransport(userAgent: "guestmode-tests").sendWaiting(
            "POST", to: try server.url("/status/503"), body: [])
        #expect(answer.status == 503)
        #expect(!answer.isSuccess)
    }

    @Test func noAnswerInTimeIsTryAgainLater() throws {
        let server = try ScriptedServer()
        let transport = HTTPTransport(userAgent: "guestmode-tests", timeout: 0.5)
        #expect {
            _ = try transport.sendWaiting("GET", to: try server.url("/slow"))
        } throws: { error in
            (error as? GuestModeError)?.code == .destinationUnavailable
                && (error as? GuestModeError)?.message.contains("did not answer in time") == true
        }
    }

    @Test func aClosedPortIsTryAgainLater() throws {
        // A port that was just free: bound by a server that is then stopped.
        let server = try ScriptedServer()
        server.stop()
        let port = server.port
        let transport = HTTPTransport(userAgent: "guestmode-tests")
        #expect {
            _ = try transport.sendWaiting(
                "POST", to: try RemoteURL("http://127.0.0.1:\(port)/hook", what: "the test URL"), body: [1])
        } throws: { error in
            (error as? GuestModeError)?.code == .destinationUnavailable
                && (error as? GuestModeError)?.kind == .tryAgainLater
        }
    }
}
