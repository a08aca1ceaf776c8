import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit

/// The layout walkers see a stream in whatever pieces the decompressor hands
/// over; headers and fields split across pieces must read the same as whole.
@Suite struct ArchiveLayoutTests {
    /// An archive written by guestmode's own writer, entries of awkward sizes.
    static func archive(_ format: ArchiveFormat) throws -> (path: String, bytes: [UInt8]) {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("guestmode-layout-\(UUID().uuidString).\(format.fileExtension)").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(descriptor) }
        try ArchiveWriter.write(to: descriptor, path: path, format: format, level: nil) { writer in
            for (index, size) in [0, 1, 511, 512, 513, 70_000, 300_000].enumerated() {
                let contents = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
                try contents.withUnsafeBytes {
                    try writer.addEntry(name: "data/e/\(index).ndjson", contents: $0, modified: Date())
                }
            }
        }
        return (path, [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// The decompressed tar stream, as the reader's source hands it over.
    static func tarStream(_ path: String, _ format: ArchiveFormat) throws -> [UInt8] {
        let source = try TarSource(path: path, descriptor: nil, format: format, limits: .standard)
        var bytes: [UInt8] = []
        while let chunk = try source.next() { bytes.append(contentsOf: chunk) }
        return bytes
    }

    static func feedTar(_ bytes: [UInt8], pieces random: inout SplitMix64) throws {
        var layout = TarLayout()
        var offset = 0
        while offset < bytes.count {
            let size = min(Int(random.next() % 700) + 1, bytes.count - offset)
            try bytes[offset..<offset + size].withUnsafeBytes { try layout.feed($0) }
            offset += size
        }
        try layout.finish()
    }

    static func feedZstd(_ bytes: [UInt8], pieces random: inout SplitMix64) throws {
        var frames = ZstdFrames()
        var offset = 0
        while offset < bytes.count {
            let size = min(Int(random.next() % 9) + 1, bytes.count - offset)
            try bytes[offset..<offset + size].withUnsafeBytes { try frames.feed($0) }
            offset += size
        }
        try frames.finish()
    }

    @Test("a tar stream reads the same in pieces of any size, and a global header is refused in any")
    func tarInPieces() throws {
        for format in [ArchiveFormat.tarGzip, .tarZstd] {
            let (path, _) = try Self.archive(format)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let tar = try Self.tarStream(path, format)
            var random = SplitMix64(state: 18)
            for _ in 0..<40 { try Self.feedTar(tar, pieces: &random) }
            // A pax global header after the first entry (a header block with type 'g' and a valid checksum).
            var global = [UInt8](tar[0..<512])
            global[156] = UInt8(ascii: "g")
            global.replaceSubrange(124..<136, with: Array("00000000000\0".utf8))
            global.replaceSubrange(148..<156, with: Array("        ".utf8))
            let sum = global.reduce(0) { $0 + Int($1) }
            global.replaceSubrange(148..<156, with: Array(String(format: "%06o\0 ", sum).utf8))
            let hostile = Array(tar[0..<512]) + global + Array(tar[512...])
            for _ in 0..<20 {
                #expect {
                    try Self.feedTar(hostile, pieces: &random)
                } throws: { error in
                    guard case LayoutProblem.refused(let problem) = error else { return false }
                    return problem.contains("pax global header at byte 512")
                }
            }
            #expect(throws: LayoutProblem.self) { try Self.feedTar(tar + [1], pieces: &random) }
            #expect(throws: LayoutProblem.self) { try Self.feedTar(Array(tar.dropLast(1024)), pieces: &random) }
        }
    }

    @Test("a zstd stream reads the same in pieces of any size; skippable frames and cut streams are refused")
    func zstdInPieces() throws {
        let (path, bytes) = try Self.archive(.tarZstd)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var random = SplitMix64(state: 18)
        for _ in 0..<40 { try Self.feedZstd(bytes, pieces: &random) }
        let skippable: [UInt8] = [0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 1, 2, 3, 4]
        for hostile in [bytes + skippable, skippable + bytes, bytes + bytes, Array(bytes.dropLast(3)), bytes + [0]] {
            #expect(throws: LayoutProblem.self) { try Self.feedZstd(hostile, pieces: &random) }
        }
    }
}
