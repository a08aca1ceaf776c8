import Foundation
import GuestModeKit

/// What a layout walker found wrong, before it is worded for an archive path.
enum LayoutProblem: Error, Equatable {
    /// Data guestmode never writes (hostile_archive).
    case refused(String)
    /// Bytes that do not parse (damaged_archive).
    case damaged(String)
}

/// Follows a tar stream block by block, as libarchive will read it, so every
/// decompressed byte is accounted for: each 512-byte header must be a ustar
/// header of a regular file (or of a link, directory or device, which the
/// reader then refuses with its own message), or a pax header describing the
/// next one; its data and padding follow; then the end-of-archive marker and
/// nothing but zeros. libarchive itself reads past pax global headers, GNU
/// volume labels and long-name headers without reporting them, so bytes
/// hidden there would pass a verification that checks only the entries.
struct TarLayout {
    private enum State {
        case header
        /// The first `keep` of the remaining bytes are a pax header's records.
        case body(remaining: Int64, keep: Int64, pax: Bool)
        case end
    }

    /// The pax keywords that describe the next entry in ways libarchive uses
    /// (what Python's tarfile and other pax writers emit for long names,
    /// large sizes and exact times); any other keyword is data outside the
    /// entries.
    static let paxKeywords: Set<String> = [
        "path", "linkpath", "size", "mtime", "atime", "ctime", "uid", "gid", "uname", "gname",
    ]
    static let maximumPaxSize: Int64 = 64 << 10
    static let notTar =
        "does not hold a tar archive inside its compression (compressed twice, or not a guestmode backup)"

    private var state = State.header
    private var block: [UInt8] = []
    private var pax: [UInt8] = []
    /// The size a pax header gave the next entry.
    private var paxSize: Int64?
    private var afterPax = false
    private var headerOffset: Int64 = 0
    private var headers = 0
    /// Decompressed bytes seen so far.
    private(set) var offset: Int64 = 0

    init() { block.reserveCapacity(512) }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(LayoutProblem) {
        var index = 0
        while index < bytes.count {
            switch state {
            case .header:
                let take = min(512 - block.count, bytes.count - index)
                if block.isEmpty { headerOffset = offset + Int64(index) }
                block.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<index + take]))
                index += take
                if block.count == 512 {
                    try header(block)
                    block.removeAll(keepingCapacity: true)
                }
            case .body(let remaining, let keep, let isPax):
                let take = Int(min(remaining, Int64(bytes.count - index)))
                if keep > 0 {
                    let kept = Int(min(keep, Int64(take)))
                    pax.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<index + kept]))
                }
                index += take
                let left = remaining - Int64(take)
                state = left == 0 ? .header : .body(remaining: left, keep: max(keep - Int64(take), 0), pax: isPax)
                if left == 0, isPax { try records() }
            case .end:
                if let found = bytes[index...].firstIndex(where: { $0 != 0 }) {
                    throw .refused(
                        "has data after the end of its tar archive, at byte \(offset + Int64(found)) of the tar stream (two archives concatenated?)"
                    )
                }
                index = bytes.count
            }
        }
        offset += Int64(bytes.count)
    }

    /// The stream ended: it must have ended after the end-of-archive marker.
    func finish() throws(LayoutProblem) {
        guard case .end = state else {
            throw headers == 0
                ? .refused(Self.notTar) : .damaged("ends before its tar end-of-archive marker (it is truncated)")
        }
    }

    private mutating func header(_ header: [UInt8]) throws(LayoutProblem) {
        if header.allSatisfy({ $0 == 0 }) {
            if afterPax { throw .damaged("has a pax header at byte \(headerOffset) that describes no entry") }
            if headers == 0 { throw .refused(Self.notTar) }
            state = .end
            return
        }
        guard Self.checksumHolds(header), header[257..<262].elementsEqual("ustar".utf8) else {
            // The first block decides whether this is tar at all: a compressed
            // stream inside the compressed stream (as in libarchive's
            // test_read_filter_gzip_recursive) ends here.
            if headers == 0 { throw .refused(Self.notTar) }
            throw .damaged("has a damaged tar header at byte \(headerOffset) of the tar stream")
        }
        headers += 1
        let type = header[156]
        switch type {
        case UInt8(ascii: "0"), 0, UInt8(ascii: "7"), UInt8(ascii: "1")...UInt8(ascii: "6"):
            // Links, directories and devices are refused by the reader with their own message.
            let size: Int64
            if let paxSize { size = paxSize } else { size = try Self.size(header, at: headerOffset) }
            paxSize = nil
            afterPax = false
            try skip(size, keep: 0)
        case UInt8(ascii: "x"):
            if afterPax { throw .refused("has two pax headers in a row at byte \(headerOffset) of the tar stream") }
            let size = try Self.size(header, at: headerOffset)
            guard size <= Self.maximumPaxSize else {
                throw .refused(
                    "has a pax header of \(size) bytes at byte \(headerOffset) of the tar stream, more than the \(Self.maximumPaxSize) guestmode reads"
                )
            }
            afterPax = true
            pax.removeAll(keepingCapacity: true)
            try skip(size, keep: size)
        default:
            throw .refused(
                "has \(Self.describe(type)) at byte \(headerOffset) of the tar stream; a guestmode backup holds nothing but its listed entries"
            )
        }
    }

    private mutating func skip(_ size: Int64, keep: Int64) throws(LayoutProblem) {
        guard size <= Int64.max - 511 else { throw .damaged("has a tar entry too large to be real") }
        let padded = (size + 511) / 512 * 512
        state = padded == 0 ? .header : .body(remaining: padded, keep: keep, pax: keep > 0)
    }

    /// Parses the pax records (`<length> <keyword>=<value>\n`) just read.
    private mutating func records() throws(LayoutProblem) {
        var index = 0
        while index < pax.count {
            var length = 0
            var cursor = index
            while cursor < pax.count, (48...57).contains(pax[cursor]), length < 1 << 20 {
                length = length * 10 + Int(pax[cursor] - 48)
                cursor += 1
            }
            guard cursor < pax.count, pax[cursor] == UInt8(ascii: " "), length > cursor - index + 1,
                index + length <= pax.count, pax[index + length - 1] == UInt8(ascii: "\n"),
                let equals = pax[(cursor + 1)..<(index + length)].firstIndex(of: UInt8(ascii: "="))
            else {
                throw .damaged("has a malformed pax header before byte \(offset) of the tar stream")
            }
            let keyword = String(decoding: pax[(cursor + 1)..<equals], as: UTF8.self)
            guard Self.paxKeywords.contains(keyword) else {
                throw .refused(
                    "has a pax header with the keyword '\(keyword.prefix(40))' before byte \(offset) of the tar stream; a guestmode backup holds nothing but its listed entries"
                )
            }
            if keyword == "size" {
                let value = String(decoding: pax[(equals + 1)..<(index + length - 1)], as: UTF8.self)
                guard let size = Int64(value), size >= 0 else {
                    throw .damaged("has a pax size '\(value.prefix(40))' that is not a size")
                }
                paxSize = size
            }
            index += length
        }
        pax.removeAll(keepingCapacity: true)
    }

    /// A header's size field: octal digits, or GNU base-256 with the high bit set.
    static func size(_ header: [UInt8], at offset: Int64) throws(LayoutProblem) -> Int64 {
        let field = header[124..<136]
        if field[124] & 0x80 != 0 {
            guard field[124] == 0x80, field[125..<128].allSatisfy({ $0 == 0 }), field[128] < 0x80 else {
                throw .damaged("has a tar header at byte \(offset) with a size too large to be real")
            }
            return field[128..<136].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        }
        var value: Int64 = 0
        for byte in field.drop(while: { $0 == UInt8(ascii: " ") }) {
            if byte == 0 || byte == UInt8(ascii: " ") { break }
            guard (48...55).contains(byte), value < 1 << 58 else {
                throw .damaged("has a tar header at byte \(offset) whose size is not an octal number")
            }
            value = value << 3 | Int64(byte - 48)
        }
        return value
    }

    /// The header checksum: the sum of its bytes with the checksum field read as spaces.
    static func checksumHolds(_ header: [UInt8]) -> Bool {
        var stored = 0
        var seenDigit = false
        for byte in header[148..<156] {
            if byte == UInt8(ascii: " ") || byte == 0 {
                if seenDigit { break } else { continue }
            }
            guard (48...55).contains(byte) else { return false }
            stored = stored << 3 | Int(byte - 48)
            seenDigit = true
        }
        guard seenDigit else { return false }
        var unsigned = 0
        var signed = 0
        for (index, byte) in header.enumerated() {
            let value = (148..<156).contains(index) ? UInt8(ascii: " ") : byte
            unsigned += Int(value)
            signed += Int(Int8(bitPattern: value))
        }
        return stored == unsigned || stored == signed
    }

    static func describe(_ type: UInt8) -> String {
        switch type {
        case UInt8(ascii: "g"): "a pax global header"
        case UInt8(ascii: "V"): "a GNU volume label"
        case UInt8(ascii: "L"), UInt8(ascii: "K"): "a GNU long-name header"
        case UInt8(ascii: "S"): "a GNU sparse file"
        case UInt8(ascii: "M"): "a GNU multi-volume continuation"
        case 0x21...0x7E: "a tar header of type '\(Character(Unicode.Scalar(type)))'"
        default: "a tar header of type \(type)"
        }
    }
}

/// Follows a zstd stream frame by frame and block by block without
/// decompressing it (RFC 8878 §3.1), so every compressed byte is part of a
/// zstd frame: skippable frames (which decoders pass over in silence) and
/// anything after the last frame are refused.
struct ZstdFrames {
    private enum State {
        case magic
        case descriptor
        case skip(Int, then: Next)
        case blockHeader
    }

    private enum Next {
        case blockHeader
        case frameEnd
    }

    private var state = State.magic
    private var pending: [UInt8] = []
    private var checksum = false
    private var lastBlock = false
    private(set) var frames = 0
    private var frameOffset: Int64 = 0
    /// Compressed bytes seen so far.
    private(set) var offset: Int64 = 0

    static let magic: UInt32 = 0xFD2F_B528

    mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(LayoutProblem) {
        var index = 0
        while index < bytes.count {
            switch state {
            case .magic:
                if pending.isEmpty { frameOffset = offset + Int64(index) }
                guard gather(4, from: bytes, at: &index) else { continue }
                let word = pending.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                pending.removeAll(keepingCapacity: true)
                if word == Self.magic, frames == 0 {
                    state = .descriptor
                } else if word == Self.magic {
                    // guestmode writes one frame; a second one is a second stream appended.
                    throw .refused(
                        "has a second zstd frame at byte \(frameOffset), after the end of its zstd stream; a guestmode backup holds nothing but its listed entries"
                    )
                } else if word & 0xFFFF_FFF0 == 0x184D_2A50 {
                    throw .refused(
                        "has a zstd skippable frame at byte \(frameOffset); a guestmode backup holds nothing but its listed entries"
                    )
                } else {
                    throw .refused(
                        "has data after the end of its zstd stream, at byte \(frameOffset); a guestmode backup holds nothing but its listed entries"
                    )
                }
            case .descriptor:
                let descriptor = bytes[index]
                index += 1
                guard descriptor & 0x08 == 0 else { throw .damaged("has a damaged zstd frame at byte \(frameOffset)") }
                let singleSegment = descriptor & 0x20 != 0
                checksum = descriptor & 0x04 != 0
                let dictionary = [0, 1, 2, 4][Int(descriptor & 0x03)]
                let contentSize = [singleSegment ? 1 : 0, 2, 4, 8][Int(descriptor >> 6)]
                let rest = (singleSegment ? 0 : 1) + dictionary + contentSize
                state = rest == 0 ? .blockHeader : .skip(rest, then: .blockHeader)
            case .skip(let count, let next):
                let take = min(count, bytes.count - index)
                index += take
                if take < count {
                    state = .skip(count - take, then: next)
                } else if case .blockHeader = next {
                    state = .blockHeader
                } else {
                    frames += 1
                    state = .magic
                }
            case .blockHeader:
                guard gather(3, from: bytes, at: &index) else { continue }
                let word = Int(pending[0]) | Int(pending[1]) << 8 | Int(pending[2]) << 16
                pending.removeAll(keepingCapacity: true)
                let last = word & 1 != 0
                let type = (word >> 1) & 3
                let size = word >> 3
                guard type != 3, size <= 128 << 10 else {
                    throw .damaged("has a damaged zstd block in the frame at byte \(frameOffset)")
                }
                let body = type == 1 ? 1 : size
                let next: Next = last ? .frameEnd : .blockHeader
                let after = last && checksum ? 4 : 0
                if last {
                    state = .skip(body + after, then: .frameEnd)
                    if body + after == 0 {
                        frames += 1
                        state = .magic
                    }
                } else {
                    state = body == 0 ? .blockHeader : .skip(body, then: next)
                }
            }
        }
        offset += Int64(bytes.count)
    }

    /// Collects `count` bytes of a field that may be split across chunks.
    private mutating func gather(_ count: Int, from bytes: UnsafeRawBufferPointer, at index: inout Int) -> Bool {
        let take = min(count - pending.count, bytes.count - index)
        pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<index + take]))
        index += take
        return pending.count == count
    }

    /// The input ended: it must have ended after a whole frame.
    func finish() throws(LayoutProblem) {
        guard case .magic = state, pending.isEmpty, frames > 0 else {
            throw .damaged("ends in the middle of its zstd stream (it is truncated)")
        }
    }
}

/// Checks that a zip archive's entries tile the file: the first local header
/// at byte 0, each entry's header, name, extra fields, data and data
/// descriptor followed at once by the next, the last followed by the central
/// directory, which lists each exactly once and ends at the end-of-central-
/// directory record (checked by the reader: no comment, nothing after it).
/// libarchive reads entries through the central directory, so bytes between
/// entries, before the first one or in entry comments would otherwise pass.
/// Extra fields are limited to the ones zip writers use for times, owners and
/// 64-bit sizes. Zip64 archives (which guestmode never writes) are not walked.
enum ZipLayout {
    static let knownExtras: Set<UInt16> = [0x0001, 0x000A, 0x5455, 0x5855, 0x7875]
    static let maximumExtra = 256

    private struct Member {
        var offset: Int64
        var compressedSize: Int64
        var name: String
    }

    /// Why the archive holds bytes outside its entries, or nil when it does not.
    static func problem(path: String, descriptor: Int32?, limits: ArchiveLimits) throws -> String? {
        let file: Int32 = descriptor ?? open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else {
            throw GuestModeError(.archiveUnreadable, "cannot open the archive '\(path)' for reading")
        }
        defer { if descriptor == nil { close(file) } }
        var status = stat()
        guard fstat(file, &status) == 0, status.st_size >= 22 else { return nil }
        let size = Int64(status.st_size)
        func bytes(_ count: Int, at offset: Int64) -> [UInt8]? {
            guard count >= 0, offset >= 0, offset + Int64(count) <= size else { return nil }
            var buffer = [UInt8](repeating: 0, count: count)
            let read = buffer.withUnsafeMutableBytes { pread(file, $0.baseAddress, count, off_t(offset)) }
            return read == count ? buffer : nil
        }
        func word(_ buffer: [UInt8], _ at: Int, _ width: Int) -> Int64 {
            buffer[at..<at + width].reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
        }
        guard let end = bytes(22, at: size - 22) else { return nil }
        let count = Int(word(end, 10, 2))
        let directorySize = word(end, 12, 4)
        let directoryOffset = word(end, 16, 4)
        if directoryOffset == 0xFFFF_FFFF || directorySize == 0xFFFF_FFFF || word(end, 8, 2) == 0xFFFF { return nil }
        guard count <= limits.maximumEntries, directorySize <= Int64(count) * Int64(46 + 0xFFFF * 3),
            let directory = bytes(Int(directorySize), at: directoryOffset)
        else { return "has a central directory that does not fit the file" }

        var members: [Member] = []
        var cursor = 0
        while cursor < directory.count {
            guard cursor + 46 <= directory.count, word(directory, cursor, 4) == 0x0201_4B50 else {
                return "has a damaged central directory at byte \(directoryOffset + Int64(cursor))"
            }
            let nameLength = Int(word(directory, cursor + 28, 2))
            let extraLength = Int(word(directory, cursor + 30, 2))
            let commentLength = Int(word(directory, cursor + 32, 2))
            guard cursor + 46 + nameLength + extraLength + commentLength <= directory.count else {
                return "has a damaged central directory at byte \(directoryOffset + Int64(cursor))"
            }
            let name = String(decoding: directory[cursor + 46..<cursor + 46 + nameLength], as: UTF8.self)
            if commentLength > 0 { return "has a comment on its entry '\(name)'" }
            if let problem = extraProblem(
                Array(directory[cursor + 46 + nameLength..<cursor + 46 + nameLength + extraLength]))
            {
                return "has \(problem) in the central directory entry of '\(name)'"
            }
            let compressed = word(directory, cursor + 20, 4)
            let offset = word(directory, cursor + 42, 4)
            if compressed == 0xFFFF_FFFF || offset == 0xFFFF_FFFF { return nil }
            members.append(Member(offset: offset, compressedSize: compressed, name: name))
            cursor += 46 + nameLength + extraLength + commentLength
        }
        guard members.count == count else {
            return "has \(members.count) entries in its central directory but says \(count)"
        }
        var expected: Int64 = 0
        for member in members.sorted(by: { $0.offset < $1.offset }) {
            guard member.offset == expected else {
                return member.offset > expected
                    ? "has \(member.offset - expected) bytes that belong to no entry at byte \(expected)"
                    : "has entries that overlap at byte \(member.offset)"
            }
            guard let local = bytes(30, at: member.offset), word(local, 0, 4) == 0x0403_4B50 else {
                return "has no local header for '\(member.name)' at byte \(member.offset)"
            }
            let flags = word(local, 6, 2)
            let nameLength = Int(word(local, 26, 2))
            let extraLength = Int(word(local, 28, 2))
            guard let extra = bytes(extraLength, at: member.offset + 30 + Int64(nameLength)) else {
                return "has a damaged local header for '\(member.name)'"
            }
            if let problem = extraProblem(extra) { return "has \(problem) in the local header of '\(member.name)'" }
            var next = member.offset + 30 + Int64(nameLength + extraLength) + member.compressedSize
            if flags & 0x08 != 0 {
                // A data descriptor: an optional signature, the CRC, and both sizes (8 bytes each with zip64).
                let wide = extraIDs(extra).contains(0x0001)
                let signed = bytes(4, at: next).map { word($0, 0, 4) == 0x0807_4B50 } ?? false
                next += (signed ? 4 : 0) + 4 + (wide ? 16 : 8)
            }
            expected = next
        }
        guard expected == directoryOffset else {
            return expected < directoryOffset
                ? "has \(directoryOffset - expected) bytes that belong to no entry at byte \(expected)"
                : "has entries that overlap its central directory"
        }
        return nil
    }

    private static func extraIDs(_ extra: [UInt8]) -> [UInt16] {
        var ids: [UInt16] = []
        var index = 0
        while index + 4 <= extra.count {
            ids.append(UInt16(extra[index]) | UInt16(extra[index + 1]) << 8)
            index += 4 + (Int(extra[index + 2]) | Int(extra[index + 3]) << 8)
        }
        return ids
    }

    /// Extra fields must be known kinds, well formed and small.
    private static func extraProblem(_ extra: [UInt8]) -> String? {
        guard extra.count <= maximumExtra else { return "\(extra.count) bytes of extra fields" }
        var index = 0
        while index < extra.count {
            guard index + 4 <= extra.count else { return "a damaged extra field" }
            let id = UInt16(extra[index]) | UInt16(extra[index + 1]) << 8
            let length = Int(extra[index + 2]) | Int(extra[index + 3]) << 8
            guard index + 4 + length <= extra.count else { return "a damaged extra field" }
            guard knownExtras.contains(id) else { return String(format: "an extra field of unknown kind 0x%04x", id) }
            index += 4 + length
        }
        return nil
    }
}
