import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

private let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().appendingPathComponent("Fixtures/archives")
private let clock = Timestamp.parse("2026-11-22T09:00:00Z") ?? .distantPast

private func engine() throws -> GuestMode {
    try GuestMode.inMemory(
        profileText: try backupFixtureProfile(), origin: "habits.yaml", now: clock)
}

private func scratch() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "guestmode-signing-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// Everything a reader takes from an archive, to tell a flip that changed
/// nothing the reader uses (a gzip header's mtime) from one that did.
private struct Reading: Equatable {
    var header: BackupHeader
    var manifest: BackupManifest
    var signature: BackupSignature?
    var rows: [String]
}

private func reading(_ path: String, keys: BackupKeys) -> Reading? {
    var rows: [String] = []
    guard
        let walk = try? ArchiveWalk.read(
            path: path, depth: .full, limits: .standard, keys: keys,
            onRow: { table, row, _ in
                rows.append("\(table.name) \(zip(row.columns, row.values).sorted { $0.0 < $1.0 })")
            })
    else { return nil }
    return Reading(header: walk.header, manifest: walk.manifest, signature: walk.signature, rows: rows)
}

@Suite struct BackupSigningTests {
    @Test("a signed archive round-trips in full; the same archive seen by another deployment leaves out trust tables")
    func trust() throws {
        let source = try engine()
        _ = try source.importBackup(
            from: fixtures.appendingPathComponent("v1-habits.gmbackup").path, onConflict: .fail, dryRun: false,
            trustUnsigned: true, now: clock)
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = BackupKey.generate()
        let path = directory.appendingPathComponent("all.gmbackup").path
        _ = try source.exportBackup(.all, to: path, format: .tarZstd, now: clock, toolVersion: "test", signingKey: key)

        let trusted = try engine().importBackup(
            from: path, onConflict: .fail, dryRun: true, keys: BackupKeys(deployment: key), now: clock)
        #expect(trusted.signature == .thisDeployment && trusted.skippedTables.isEmpty)
        let other = try engine().importBackup(
            from: path, onConflict: .fail, dryRun: true, keys: BackupKeys(deployment: BackupKey.generate()), now: clock)
        #expect(other.signature == .anotherDeployment)
        #expect(Set(["identities", "meter_usage", "plans"]).isSubset(of: Set(other.skippedTables)))
        #expect(other.rows["identities"] == nil && other.rows["records"] == trusted.rows["records"])
        #expect(other.unlinked == ["u1"])
        let v1 = try engine().importBackup(
            from: fixtures.appendingPathComponent("v1-habits.zip").path, onConflict: .fail, dryRun: true,
            keys: BackupKeys(deployment: key), now: clock)
        #expect(v1.signature == .unsigned && v1.skippedTables.contains("identities"))
    }

    /// Every position with `make sweep` (GUESTMODE_SWEEP_STRIDE=1, a few minutes); `make test` takes every
    /// 11th, a prime, so each run still reaches every region of the archive.
    static let sweepStride =
        ProcessInfo.processInfo.environment["GUESTMODE_SWEEP_STRIDE"].flatMap(Int.init)
        .map { max(1, $0) } ?? 11

    @Test("flipping any single byte of a small archive of each format, or of an encrypted one, is detected")
    func everyByteFlipped() throws {
        let source = try engine()
        _ = try source.importBackup(
            from: fixtures.appendingPathComponent("v1-habits.gmbackup").path, onConflict: .fail, dryRun: false,
            trustUnsigned: true, now: clock)
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = BackupKey.generate()
        let keys = BackupKeys(deployment: key)
        let target = try engine()
        let empty = try BackupRowFixture.export(target.store, guestOwner: target.profile.guestOwner)
        let cases: [(String, ArchiveFormat, BackupEncryption?)] = [
            ("u1.gmbackup", .tarZstd, nil), ("u1.tar.gz", .tarGzip, nil), ("u1.zip", .zip, nil),
            ("u1-encrypted.gmbackup", .tarZstd, .deploymentKey(key)),
        ]
        for (name, format, encryption) in cases {
            let path = directory.appendingPathComponent(name).path
            _ = try source.exportBackup(
                .users(["u1"]), to: path, format: format, now: clock, toolVersion: "test", signingKey: key,
                encryption: encryption)
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            let intact = reading(path, keys: keys)
            #expect(intact != nil)
            let flippedPath = directory.appendingPathComponent("flipped-\(name)").path
            for offset in stride(from: 0, to: original.count, by: Self.sweepStride) {
                var bytes = original
                bytes[offset] ^= 0x01
                try bytes.write(to: URL(fileURLWithPath: flippedPath))
                let verified = try BackupArchive.verify(path: flippedPath, full: true, keys: keys)
                if verified.ok {
                    // Only a byte no reader uses (a gzip header's mtime or OS byte) may flip unnoticed.
                    #expect(
                        reading(flippedPath, keys: keys) == intact, "\(name): flip at \(offset) changed what is read")
                    #expect(encryption == nil, "\(name): flip at \(offset) went unnoticed")
                    continue
                }
                // Import reads the same way verify does; checked at every 8th damaged position to keep the sweep short.
                guard offset % (8 * Self.sweepStride) == 0 else { continue }
                #expect(throws: GuestModeError.self, "\(name): flip at \(offset) imported") {
                    try target.importBackup(from: flippedPath, onConflict: .fail, dryRun: false, keys: keys, now: clock)
                }
            }
            // zip keeps fields no reader uses (local header times, "version made by"), gzip and zstd a few
            // header bits; such flips are allowed only because they change nothing that is read (checked above).
            #expect(try BackupRowFixture.export(target.store, guestOwner: target.profile.guestOwner) == empty)
        }
    }
}
