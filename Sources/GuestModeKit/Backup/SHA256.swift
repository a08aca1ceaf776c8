/// SHA-256 (FIPS 180-4), streamed: archive entries are hashed block by block
/// as they are written or read, so no entry is ever held whole for hashing.
/// Written here rather than pulled in as a dependency because the engine
/// needs nothing else from a crypto library.
struct SHA256 {
    private static let roundConstants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
    )
    private var pending: [UInt8] = []
    private var byteCount: UInt64 = 0

    init() { pending.reserveCapacity(64) }

    mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let handled: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            update(UnsafeRawBufferPointer(buffer))
        }
        if handled == nil { update(Array(bytes)) }
    }

    mutating func update(_ buffer: UnsafeRawBufferPointer) {
        guard buffer.count > 0 else { return }
        byteCount &+= UInt64(buffer.count)
        var offset = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, buffer.count)
            pending.append(contentsOf: buffer[0..<take])
            offset = take
            guard pending.count == 64 else { return }
            pending.withUnsafeBytes { compress($0.baseAddress!) }
            pending.removeAll(keepingCapacity: true)
        }
        while buffer.count - offset >= 64 {
            compress(buffer.baseAddress! + offset)
            offset += 64
        }
        if offset < buffer.count { pending.append(contentsOf: buffer[offset...]) }
    }

    /// The digest; the hasher is spent afterwards.
    mutating func finalize() -> [UInt8] {
        let bitLength = byteCount &* 8
        var padding: [UInt8] = [0x80]
        let used = (pending.count + 1) % 64
        padding += Array(repeating: 0, count: used <= 56 ? 56 - used : 120 - used)
        for shift in stride(from: 56, through: 0, by: -8) { padding.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        let length = byteCount
        padding.withUnsafeBytes { update($0) }
        byteCount = length
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7] {
            digest += [UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word)]
        }
        return digest
    }

    mutating func finalizeHex() -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in finalize() { text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]] }
        return String(decoding: text, as: UTF8.self)
    }

    static func hex<Bytes: Sequence>(of bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalizeHex()
    }

    private mutating func compress(_ block: UnsafeRawPointer) {
        var schedule = (
            UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0),
            UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0)
        )
        withUnsafeMutableBytes(of: &schedule) { raw in
            let words = raw.bindMemory(to: UInt32.self)
            for index in 0..<16 {
                words[index] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
            }
            var (a, b, c, d, e, f, g, h) = state
            Self.roundConstants.withUnsafeBufferPointer { constants in
                for round in 0..<64 {
                    let word: UInt32
                    if round < 16 {
                        word = words[round]
                    } else {
                        let fifteen = words[(round - 15) & 15]
                        let two = words[(round - 2) & 15]
                        let s0 = fifteen.rotatedRight(7) ^ fifteen.rotatedRight(18) ^ (fifteen >> 3)
                        let s1 = two.rotatedRight(17) ^ two.rotatedRight(19) ^ (two >> 10)
                        word = words[round & 15] &+ s0 &+ words[(round - 7) & 15] &+ s1
                        words[round & 15] = word
                    }
                    let sum1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                    let choice = (e & f) ^ (~e & g)
                    let temp1 = h &+ sum1 &+ choice &+ constants[round] &+ word
                    let sum0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    let temp2 = sum0 &+ majority
                    h = g; g = f; f = e; e = d &+ temp1
                    d = c; c = b; b = a; a = temp1 &+ temp2
                }
            }
            state = (
                state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d,
                state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h
            )
        }
    }
}

private extension UInt32 {
    /// Masking shifts: the smart shifts would add an overshift branch to every round.
    @inline(__always) func rotatedRight(_ count: UInt32) -> UInt32 { (self &>> count) | (self &<< (32 &- count)) }
}
