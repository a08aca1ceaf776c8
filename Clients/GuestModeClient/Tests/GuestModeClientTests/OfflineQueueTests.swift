import Foundation
import Testing

@testable import GuestModeClient

@Suite("GuestModeClient: the offline queue and the session file")
struct OfflineQueueTests {
    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("guestmode-queue-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test("bounded: one item past the capacity is refused and nothing is lost; the file is read back in order")
    func bounded() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = Session(
            userID: "u1", accessToken: "a", refreshToken: "r", expiresAt: Date().addingTimeInterval(3600),
            state: "anonymous")
        // Nothing listens on port 1: every drain stops at once, the items stay.
        let client = try GuestModeClient(
            .init(
                serverURL: URL(string: "http://127.0.0.1:1")!, sessionStore: InMemorySessionStore(session),
                queueURL: folder.appendingPathComponent("queue.json"), queueCapacity: 3, retry: .none))
        for action in ["a", "b", "c"] { try await client.trackLater(action) }
        await #expect(throws: OfflineQueueFull.self) { try await client.trackLater("d") }
        #expect(await client.flush() == .init(delivered: 0, dropped: 0, pending: 3))
        let reread = try OfflineQueue(url: folder.appendingPathComponent("queue.json"), capacity: 3)
        #expect(reread.items.map(\.kind) == ["a", "b", "c"].map { .event(action: $0, count: nil, props: nil) })
        #expect(Set(reread.items.map(\.id)).count == 3, "each item keeps its own Idempotency-Key")
    }

    @Test("the session file is 0600, replaced whole, and removed on sign-out")
    func sessionFile() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = FileSessionStore(url: folder.appendingPathComponent("session.json"))
        #expect(try await store.load() == nil)
        let session = Session(
            userID: "u1", accessToken: "a", refreshToken: "r", expiresAt: Date(timeIntervalSince1970: 1_800_000_000),
            state: "anonymous")
        try await store.save(session)
        let attributes = try FileManager.default.attributesOfItem(atPath: store.url.path)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        #expect(try await store.load() == session)
        try await store.save(nil)
        #expect(!FileManager.default.fileExists(atPath: store.url.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "no temporary file left")
    }
}
