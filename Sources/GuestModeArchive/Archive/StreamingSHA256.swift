import Crypto

/// SHA-256 of archive entries as lowercase hex, through swift-crypto.
/// Entries are hashed chunk by chunk as they are written or read, so no
/// entry is ever held whole for hashing.
package struct StreamingSHA256 {
    private var hasher = SHA256()

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        hasher.update(bufferPointer: bytes)
    }

    /// The digest as 64 lowercase hex digits.
    func finalizeHex() -> String {
        Self.hex(hasher.finalize())
    }

    package static func hex(of bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { hex(of: $0) }
    }

    package static func hex(of bytes: UnsafeRawBufferPointer) -> String {
        var hasher = StreamingSHA256()
        hasher.update(bytes)
        return hasher.finalizeHex()
    }

    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func hex(_ digest: SHA256.Digest) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(SHA256.Digest.byteCount * 2)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
