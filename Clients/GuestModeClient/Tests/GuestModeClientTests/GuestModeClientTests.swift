import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

@testable import GuestModeClient

/// Counts the attempts of each operation that reach the transport.
final class Attempts: ClientMiddleware, Sendable {
    private let counts = Locked<[String: Int]>([:])

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        counts.withLock { $0[operationID, default: 0] += 1 }
        return try await next(request, body, baseURL)
    }

    subscript(_ operationID: String) -> Int { counts.withLock { $0[operationID, default: 0] } }
}

/// GuestModeClient against a real `guestmode serve` on loopback.
@Suite("GuestModeClient against guestmode serve", .serialized)
struct GuestModeClientTests {
    struct Minutes: Codable, Equatable {
        var language: String
        var wakeWord: Bool
    }

    @Test(
        "a guest's journey: sign in, a record, a meter checked, used and refused with its prompt, an event, sign out",
        arguments: TestServer.Backend.available)
    func guestJourney(_ backend: TestServer.Backend) async throws {
        let server = try await TestServer(profile: "voice", backend: backend)
        try server.start()
        defer { server.stop() }
        let store = FileSessionStore(url: server.path("session.json"))
        let client = try GuestModeClient(serverURL: server.url, sessionStore: store)

        let session = try await client.signInAsGuest(device: "phone-1")
        #expect(session.isGuest)
        #expect(try await client.signInAsGuest() == session, "a kept session is used again")
        let mode = try FileManager.default.attributesOfItem(atPath: server.path("session.json").path)[.posixPermissions]
        #expect(mode as? Int == 0o600)
        #expect(try await FileSessionStore(url: server.path("session.json")).load() == session)

        let settings = Minutes(language: "en", wakeWord: true)
        #expect(try await client.putRecord(settings, collection: "settings", key: "main").value?.outcome != nil)
        #expect(try await client.record(Minutes.self, collection: "settings", key: "main") == settings)
        #expect(try await client.record(Minutes.self, collection: "settings", key: "none") == nil)

        let checked = try #require(try await client.checkMeter("api_minutes", amount: 10).value)
        #expect(checked.remaining == 60 && checked.allowance == 60)
        let used = try #require(try await client.useMeter("api_minutes", amount: 50).value)
        #expect(used.recorded && used.status.used == 50)
        guard case let .meterExhausted(status, prompt) = try await client.useMeter("api_minutes", amount: 20) else {
            Issue.record("20 minutes past 50 of 60 were not refused")
            return
        }
        #expect(status.remaining == 10 && status.used == 50)
        #expect(prompt?.context == "session_refused" && prompt?.content.title.isEmpty == false)
        guard case .meterExhausted = try await client.checkMeter("api_minutes", amount: 20) else {
            Issue.record("a check of 20 with 10 left was not refused")
            return
        }

        let tracked = try await client.track("command_spoken", count: 2)
        #expect(tracked.counted && tracked.total == 2)
        #expect(try await client.counters()["command_spoken"] == 2)
        _ = try await client.nextPrompt()

        try await client.signOut()
        #expect(try await store.load() == nil)
        await #expect(throws: GuestModeClientError.self) { try await client.track("app_opened") }
    }

    @Test(
        "a guest past its cap is .needsAccount with the prompt the server chose",
        arguments: TestServer.Backend.available)
    func refusalWithPrompt(_ backend: TestServer.Backend) async throws {
        let server = try await TestServer(profile: "subscriptions", backend: backend)
        try server.start()
        defer { server.stop() }
        let client = try GuestModeClient(serverURL: server.url)
        try await client.signInAsGuest()
        for index in 1...5 {
            let put = try await client.putRecord(
                ["name": "plan \(index)"], collection: "subscriptions", key: "s\(index)")
            #expect(put.value != nil, "subscription \(index): \(put)")
        }
        let refused = try await client.putRecord(["name": "plan 6"], collection: "subscriptions", key: "s6")
        guard case let .needsAccount(prompt) = refused else {
            Issue.record("the sixth subscription of a guest was \(refused)")
            return
        }
        let shown = try #require(prompt)
        #expect(!shown.context.isEmpty && !shown.content.primaryAction.isEmpty)
    }

    @Test(
        "two calls racing with an expired access token: one refresh, and the family still refreshes",
        arguments: TestServer.Backend.available)
    func oneRefresh(_ backend: TestServer.Backend) async throws {
        let server = try await TestServer(profile: "habits", backend: backend)
        try server.start()
        let attempts = Attempts()
        let store = InMemorySessionStore()
        let client = try GuestModeClient(
            .init(serverURL: server.url, sessionStore: store, middlewares: [attempts]))
        let first = try await client.signInAsGuest()
        try await client.track("app_opened")
        // The server's clock two hours on: the access token (an hour) has expired, the refresh token
        // has not; the client's own clock still says the token is good, so both calls get 401.
        server.stop()
        try server.start(["--now", "+2h"])
        defer { server.stop() }
        async let one = client.track("app_opened")
        async let two = client.counters()
        async let three = client.track("app_opened")
        let (tracked, counters, again) = try await (one, two, three)
        #expect(attempts["refreshSession"] == 1, "one refresh for three calls")
        #expect(tracked.counted && again.counted && counters["app_opened"] != nil)
        let refreshed = try #require(await store.load())
        #expect(refreshed.refreshToken != first.refreshToken && refreshed.userID == first.userID)
        // The family is not revoked: the new refresh token still buys a session.
        server.stop()
        try server.start(["--now", "+4h"])
        #expect(try await client.counters()["app_opened"] == 3)
        #expect(attempts["refreshSession"] == 2)
    }

    /// Runs the package's Examples/AppJourney (built beside the tests) and waits for it.
    static func appJourney(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let tests = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0])
        var folder = tests.deletingLastPathComponent()
        while !FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("AppJourney").path),
            folder.path != "/"
        {
            folder.deleteLastPathComponent()
        }
        let process = Process()
        process.executableURL = folder.appendingPathComponent("AppJourney")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test(
        "100 events queued by another process while the server is down: the next launch delivers exactly 100, and the queued backup once",
        arguments: TestServer.Backend.available)
    func offlineQueue(_ backend: TestServer.Backend) async throws {
        let server = try await TestServer(profile: "voice", backend: backend)
        let shelf = ["--backups-dir", server.path("pushed").path]
        try server.start(shelf)
        let sessionFile = server.path("session.json")
        let queueFile = server.path("queue.json")
        // The queue and the session live where AppJourney keeps them (FOLDER/queue.json, session.json).
        // Each launch is a process of the app: only `flush()` drains (no background drain outlives it).
        func launch() throws -> GuestModeClient {
            try GuestModeClient(
                .init(
                    serverURL: server.url, sessionStore: FileSessionStore(url: sessionFile), queueURL: queueFile,
                    retry: RetryPolicy(maxAttempts: 4, initialDelay: .milliseconds(50)), flushesWhenQueuing: false))
        }
        // Drains until nothing is pending (a busy machine may answer 503 now and then): the counts summed.
        func drain(_ client: GuestModeClient) async -> GuestModeClient.QueueDrain {
            var total = GuestModeClient.QueueDrain(delivered: 0, dropped: 0, pending: 0)
            for _ in 0..<5 {
                let drained = await client.flush()
                total.delivered += drained.delivered
                total.dropped += drained.dropped
                total.pending = drained.pending
                if drained.pending == 0 { break }
            }
            return total
        }
        do {
            let client = try launch()
            let session = try await client.signInAsGuest()
            server.stop()
            // Another process, Examples/AppJourney, queues 100 events with this session and exits.
            let queued = try Self.appJourney(["queue", "100", server.url.absoluteString, server.directory.path])
            #expect(queued.status == 0 && queued.output == "100\n", "\(queued.output)")
            // A launch after it, still offline, adds a meter use that happened (past the allowance).
            let next = try launch()
            #expect(await next.pendingCount == 100)
            try await next.useMeterLater("api_minutes", amount: 90)
            try await next.backUpLater()
            let drained = await next.flush()
            #expect(drained.delivered == 0 && drained.pending == 102, "\(drained)")
            #expect(try await FileSessionStore(url: sessionFile).load() == session)
        }
        // The next launch, with the server up again: the queue file is all it has.
        try server.start(shelf)
        defer { server.stop() }
        let saved = try Data(contentsOf: queueFile)
        let client = try launch()
        #expect(await client.pendingCount == 102)
        let drained = await drain(client)
        #expect(drained == .init(delivered: 102, dropped: 0, pending: 0))
        #expect(try await client.counters()["command_spoken"] == 100)
        guard case let .meterExhausted(status, _) = try await client.checkMeter("api_minutes") else {
            Issue.record("90 minutes used of 60 left some")
            return
        }
        #expect(status.used == 90)

        // A crash after the server had them but before the queue file lost them: the same 101 again,
        // with the same keys, change nothing.
        try saved.write(to: queueFile)
        let replayed = try launch()
        #expect(await drain(replayed) == .init(delivered: 102, dropped: 0, pending: 0))
        #expect(try await replayed.counters()["command_spoken"] == 100)
        let userID = try #require(try await client.currentSession()?.userID)
        let kept = try FileManager.default.contentsOfDirectory(atPath: server.path("pushed/\(userID)").path)
            .filter { $0.hasSuffix(".gmbackup") }
        #expect(kept.count == 1, "the queued backup kept once: \(kept)")
        // Asked for at once, a backup is one more.
        let now = try await replayed.backUp()
        #expect(now.sequence == 2 && now.size > 0, "\(now)")
        let events = try server.run([
            "user", "events", try #require(try await client.currentSession()?.userID), "--json", "--store",
            server.store,
        ])
        #expect(events.status == 0, "\(events.output)")
    }
}
