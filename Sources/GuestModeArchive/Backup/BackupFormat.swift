import Foundation
import GuestModeKit

/// Backup archive format (guestmode-backup(1)): `header.json` first, the users' rows as
/// NDJSON chunks `data/<table>/<n>.ndjson`, `manifest.json`, and (format 2)
/// `signature.json` last: the deployment's HMAC over header and manifest.
enum BackupFormat {
    /// 1: unsigned. 2: `signature.json` after the manifest.
    static let currentVersion = 2
    static let formatName = "guestmode-backup"
    static let headerName = "header.json"
    static let manifestName = "manifest.json"
    static let signatureName = BackupSignature.entryName
    /// Data entries are cut at this size so neither side holds a table in memory.
    static let chunkTarget = 4 << 20

    static func dataEntryName(table: String, index: Int) -> String {
        "data/\(table)/\(String(format: "%06d", index)).ndjson"
    }

    /// The table a data entry holds, or nil for a name this format does not use.
    static func table(forEntry name: String) -> BackupTable? {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "data", parts[2].hasSuffix(".ndjson") else { return nil }
        let number = parts[2].dropLast(".ndjson".count)
        guard number.count == 6, number.allSatisfy(\.isASCII), number.allSatisfy(\.isNumber) else { return nil }
        return BackupTable.named(String(parts[1]))
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}

/// `header.json`: what the archive holds, readable without the data.
package struct BackupHeader: Codable, Sendable, Equatable {
    package struct ProfileReference: Codable, Sendable, Equatable {
        package var name: String
        package var version: Int
    }

    package var format: String
    package var formatVersion: Int
    package var toolVersion: String
    package var profile: ProfileReference
    package var users: [String]
    /// Set in whole-store archives that also carry the records written
    /// before any user existed (owned by the profile's guest owner).
    package var guestOwner: String?
    package var created: String
    /// Format 2: the id of the deployment key that signs the archive in
    /// signature.json, or nil for an unsigned archive. In the header so the
    /// manifest's hash covers it and a damaged signature.json is detected.
    package var signingKeyId: String?
}

/// Writes `header.json` with its user list streamed, so a whole-store
/// export never holds every user id at once. Everything but the list is
/// `BackupFormat.encoder()`'s encoding of the header, and the list is
/// spelled as that encoder spells one ("users" sorts last among the keys),
/// so the bytes are exactly those of the header holding every user: readers
/// (and archives written before) see no difference.
struct StreamedHeader {
    /// The encoded header up to its (empty) user list.
    private let head: [UInt8]
    /// How the encoder ends a header whose user list is empty.
    private static let emptyListEnd = Array("[\n\n  ]\n}".utf8)
    /// Pieces handed on at about this size.
    static let pieceSize = 64 << 10

    /// `header` with its user list left empty: the users come from `write`.
    init(_ header: BackupHeader) throws {
        var header = header
        header.users = []
        let bytes = Array(try BackupFormat.encoder().encode(header))
        guard bytes.count > Self.emptyListEnd.count,
            bytes.suffix(Self.emptyListEnd.count).elementsEqual(Self.emptyListEnd)
        else {
            throw GuestModeError(
                .internalFailure,
                "header.json does not end with its user list as this build expects; it cannot be streamed")
        }
        head = Array(bytes.dropLast(Self.emptyListEnd.count))
    }

    /// Calls `emit` with the bytes of header.json in order, in pieces of
    /// about `pieceSize`, taking the users from the snapshot's `forEachUser`.
    /// Returns how many users it wrote.
    @discardableResult
    func write(users snapshot: BackupRowSnapshot, _ emit: ([UInt8]) throws -> Void) throws -> Int {
        var buffer = head
        buffer.reserveCapacity(Self.pieceSize + (4 << 10))
        buffer.append(UInt8(ascii: "["))
        var count = 0
        try snapshot.forEachUser { user in
            buffer += (count == 0 ? "\n    " : ",\n    ").utf8
            RowEncoder.appendString(user, to: &buffer, likeJSONEncoder: true)
            count += 1
            if buffer.count >= Self.pieceSize {
                try emit(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        buffer += (count == 0 ? "\n\n  ]\n}" : "\n  ]\n}").utf8
        try emit(buffer)
        return count
    }
}

/// `manifest.json`: the size and SHA-256 of every other entry and the rows per table.
package struct BackupManifest: Codable, Sendable, Equatable {
    package struct Entry: Codable, Sendable, Equatable {
        package var name: String
        package var size: Int64
        package var sha256: String
        package var table: String?
        package var rows: Int?
    }

    package var formatVersion: Int
    package var entries: [Entry]
    package var tables: [String: Int]
}

/// The bytes of one data entry while its rows are written: appended through
/// a pointer, since `Array`'s `append` checks capacity and uniqueness for
/// every byte and run of bytes, which was a sixth of an export's instructions.
final class RowBuffer {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private(set) var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The bytes written, valid until the next change.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Makes room for `extra` more bytes: after it, up to `extra` bytes may
    /// be written at `base + count` before `advance(by:)`.
    @inline(__always) func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    private func grow(to needed: Int) {
        let larger = max(needed, capacity * 2)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
        moved.update(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = larger
    }

    @inline(__always) func advance(by written: Int) { count += written }

    func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let start = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (base + count).update(from: start, count: bytes.count)
        count += bytes.count
    }

    func append(_ bytes: [UInt8]) { bytes.withUnsafeBufferPointer { append($0) } }

    func removeAll() { count = 0 }
}

/// Appends rows to an NDJSON buffer. Hand-written because it runs once per
/// exported row and the generic encoders allocate far more per row.
enum RowEncoder {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Copies runs of bytes that need no escaping in one go; most strings are one run.
    /// `likeJSONEncoder` also spells backspace and form feed `\b` and `\f`, as
    /// `JSONEncoder` does (rows keep `\u0008` and `\u000c`, as they always had).
    static func appendString(_ string: String, to buffer: inout [UInt8], likeJSONEncoder: Bool = false) {
        var string = string
        string.withUTF8 { appendString($0, to: &buffer, likeJSONEncoder: likeJSONEncoder) }
    }

    /// The same for text already in UTF-8, as a store's row hands it over.
    static func appendString(
        _ bytes: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8], likeJSONEncoder: Bool = false
    ) {
        buffer.append(UInt8(ascii: "\""))
        var start = 0
        for index in 0..<bytes.count {
            let byte = bytes[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            appendEscaped(byte, to: &buffer, likeJSONEncoder: likeJSONEncoder)
            start = index + 1
        }
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        buffer.append(UInt8(ascii: "\""))
    }

    /// The same bytes as ``appendString(_:to:likeJSONEncoder:)`` (rows' spelling), written
    /// byte by byte through the buffer's pointer. Room is made for the rest of
    /// the text and 64 escapes at a time, so a long text never reserves six
    /// times its size.
    static func appendString(_ bytes: UnsafeBufferPointer<UInt8>, to buffer: RowBuffer) {
        buffer.append(UInt8(ascii: "\""))
        var index = 0
        repeat {
            // An escape is at most six bytes in place of one.
            buffer.reserve(bytes.count - index + 64 * 5)
            let start = buffer.base + buffer.count
            var out = start
            var escapes = 0
            while index < bytes.count, escapes < 64 {
                let byte = bytes[index]
                index += 1
                if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                    out.pointee = byte
                    out += 1
                    continue
                }
                escapes += 1
                out.pointee = UInt8(ascii: "\\")
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out[1] = byte
                case UInt8(ascii: "\n"): out[1] = UInt8(ascii: "n")
                case UInt8(ascii: "\r"): out[1] = UInt8(ascii: "r")
                case UInt8(ascii: "\t"): out[1] = UInt8(ascii: "t")
                default:
                    out[1] = UInt8(ascii: "u")
                    out[2] = UInt8(ascii: "0")
                    out[3] = UInt8(ascii: "0")
                    out[4] = hexDigits[Int(byte >> 4)]
                    out[5] = hexDigits[Int(byte & 0x0f)]
                    out += 4
                }
                out += 2
            }
            buffer.advance(by: start.distance(to: out))
        } while index < bytes.count
        buffer.append(UInt8(ascii: "\""))
    }

    private static func appendEscaped(_ byte: UInt8, to buffer: inout [UInt8], likeJSONEncoder: Bool) {
        buffer.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): buffer.append(byte)
        case UInt8(ascii: "\n"): buffer.append(UInt8(ascii: "n"))
        case UInt8(ascii: "\r"): buffer.append(UInt8(ascii: "r"))
        case UInt8(ascii: "\t"): buffer.append(UInt8(ascii: "t"))
        case 0x08 where likeJSONEncoder: buffer.append(UInt8(ascii: "b"))
        case 0x0c where likeJSONEncoder: buffer.append(UInt8(ascii: "f"))
        default:
            buffer.append(contentsOf: "u00".utf8)
            buffer.append(hexDigits[Int(byte >> 4)])
            buffer.append(hexDigits[Int(byte & 0x0f)])
        }
    }

    /// Decimal digits as `String(value)` spells them, without making the string.
    static func appendNumber(_ value: Int64, to buffer: RowBuffer) {
        buffer.reserve(20)
        var out = buffer.base + buffer.count
        if value < 0 {
            out.pointee = UInt8(ascii: "-")
            out += 1
        }
        var magnitude = value.magnitude
        var digits = 1
        var rest = magnitude / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        var place = out + digits
        repeat {
            place -= 1
            place.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        out += digits
        buffer.advance(by: (buffer.base + buffer.count).distance(to: out))
    }

    /// Swift's shortest round-trip spelling, which is valid JSON for finite values.
    static func appendNumber(_ value: Double, to buffer: RowBuffer) {
        var text = value.description
        text.withUTF8 { buffer.append($0) }
    }
}

/// Upgrades an archive written by an older format version to the current
/// one, one version at a time, while it is read. Each step sees the header
/// as JSON and every row, so a step can add, rename or drop fields.
struct ArchiveMigration: Sendable {
    /// The version this step reads; it produces `from + 1`.
    var from: Int
    var upgradeHeader: @Sendable (inout [String: Any]) throws -> Void
    var upgradeRow: @Sendable (_ table: String, _ row: inout BackupRow) throws -> Void
}

struct ArchiveMigrationChain: Sendable {
    var current: Int
    var steps: [ArchiveMigration]

    /// 1 → 2 only added `signature.json`: headers and rows are unchanged, and
    /// a format 1 archive is read as unsigned.
    static let standard = ArchiveMigrationChain(
        current: BackupFormat.currentVersion,
        steps: [ArchiveMigration(from: 1, upgradeHeader: { _ in }, upgradeRow: { _, _ in })])

    /// The steps that take `version` to `current`, refusing versions this
    /// build cannot read.
    func steps(from version: Int, archive path: String) throws -> [ArchiveMigration] {
        if version > current {
            throw GuestModeError(
                .archiveTooNew,
                "the archive '\(path)' uses backup format version \(version), but this guestmode reads versions up to \(current); upgrade guestmode to import it"
            )
        }
        var plan: [ArchiveMigration] = []
        var reached = version
        while reached < current {
            guard let step = steps.first(where: { $0.from == reached }) else {
                throw GuestModeError(
                    .archiveTooOld,
                    "the archive '\(path)' uses backup format version \(version), which this guestmode (format \(current)) cannot upgrade"
                )
            }
            plan.append(step)
            reached += 1
        }
        return plan
    }
}
