import Foundation
import GuestModeKit

/// Swift hands the program its arguments and environment as `String`s
/// already repaired: each invalid UTF-8 sequence becomes U+FFFD, so a key,
/// an id, a JSON value or a file name would be stored or opened as a
/// different text than the one given. The raw bytes are checked here,
/// before ArgumentParser sees anything, and a bad argument is refused
/// (65, `invalid_utf8`) naming its position and the option it belongs to.
package enum RawArguments {
    /// Refuses the first argument, or `GUESTMODE_*` environment value, that
    /// is not valid UTF-8.
    package static func requireUTF8() throws {
        let argv = CommandLine.unsafeArgv
        var previous: String?
        for index in 1..<Int(CommandLine.argc) {
            guard let pointer = argv[index] else { continue }
            let bytes = UnsafeBufferPointer(
                start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))
            if String(validating: bytes, as: UTF8.self) == nil {
                throw refusal(of: bytes, what: describe(argumentAt: index, bytes: bytes, after: previous))
            }
            previous = String(decoding: bytes, as: UTF8.self)
        }
        var entry = environ
        while let pointer = entry.pointee {
            let bytes = UnsafeBufferPointer(
                start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))
            if bytes.starts(with: Array("GUESTMODE_".utf8)), String(validating: bytes, as: UTF8.self) == nil {
                let name = String(decoding: bytes.prefix { $0 != UInt8(ascii: "=") }, as: UTF8.self)
                let value = bytes.firstIndex(of: UInt8(ascii: "=")).map { bytes[($0 + 1)...] } ?? bytes[...]
                throw refusal(of: value, what: "the environment variable \(name)")
            }
            entry += 1
        }
    }

    /// "argument 4 (the value of --data=…)", "argument 5 (after --data)", "argument 5": whether
    /// the option before takes a value is ArgumentParser's to know, so it is only named.
    private static func describe(
        argumentAt index: Int, bytes: UnsafeBufferPointer<UInt8>, after previous: String?
    )
        -> String
    {
        if bytes.starts(with: Array("--".utf8)), let equals = bytes.firstIndex(of: UInt8(ascii: "=")) {
            let option = String(decoding: bytes[..<equals], as: UTF8.self)
            return "argument \(index) (the value of \(option))"
        }
        if let previous, previous.hasPrefix("-"), previous != "--", !previous.contains("=") {
            return "argument \(index) (after \(previous))"
        }
        return "argument \(index)"
    }

    private static func refusal(of bytes: some Collection<UInt8>, what: String) -> GuestModeError {
        let offset = StrictJSON.firstInvalidUTF8(in: Data(bytes)) ?? 0
        return GuestModeError(
            .invalidUtf8,
            "\(what) is not valid UTF-8 (\(escaped(bytes)), first bad byte at offset \(offset)); guestmode takes text as UTF-8 and never repairs it: give it in UTF-8"
        )
    }

    /// The bytes as printable text, each byte of an invalid sequence as \xHH,
    /// cut after 60 bytes.
    private static func escaped(_ bytes: some Collection<UInt8>) -> String {
        var text = ""
        var rest = Array(bytes.prefix(60))[...]
        while !rest.isEmpty {
            // The longest valid prefix is kept as text; the byte after it is escaped.
            var length = min(rest.count, 4)
            var decoded: String?
            while length > 0 {
                if let scalar = String(validating: rest.prefix(length), as: UTF8.self), scalar.unicodeScalars.count == 1
                {
                    decoded = scalar
                    break
                }
                length -= 1
            }
            if let decoded, let scalar = decoded.unicodeScalars.first, scalar.value >= 0x20, scalar.value != 0x7F {
                text += decoded
                rest = rest.dropFirst(length)
            } else {
                text += String(format: "\\x%02X", rest.first ?? 0)
                rest = rest.dropFirst()
            }
        }
        return "'" + text + (bytes.count > 60 ? "…" : "") + "'"
    }
}
