import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One request written byte for byte on its own TCP connection, for what curl
/// will not send (invalid UTF-8 or control characters in a header, two
/// headers of one name), and the answer read to the connection's end.
enum RawHTTP {
    /// Sends `head` (lines joined with CR LF; `Connection: close` and the blank line added) and `body`
    /// to `address` (`127.0.0.1:PORT`), from `source` when given; nil when nothing answered within
    /// `timeout` seconds.
    static func exchange(
        _ address: String, head: [[UInt8]], body: [UInt8] = [], from source: String? = nil, timeout: Int = 10
    ) throws -> Server.Reply? {
        var request: [UInt8] = []
        for line in head { request += line + Array("\r\n".utf8) }
        request += Array("Content-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
        guard let bytes = try send(request, to: address, from: source, timeout: timeout) else { return nil }
        return parse(bytes)
    }

    /// The answer's status, headers and body; nil when it is not HTTP.
    static func parse(_ bytes: [UInt8]) -> Server.Reply? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<split.lowerBound].split(separator: "\r\n")
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        guard let status = head.first.flatMap({ $0.split(separator: " ").dropFirst().first }).flatMap({ Int($0) })
        else { return nil }
        return Server.Reply(status: status, headers: fields, body: String(text[split.upperBound...]))
    }

    /// Writes `bytes` and reads until the server closes; nil on a time-out.
    static func send(_ bytes: [UInt8], to address: String, from source: String?, timeout: Int) throws -> [UInt8]? {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw POSIXError(.EINVAL)
        }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = try socketAddress(String(source), port: 0)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
        var remote = try socketAddress(String(address[..<colon]), port: port)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
            if written < 0 && errno == EINTR { continue }
            // The server may answer and close before it read everything (a refused head): read what it said.
            guard written > 0 else { break }
            offset += written
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                answer += buffer[0..<count]
            } else if count == 0 || errno == ECONNRESET {
                return answer
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                return nil
            } else if errno != EINTR {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        }
    }

    private static func socketAddress(_ host: String, port: UInt16) throws -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw POSIXError(.EINVAL) }
        return address
    }
}
