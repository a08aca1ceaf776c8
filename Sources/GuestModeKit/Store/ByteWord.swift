/// Tests of eight bytes at once ("Bit Twiddling Hacks"), for scans that
/// look for a few bytes in long runs of text: a JSON string's escapes, a
/// COPY cell's. Each test sets the high bit of a byte that matches, and may
/// set it falsely only in a byte above a true match, so a word tested zero
/// holds no match and any other holds one or is looked at byte by byte.
///
/// ```swift
/// let word = ByteWord.load(bytes, at: 0)
/// let clean = ByteWord.bytes(below: 0x20, in: word) | ByteWord.bytes(equalTo: 0x5C, in: word) == 0
/// ```
package enum ByteWord {
    /// The eight bytes of `bytes` from `offset`, the first in the lowest byte; `offset + 8` must be within it.
    package static func load(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(bytes.baseAddress! + offset).loadUnaligned(as: UInt64.self))
    }

    /// The high bit of each byte of `word` below `limit` (at most 0x80).
    package static func bytes(below limit: UInt8, in word: UInt64) -> UInt64 {
        (word &- 0x0101_0101_0101_0101 &* UInt64(limit)) & ~word & 0x8080_8080_8080_8080
    }

    /// The high bit of each byte of `word` equal to `byte`.
    package static func bytes(equalTo byte: UInt8, in word: UInt64) -> UInt64 {
        bytes(below: 1, in: word ^ (0x0101_0101_0101_0101 &* UInt64(byte)))
    }

    /// The offset of the first byte of `bytes` from `start` that is a control
    /// character (below 0x20), `first` or `second`; `bytes.count` when none is.
    /// A word's lowest flagged byte is always a true match, so the scan needs
    /// no second look at the word it stops in. The scan of a whole text is
    /// here, not in the caller's module, which would call each test a word.
    package static func firstControl(
        orEither first: UInt8, _ second: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int
    ) -> Int {
        guard let base = bytes.baseAddress else { return bytes.count }
        let firstRepeated = 0x0101_0101_0101_0101 &* UInt64(first)
        let secondRepeated = 0x0101_0101_0101_0101 &* UInt64(second)
        var offset = start
        while bytes.count - offset >= 8 {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self))
            let found =
                self.bytes(below: 0x20, in: word) | self.bytes(below: 1, in: word ^ firstRepeated)
                | self.bytes(below: 1, in: word ^ secondRepeated)
            if found != 0 { return offset + found.trailingZeroBitCount / 8 }
            offset += 8
        }
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte < 0x20 || byte == first || byte == second { return offset }
            offset += 1
        }
        return bytes.count
    }

    /// Whether `bytes` holds a control character (below 0x20) or `byte`.
    package static func mayContain(controlOr byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        firstControl(orEither: byte, byte, in: bytes, from: 0) < bytes.count
    }
}
