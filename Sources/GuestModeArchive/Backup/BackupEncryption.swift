import Crypto
import Foundation
import GuestModeKit
import _CryptoExtras

/// Where the key of an encrypted archive comes from.
public enum BackupEncryption: Sendable {
    /// HKDF-SHA-256 from the deployment's backup key.
    case deploymentKey(BackupKey)
    /// PBKDF2-HMAC-SHA-256 from a passphrase, 600,000 rounds, random salt.
    case passphrase([UInt8])
}

/// What a reader may use to open an encrypted archive and to check a signature.
public struct BackupKeys: Sendable {
    /// The deployment's key, which opens archives encrypted with it.
    public var deployment: BackupKey?
    /// A passphrase, as bytes, which opens archives encrypted with it.
    public var passphrase: [UInt8]?

    /// Keys for reading encrypted archives; give either or both.
    public init(deployment: BackupKey? = nil, passphrase: [UInt8]? = nil) {
        self.deployment = deployment
        self.passphrase = passphrase
    }

    /// No key: only unencrypted archives can be read.
    public static let none = BackupKeys()
}

/// The encrypted container (guestmode-backup(1), ENCRYPTION): a 48-byte
/// header, then the archive in 64 KiB chunks, each sealed with
/// ChaCha20-Poly1305. Nonce = 7-byte random prefix ‖ 32-bit chunk counter ‖
/// 1 byte that is 1 only on the last chunk, so reordering, truncation and
/// appended data all fail authentication. Every chunk authenticates the
/// header as associated data.
///
///     0  8  magic  89 47 4D 45 4E 43 0D 0A  ("\x89GMENC\r\n")
///     8  1  container version (1)
///     9  1  key source: 1 = deployment key (HKDF-SHA-256), 2 = passphrase (PBKDF2-HMAC-SHA-256)
///    10  2  zero
///    12  4  PBKDF2 rounds, big-endian (0 for the deployment key)
///    16 16  salt
///    32  8  key id of the deployment key (zero for a passphrase)
///    40  7  nonce prefix
///    47  1  zero
enum EncryptedArchive {
    static let magic: [UInt8] = [0x89, 0x47, 0x4D, 0x45, 0x4E, 0x43, 0x0D, 0x0A]
    static let headerSize = 48
    static let chunkSize = 64 << 10
    static let tagSize = 16
    static let passphraseRounds: UInt32 = 600_000
    static let maximumRounds: UInt32 = 10_000_000
    static let hkdfInfo = Array("guestmode-backup-encryption-v1".utf8)

    /// True when the file at `descriptor` starts with the magic bytes.
    static func isEncrypted(_ prefix: [UInt8]) -> Bool { prefix.starts(with: magic) }

    static func makeHeader(_ encryption: BackupEncryption) throws -> (header: [UInt8], key: SymmetricKey) {
        var header = magic
        header.append(1)
        var salt = [UInt8](repeating: 0, count: 16)
        for index in salt.indices { salt[index] = UInt8.random(in: 0...255) }
        var prefix = [UInt8](repeating: 0, count: 7)
        for index in prefix.indices { prefix[index] = UInt8.random(in: 0...255) }
        switch encryption {
        case .deploymentKey(let key):
            header += [1, 0, 0, 0, 0, 0, 0]
            header += salt
            header += hexBytes(key.id)
        case .passphrase:
            header += [2, 0, 0]
            header += withUnsafeBytes(of: passphraseRounds.bigEndian) { Array($0) }
            header += salt
            header += [UInt8](repeating: 0, count: 8)
        }
        header += prefix
        header.append(0)
        return (header, try deriveKey(header: header, encryption: encryption, path: ""))
    }

    private static func hexBytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var iterator = hex.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            bytes.append(UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) ?? 0)
        }
        return bytes
    }

    private static func deriveKey(header: [UInt8], encryption: BackupEncryption, path: String) throws -> SymmetricKey {
        let salt = Array(header[16..<32])
        switch encryption {
        case .deploymentKey(let key):
            return HKDF<SHA256>.deriveKey(
                inputKeyMaterial: key.symmetricKey, salt: salt, info: hkdfInfo, outputByteCount: 32)
        case .passphrase(let passphrase):
            let rounds = header[12..<16].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard rounds >= passphraseRounds, rounds <= maximumRounds else {
                throw undecryptable(path)
            }
            do {
                return try KDF.Insecure.PBKDF2.deriveKey(
                    from: passphrase, salt: salt, using: .sha256, outputByteCount: 32, rounds: Int(rounds))
            } catch {
                throw undecryptable(path)
            }
        }
    }

    static func undecryptable(_ path: String) -> GuestModeError {
        GuestModeError(
            .cannotDecrypt,
            "cannot decrypt '\(path)': wrong key or passphrase, or the file is damaged; nothing was changed")
    }

    private static func nonce(_ header: [UInt8], counter: UInt32, last: Bool) throws -> ChaChaPoly.Nonce {
        var bytes = Array(header[40..<47])
        bytes += withUnsafeBytes(of: counter.bigEndian) { Array($0) }
        bytes.append(last ? 1 : 0)
        return try ChaChaPoly.Nonce(data: bytes)
    }

    /// Encrypts a stream: feed it with `write`, then `finish` once.
    final class Writer {
        private let header: [UInt8]
        private let key: SymmetricKey
        private let output: ([UInt8]) throws -> Void
        private var buffer: [UInt8] = []
        private var counter: UInt32 = 0

        init(_ encryption: BackupEncryption, output: @escaping ([UInt8]) throws -> Void) throws {
            (header, key) = try EncryptedArchive.makeHeader(encryption)
            self.output = output
            buffer.reserveCapacity(EncryptedArchive.chunkSize * 2)
            try output(header)
        }

        func write(_ bytes: UnsafeRawBufferPointer) throws {
            buffer.append(contentsOf: bytes)
            // A full chunk is sealed as "not last" only once more data follows it.
            while buffer.count > EncryptedArchive.chunkSize {
                try seal(Array(buffer[0..<EncryptedArchive.chunkSize]), last: false)
                buffer.removeFirst(EncryptedArchive.chunkSize)
            }
        }

        func finish() throws {
            try seal(buffer, last: true)
            buffer = []
        }

        private func seal(_ plaintext: [UInt8], last: Bool) throws {
            guard counter < UInt32.max else {
                throw GuestModeError(.archiveWriteFailed, "the archive is too large to encrypt")
            }
            let box = try ChaChaPoly.seal(
                plaintext, using: key, nonce: try nonce(header, counter: counter, last: last), authenticating: header)
            counter += 1
            try output(Array(box.ciphertext) + Array(box.tag))
        }
    }

    /// Decrypts the encrypted archive at `path` into a new unlinked 0600
    /// temporary file and returns its descriptor, positioned at the start.
    /// Nothing decrypted is left on disk, even after kill -9.
    static func decryptToTemporary(path: String, keys: BackupKeys) throws -> Int32 {
        guard let input = FileHandle(forReadingAtPath: path) else {
            throw GuestModeError(.archiveUnreadable, "cannot open the archive '\(path)' for reading")
        }
        defer { try? input.close() }
        func readFull(_ count: Int) throws -> [UInt8] {
            var bytes: [UInt8] = []
            while bytes.count < count {
                guard let data = try input.read(upToCount: count - bytes.count), !data.isEmpty else { break }
                bytes += data
            }
            return bytes
        }
        let header = try readFull(headerSize)
        guard header.count == headerSize, header.starts(with: magic) else { throw undecryptable(path) }
        guard header[8] == 1, header[10] == 0, header[11] == 0, header[47] == 0 else { throw undecryptable(path) }
        let encryption: BackupEncryption
        switch header[9] {
        case 1:
            guard let key = keys.deployment else {
                throw GuestModeError(
                    .cannotDecrypt,
                    "cannot decrypt '\(path)': it is encrypted with a deployment's backup key and no backup key is at hand"
                )
            }
            guard header[12..<16].allSatisfy({ $0 == 0 }) else { throw undecryptable(path) }
            let id = header[32..<40].map { String(format: "%02x", $0) }.joined()
            guard let opening = key.any(id: id) else {
                throw GuestModeError(
                    .cannotDecrypt,
                    "cannot decrypt '\(path)': it is encrypted with the backup key \(id), but this deployment's key is \(key.id) (wrong key, or the file is damaged); nothing was changed"
                )
            }
            encryption = .deploymentKey(opening)
        case 2:
            guard let passphrase = keys.passphrase else {
                throw GuestModeError(
                    .passphraseRequired, "'\(path)' is encrypted with a passphrase")
            }
            guard header[32..<40].allSatisfy({ $0 == 0 }) else { throw undecryptable(path) }
            encryption = .passphrase(passphrase)
        default:
            throw undecryptable(path)
        }
        let key = try deriveKey(header: header, encryption: encryption, path: path)

        let directory = FileManager.default.temporaryDirectory.path
        var template = Array("\(directory)/.guestmode-decrypt-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            return mkstemp(base)
        }
        guard descriptor >= 0 else {
            throw GuestModeError(
                .ioError,
                "cannot create a temporary file in '\(directory)' to decrypt '\(path)': \(String(cString: strerror(errno)))"
            )
        }
        template.withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress { _ = unlink(base) }
        }
        fchmod(descriptor, 0o600)
        do {
            let sealedSize = chunkSize + tagSize
            var current = try readFull(sealedSize)
            var counter: UInt32 = 0
            while true {
                guard current.count >= tagSize else { throw undecryptable(path) }
                let next = current.count == sealedSize ? try readFull(sealedSize) : []
                let last = next.isEmpty
                let plaintext: Data
                do {
                    let box = try ChaChaPoly.SealedBox(
                        nonce: try nonce(header, counter: counter, last: last),
                        ciphertext: current[0..<(current.count - tagSize)],
                        tag: current[(current.count - tagSize)...])
                    plaintext = try ChaChaPoly.open(box, using: key, authenticating: header)
                } catch {
                    throw undecryptable(path)
                }
                try plaintext.withUnsafeBytes { buffer in
                    var offset = 0
                    while offset < buffer.count {
                        let written = Foundation.write(
                            descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                        guard written > 0 else {
                            throw GuestModeError(
                                .ioError,
                                "cannot write the decrypted copy of '\(path)' in '\(directory)': \(String(cString: strerror(errno)))"
                            )
                        }
                        offset += written
                    }
                }
                if last { break }
                guard counter < UInt32.max else { throw undecryptable(path) }
                counter += 1
                current = next
            }
            guard lseek(descriptor, 0, SEEK_SET) == 0 else {
                throw GuestModeError(.ioError, "cannot rewind the decrypted copy of '\(path)'")
            }
            return descriptor
        } catch {
            close(descriptor)
            throw error
        }
    }
}
