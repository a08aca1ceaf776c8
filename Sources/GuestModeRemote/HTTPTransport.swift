import CCurl
import Foundation
import GuestModeKit

/// What a remote HTTP server answered: its status and the start of its body.
package struct HTTPAnswer: Sendable {
    /// The status code (200, 404, …).
    package var status: Int
    /// The response body, cut at the transport's limit: receivers' bodies are read for a message, never trusted
    /// in full.
    package var body: [UInt8]
    /// Whether the body went past the limit and was cut.
    package var isBodyCut: Bool

    /// Whether the status is 2xx: the only answers that count as delivered.
    package var isSuccess: Bool { (200..<300).contains(status) }

    /// The body as text, for messages (invalid UTF-8 is replaced, never trusted).
    package var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// An `http://` or `https://` address a webhook is posted to or a backup is pushed to.
///
/// Plain `http://` is accepted only for loopback hosts: anything sent elsewhere crosses a network and must be
/// encrypted.
package struct RemoteURL: Sendable, Hashable, CustomStringConvertible {
    /// The address as given, normalised by Foundation.
    package let url: URL

    /// Checks `text` as a destination address (GuestModeKit's `DestinationURLRule`, which the profile's webhook
    /// URLs also pass); `what` names it in the message ("the webhook 'crm' URL").
    package init(_ text: String, what: String) throws {
        switch DestinationURLRule.check(text, what: what) {
        case .success(let url): self.url = url
        case .failure(let problem): throw GuestModeError(.invalidURL, problem.message)
        }
    }

    /// The address with `name` appended as one more path component (percent-encoded).
    package func appending(_ name: String) -> RemoteURL {
        RemoteURL(checked: url.appendingPathComponent(name))
    }

    private init(checked url: URL) { self.url = url }

    /// The address; never holds a secret (the initialiser refuses credentials).
    package var description: String { url.absoluteString }
}

/// Sends single HTTP requests for webhooks and remote backups, with the rules both need: a connect timeout and a
/// whole-exchange deadline, redirects never followed (a 3xx is an answer, not a delivery), only http and https, and
/// response bodies read only up to a limit.
///
/// Every libcurl call of the package is in this file; each request has its own handle, freed when it ends, so one
/// transport may be used from several threads at once.
package struct HTTPTransport: Sendable {
    private let timeoutMilliseconds: Int
    private let responseLimit: Int
    private let userAgent: String

    /// A transport that gives each exchange `timeout` seconds in all (connecting included, at most 5 of them) and
    /// keeps at most `responseLimit` bytes of each answer; `userAgent` names the tool and its version.
    package init(userAgent: String, timeout: Double = 10, responseLimit: Int = 64 * 1024) {
        timeoutMilliseconds = max(1, Int((timeout * 1000).rounded()))
        self.responseLimit = responseLimit
        self.userAgent = userAgent
    }

    /// Sends one request and returns the answer, whatever its status, without blocking the caller's thread.
    ///
    /// Throws `destination_unavailable` when no answer came: the host is down, refused the connection, or did not
    /// answer in time. The message names the address, never the headers (they carry tokens and signatures).
    package func send(
        _ method: String, to destination: RemoteURL, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) async throws -> HTTPAnswer {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result { try sendWaiting(method, to: destination, headers: headers, body: body) })
            }
        }
    }

    /// Sends one request from synchronous code (a command), waiting for the answer.
    package func sendWaiting(
        _ method: String, to destination: RemoteURL, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) throws -> HTTPAnswer {
        let curl = try LibCurl.table()
        guard let handle = curl.curl_easy_init() else {
            throw GuestModeError(.internalFailure, "libcurl could not make a request handle")
        }
        defer { curl.curl_easy_cleanup(handle) }
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl.curl_slist_free_all(headerList) }
        // An empty Expect stops libcurl waiting for "100 Continue" before a large body.
        for line in headers.map({ "\($0.0): \($0.1)" }) + ["User-Agent: \(userAgent)", "Expect:"] {
            headerList = curl.curl_slist_append(headerList, line)
        }
        let sink = ResponseSink(limit: responseLimit)
        let context = Unmanaged.passRetained(sink)
        defer { context.release() }
        let receive: guestmode_curl_write_function = { data, size, count, context in
            let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            return sink.append(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
        }
        var code = CURLE_OK
        func set(_ result: CURLcode) { if code == CURLE_OK { code = result } }
        set(guestmode_curl_set_pointer(curl.curl_easy_setopt, handle, CURLOPT_URL, destination.url.absoluteString))
        set(guestmode_curl_set_pointer(curl.curl_easy_setopt, handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(guestmode_curl_set_long(curl.curl_easy_setopt, handle, CURLOPT_FOLLOWLOCATION, 0))
        // Signals would interrupt other threads of the server; libcurl times out by polling instead.
        set(guestmode_curl_set_long(curl.curl_easy_setopt, handle, CURLOPT_NOSIGNAL, 1))
        set(guestmode_curl_set_long(curl.curl_easy_setopt, handle, CURLOPT_TIMEOUT_MS, timeoutMilliseconds))
        set(
            guestmode_curl_set_long(
                curl.curl_easy_setopt, handle, CURLOPT_CONNECTTIMEOUT_MS, min(timeoutMilliseconds, 5000)))
        set(guestmode_curl_set_pointer(curl.curl_easy_setopt, handle, CURLOPT_HTTPHEADER, headerList))
        set(guestmode_curl_set_write_function(curl.curl_easy_setopt, handle, receive))
        set(guestmode_curl_set_pointer(curl.curl_easy_setopt, handle, CURLOPT_WRITEDATA, context.toOpaque()))
        set(guestmode_curl_set_pointer(curl.curl_easy_setopt, handle, CURLOPT_CUSTOMREQUEST, method))
        if method == "HEAD" { set(guestmode_curl_set_long(curl.curl_easy_setopt, handle, CURLOPT_NOBODY, 1)) }
        guard code == CURLE_OK else {
            throw GuestModeError(
                .internalFailure, "libcurl refused an option: \(Self.describe(code, curl))")
        }
        let outcome: CURLcode =
            if let body {
                // POSTFIELDS makes libcurl send the bytes; CUSTOMREQUEST keeps the method the caller asked for.
                body.withUnsafeBytes { bytes in
                    var result = guestmode_curl_set_large(
                        curl.curl_easy_setopt, handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count))
                    if result == CURLE_OK {
                        // A zero-length body still needs a non-null pointer, or libcurl reads POSTFIELDS as a string.
                        result = guestmode_curl_set_pointer(
                            curl.curl_easy_setopt, handle, CURLOPT_POSTFIELDS,
                            bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1))
                    }
                    return result == CURLE_OK ? curl.curl_easy_perform(handle) : result
                }
            } else {
                curl.curl_easy_perform(handle)
            }
        guard outcome == CURLE_OK || (outcome == CURLE_WRITE_ERROR && sink.isCut) else {
            throw GuestModeError(
                .destinationUnavailable,
                "\(method) \(destination) got no answer: \(Self.describe(outcome, curl))")
        }
        var status = 0
        _ = guestmode_curl_response_code(curl.curl_easy_getinfo, handle, &status)
        return HTTPAnswer(status: status, body: sink.bytes, isBodyCut: sink.isCut)
    }

    private static func describe(_ code: CURLcode, _ curl: guestmode_curl) -> String {
        switch code {
        case CURLE_OPERATION_TIMEDOUT: "it did not answer in time"
        case CURLE_COULDNT_CONNECT: "the connection was refused"
        case CURLE_COULDNT_RESOLVE_HOST: "the host name does not resolve"
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            "the connection was closed before an answer"
        default: curl.curl_easy_strerror(code).map { String(cString: $0) } ?? "libcurl error \(code.rawValue)"
        }
    }
}

/// libcurl, opened the first time a request is sent (`dlopen`, CCurl/shim.h) rather than linked: the commands that
/// send nothing never load it, nor the shared objects it brings, most of a short command's start-up
/// (bench/results.md, "Start-up"). Every libcurl function this file calls is in its table; opening it also runs
/// `curl_global_init`, once, before any request.
private enum LibCurl {
    // The table holds the variadic curl_easy_setopt and curl_easy_getinfo, which Swift sees as opaque pointers,
    // not `Sendable`; it is written once, by this initialiser, and only read after.
    nonisolated(unsafe) private static let opened: Result<guestmode_curl, GuestModeError> = {
        var reason: UnsafePointer<CChar>?
        guard let table = guestmode_curl_open(&reason) else {
            return .failure(
                GuestModeError(
                    .internalFailure,
                    "cannot load libcurl, which sending HTTP requests needs (\(reason.map { String(cString: $0) } ?? "no reason given")); install it (Debian: libcurl4)"
                ))
        }
        _ = table.pointee.curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        return .success(table.pointee)
    }()

    /// The table, or why libcurl could not be opened.
    static func table() throws -> guestmode_curl { try opened.get() }
}

/// The answer's bytes as libcurl hands them over, kept up to a limit. Only the thread running the request touches it.
private final class ResponseSink {
    let limit: Int
    var bytes: [UInt8] = []
    var isCut = false

    init(limit: Int) { self.limit = limit }

    /// Keeps what fits; false (stop the transfer) once the limit is passed.
    func append(_ chunk: UnsafeRawBufferPointer) -> Bool {
        let room = limit - bytes.count
        if chunk.count > room {
            bytes += chunk.prefix(room)
            isCut = true
            return false
        }
        bytes += chunk
        return true
    }
}
