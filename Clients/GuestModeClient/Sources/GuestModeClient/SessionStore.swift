import Foundation

/// A signed-in session: whose it is, the access token calls carry, and the refresh token that buys the
/// next one. guestmode rotates the refresh token on every refresh and revokes the whole family when a
/// spent one comes back, so the store must always hold the latest one.
public struct Session: Codable, Sendable, Equatable {
    /// The user the session reaches.
    public var userID: String
    /// The bearer token of every call (a JWT; `expiresAt` says until when).
    public var accessToken: String
    /// The token that buys the next session, once.
    public var refreshToken: String
    /// When `accessToken` stops being accepted, by this device's clock (when it came, plus `expires_in`).
    public var expiresAt: Date
    /// `anonymous` (a guest) or `linked` (an account): the user's state when the session was made.
    public var state: String

    public init(userID: String, accessToken: String, refreshToken: String, expiresAt: Date, state: String) {
        self.userID = userID
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.state = state
    }

    /// True when the user is still a guest.
    public var isGuest: Bool { state == "anonymous" }
}

/// Where the client keeps its session across launches. `save(nil)` forgets it (sign-out, deletion).
/// An app keeps it in the Keychain (the README shows the few lines); `FileSessionStore` and
/// `InMemorySessionStore` come with the package.
public protocol SessionStore: Sendable {
    func load() async throws -> Session?
    func save(_ session: Session?) async throws
}

/// A session kept in memory only: a test's, or a process that signs in every time.
public actor InMemorySessionStore: SessionStore {
    private var session: Session?

    public init(_ session: Session? = nil) { self.session = session }

    public func load() -> Session? { session }
    public func save(_ session: Session?) { self.session = session }
}

/// A session kept in one JSON file, readable and writable by its owner only (0600), replaced
/// atomically (a new file written and fsynced, then renamed over the old one, then the folder fsynced),
/// so a crash leaves the old session or the new one, never half of either.
public actor FileSessionStore: SessionStore {
    public nonisolated let url: URL

    public init(url: URL) { self.url = url }

    public func load() throws -> Session? {
        guard let data = FileManager.default.contents(atPath: url.path), !data.isEmpty else { return nil }
        return try JSONCoding.decoder.decode(Session.self, from: data)
    }

    public func save(_ session: Session?) throws {
        guard let session else {
            try? FileManager.default.removeItem(at: url)
            try DurableFile.syncFolder(of: url)
            return
        }
        try DurableFile.replace(url, with: JSONCoding.encoder.encode(session))
    }
}

/// The package's JSON: the server's snake_case is the generated types' business; what the client
/// writes itself (a session, the offline queue) is its own plain JSON with ISO 8601 times.
enum JSONCoding {
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

/// Files replaced whole and durably, with POSIX calls (Foundation's atomic write neither fsyncs nor
/// sets the mode before the rename).
enum DurableFile {
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var path: String
        var code: Int32
        var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
    }

    /// Writes `data` to a temporary file beside `url` (mode 0600), fsyncs it, renames it over `url`
    /// and fsyncs the folder.
    static func replace(_ url: URL, with data: Data) throws {
        let folder = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp").path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Failure(operation: "open", path: temporary, code: errno) }
        do {
            try data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw Failure(operation: "write", path: temporary, code: errno)
                    }
                    offset += written
                }
            }
            guard fsync(descriptor) == 0 else { throw Failure(operation: "fsync", path: temporary, code: errno) }
            close(descriptor)
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        guard rename(temporary, url.path) == 0 else {
            let code = errno
            unlink(temporary)
            throw Failure(operation: "rename", path: url.path, code: code)
        }
        try syncFolder(of: url)
    }

    /// fsyncs the folder holding `url`, so that a rename or an unlink in it survives a crash.
    static func syncFolder(of url: URL) throws {
        let folder = url.deletingLastPathComponent().path
        let descriptor = open(folder, O_RDONLY | O_CLOEXEC)
        if descriptor < 0, errno == ENOENT { return }  // no folder: nothing in it to make durable
        guard descriptor >= 0 else { throw Failure(operation: "open", path: folder, code: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw Failure(operation: "fsync", path: folder, code: errno) }
    }
}
