import Crypto
import Foundation
import GuestModeKit

/// The deployment's backup key: 32 random bytes that sign every archive the
/// deployment writes (HMAC-SHA-256 over header.json and manifest.json) and,
/// through HKDF, encrypt archives exported with `--encrypt`. Kept as one
/// line of 64 hex digits in a 0600 file beside the store (`<store>.key`) or
/// where `GUESTMODE_BACKUP_KEY_FILE` says, followed by the deployment's
/// earlier keys (`backup key rotate`), one a line: `HEX rotated TIME` or
/// `HEX retired TIME`. Never printed except by `backup key export`.
public struct BackupKey: Sendable, Equatable {
    /// The length of a key in bytes.
    public static let byteCount = 32
    let bytes: [UInt8]
    /// The keys this one replaced, oldest first: a rotated one still vouches for
    /// the archives it signed; a retired one only decrypts what it encrypted.
    package var earlier: [EarlierBackupKey] = []

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// A key this deployment's archives may be signed with: this one or a rotated one, never a retired one.
    func trusted(id: String) -> BackupKey? {
        if id == self.id { return self }
        return earlier.first { $0.key.id == id && $0.state == .rotated }?.key
    }

    /// Any key of the deployment with that id, retired ones too: what decrypts an archive.
    func any(id: String) -> BackupKey? {
        if id == self.id { return self }
        return earlier.first { $0.key.id == id }?.key
    }

    /// A new current key; this one becomes the newest rotated key.
    package func rotated(at time: Date) -> BackupKey {
        var next = BackupKey.generate()
        next.earlier = earlier + [EarlierBackupKey(key: BackupKey(bytes: bytes), state: .rotated, since: time)]
        return next
    }

    /// The same keys with the rotated key `id` retired; nil when no earlier key has that id.
    package func retiring(id: String, at time: Date) -> BackupKey? {
        guard let index = earlier.firstIndex(where: { $0.key.id == id }) else { return nil }
        var next = self
        if next.earlier[index].state == .rotated {
            next.earlier[index].state = .retired
            next.earlier[index].since = time
        }
        return next
    }

    /// A fresh random key.
    public static func generate() -> BackupKey {
        BackupKey(bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    /// Names the key without revealing it: the first 8 bytes of its SHA-256, as hex.
    public var id: String {
        String(StreamingSHA256.hex(of: bytes).prefix(16))
    }

    var symmetricKey: SymmetricKey { SymmetricKey(data: bytes) }

    /// A key for another use, derived from this one by HKDF-SHA-256 with
    /// `purpose` as its info: one deployment secret keys several things, and
    /// none of the derived keys tells anything of the others or of this one.
    public func derivedKey(for purpose: String, byteCount: Int = 32) -> [UInt8] {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: symmetricKey, info: Array(purpose.utf8), outputByteCount: byteCount
        ).withUnsafeBytes { Array($0) }
    }

    /// What seals the store's token signing keys (`guestmode serve`): a key this one derives, named by
    /// this key's id, so every machine holding the deployment's key opens them and a copy of the
    /// database alone opens nothing.
    package var signingKeySeal: SigningKeySeal {
        var seal = SigningKeySeal(id: id, bytes: derivedKey(for: "guestmode signing keys v1"))
        for older in earlier where older.state == .rotated {
            seal.add(id: older.key.id, bytes: older.key.derivedKey(for: "guestmode signing keys v1"))
        }
        return seal
    }

    /// The key file's text: 64 lowercase hex digits and a newline, then a line for each earlier key.
    public var fileText: String {
        var text = Self.hex(bytes) + "\n"
        for older in earlier {
            text += "\(Self.hex(older.key.bytes)) \(older.state.rawValue) \(Timestamp.format(older.since))\n"
        }
        return text
    }

    private static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Parses a key file's text: 64 hex digits (surrounding whitespace allowed), then the earlier
    /// keys' lines; anything else is refused.
    public static func parse(_ data: Data, source: String) throws -> BackupKey {
        let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        var key = try parseOne(lines.first ?? "", source: source)
        for line in lines.dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard fields.count == 3, let state = EarlierBackupKey.State(rawValue: fields[1]),
                let since = Timestamp.parse(fields[2])
            else {
                throw GuestModeError(
                    .badBackupKey,
                    "\(source) is not a guestmode backup key: after the key, each line must be 'HEX rotated TIME' or 'HEX retired TIME'"
                )
            }
            key.earlier.append(
                EarlierBackupKey(key: try parseOne(fields[0], source: source), state: state, since: since))
        }
        return key
    }

    private static func parseOne(_ text: String, source: String) throws -> BackupKey {
        let digits = Array(text.utf8)
        var bytes: [UInt8] = []
        if digits.count == byteCount * 2 {
            for index in stride(from: 0, to: digits.count, by: 2) {
                guard let high = digits[index].hexDigitValue, let low = digits[index + 1].hexDigitValue else { break }
                bytes.append(high << 4 | low)
            }
        }
        guard bytes.count == byteCount else {
            throw GuestModeError(
                .badBackupKey, "\(source) is not a guestmode backup key: it must hold \(byteCount * 2) hex digits")
        }
        return BackupKey(bytes: bytes)
    }

    /// The key in `path`, or nil when there is no such file.
    public static func load(path: String) throws -> BackupKey? {
        guard let data = try RegularFile.read(path, what: "the backup key file") else { return nil }
        return try parse(data, source: "the backup key file '\(path)'")
    }

    /// The key in `path`, created (mode 0600) when the file does not exist yet.
    public static func loadOrCreate(path: String) throws -> (key: BackupKey, created: Bool) {
        if let key = try load(path: path) { return (key, false) }
        let key = generate()
        do {
            try key.write(to: path, exclusive: true)
        } catch let error as GuestModeError where error.code == .keyExists {
            // Another process created it first: use theirs.
            if let key = try load(path: path) { return (key, false) }
            throw error
        }
        return (key, true)
    }

    /// Writes the key to `path` with mode 0600, atomically. With `exclusive`,
    /// an existing file is never replaced.
    public func write(to path: String, exclusive: Bool) throws {
        // A PostgreSQL deployment's key lives under ~/.config/guestmode, which may not exist yet; only its owner reads it.
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, !FileManager.default.fileExists(atPath: folder) {
            try? FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        if exclusive {
            let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                if errno == EEXIST {
                    throw GuestModeError(.keyExists, "the backup key file '\(path)' already exists")
                }
                throw GuestModeError(
                    .cannotCreateOutput,
                    "cannot create the backup key file '\(path)': \(String(cString: strerror(errno)))")
            }
            let text = Array(fileText.utf8)
            let written = text.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
            let synced = fsync(descriptor) == 0
            let failure = errno
            close(descriptor)
            guard written == text.count, synced else {
                unlink(path)
                if DiskSpace.isFull(failure) { throw DiskSpace.full(writing: path, what: "the backup key file") }
                throw GuestModeError(.ioError, "cannot write the backup key file '\(path)'")
            }
            return
        }
        let text = Array(fileText.utf8)
        try AtomicFile.write(path: path) { descriptor in
            let written = text.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
            guard written == text.count else {
                if DiskSpace.isFull(errno) { throw DiskSpace.full(writing: path, what: "the backup key file") }
                throw GuestModeError(.ioError, "cannot write the backup key file '\(path)'")
            }
        }
    }

    /// HMAC-SHA-256 over the exact bytes of header.json and manifest.json,
    /// each preceded by its length so no two pairs of entries share a MAC,
    /// taking header.json in pieces as it streams: its size comes first, so
    /// it must be known.
    func signer(headerSize: Int) -> BackupSigner {
        BackupSigner(key: symmetricKey, headerSize: headerSize)
    }
}

/// An archive's MAC computed while header.json is streamed (see
/// ``BackupKey/signer(headerSize:)`` for what it covers).
struct BackupSigner {
    private var mac: HMAC<SHA256>

    fileprivate init(key: SymmetricKey, headerSize: Int) {
        mac = HMAC<SHA256>(key: key)
        mac.update(data: Array(BackupSignature.context.utf8))
        mac.update(data: Self.length(headerSize))
    }

    /// Adds the next piece of header.json.
    mutating func update(header piece: UnsafeRawBufferPointer) { mac.update(data: piece) }

    /// The MAC, once the whole header was given, over it and `manifest`.
    func signature(manifest: [UInt8]) -> [UInt8] {
        var mac = self.mac
        mac.update(data: Self.length(manifest.count))
        mac.update(data: manifest)
        return Array(mac.finalize())
    }

    private static func length(_ count: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt64(count).bigEndian) { Array($0) }
    }
}

/// The MAC header.json would have under each key this deployment trusts
/// (the current one and the rotated ones), computed as the header streams
/// in: which key signed it is named only later, in signature.json.
struct HeaderMACs {
    private let keys: [BackupKey]
    private let declaredSize: Int64?
    private var signers: [(id: String, signer: BackupSigner)] = []
    /// The header's bytes, when its entry declared no size to start the MACs with.
    private var held: [UInt8]?

    init(key: BackupKey?, declaredSize: Int64?) {
        keys = key.map { [$0] + $0.earlier.filter { $0.state == .rotated }.map(\.key) } ?? []
        self.declaredSize = declaredSize
        if let declaredSize {
            signers = keys.map { ($0.id, $0.signer(headerSize: Int(declaredSize))) }
        } else if !keys.isEmpty {
            held = []
        }
    }

    /// Adds the next piece of header.json.
    mutating func update(_ piece: UnsafeRawBufferPointer) {
        for index in signers.indices { signers[index].signer.update(header: piece) }
        if held != nil { held!.append(contentsOf: piece) }
    }

    /// Called once the header was read, `size` bytes of it.
    mutating func finish(size: Int64) {
        // An entry longer or shorter than it declared was signed over other bytes: no MAC of it can hold.
        if let declaredSize, declaredSize != size { signers = [] }
        if let held {
            signers = keys.map { key in
                var signer = key.signer(headerSize: held.count)
                held.withUnsafeBytes { signer.update(header: $0) }
                return (key.id, signer)
            }
            self.held = nil
        }
    }

    /// Whether `mac` is the MAC of the header and `manifest` under `key`, compared in constant time.
    func isValid(_ mac: [UInt8], key: BackupKey, manifest: [UInt8]) -> Bool {
        guard let signer = signers.first(where: { $0.id == key.id })?.signer else { return false }
        let expected = signer.signature(manifest: manifest)
        guard expected.count == mac.count else { return false }
        var difference: UInt8 = 0
        for index in expected.indices { difference |= expected[index] ^ mac[index] }
        return difference == 0
    }
}

/// `signature.json`, the entry after manifest.json in format 2.
package struct BackupSignature: Codable, Sendable, Equatable {
    static let entryName = "signature.json"
    static let algorithmName = "hmac-sha256"
    /// Prepended to the signed bytes so a MAC made for anything else never verifies.
    static let context = "guestmode-backup-signature-v2\n"

    package var algorithm: String
    package var keyId: String
    package var mac: String
}

/// Who signed an archive, as `verify`, `inspect` and `import` report it.
public enum SignatureStatus: String, Codable, Sendable {
    /// Signed with this deployment's key, and the MAC holds.
    case thisDeployment = "this-deployment"
    /// Signed with a key this deployment does not hold (or no key is at hand).
    case anotherDeployment = "another-deployment"
    /// No signature: format 1, or a format 2 archive without signature.json.
    case unsigned
}

/// A key the deployment's current backup key replaced (`backup key rotate`).
package struct EarlierBackupKey: Sendable, Equatable {
    package enum State: String, Sendable {
        /// Archives it signed are still this deployment's.
        case rotated
        /// Archives it signed are another deployment's; it only decrypts.
        case retired
    }

    package var key: BackupKey
    package var state: State
    /// When it was rotated, or retired.
    package var since: Date
}
