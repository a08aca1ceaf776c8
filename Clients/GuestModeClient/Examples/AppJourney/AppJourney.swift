// AppJourney: one of the four apps' first minutes, played through GuestModeClient against a running
// `guestmode serve` whose store has that app's profile.
//
//     AppJourney PROFILE [SERVER-URL] [STATE-FOLDER]
//     AppJourney queue N SERVER-URL STATE-FOLDER    (N events queued offline-first, then exit)
//
// PROFILE is subscriptions, recipes, habits or voice; SERVER-URL defaults to http://127.0.0.1:8080;
// the session and the offline queue are kept in STATE-FOLDER (default: a new temporary folder). It
// prints each step and exits 1 when an answer is not the one the profile promises.
import Foundation
import GuestModeClient

@main
struct AppJourney {
    static func main() async {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "queue" { return await queue(Array(arguments.dropFirst())) }
        guard let profile = arguments.first, ["subscriptions", "recipes", "habits", "voice"].contains(profile) else {
            FileHandle.standardError.write(
                Data("usage: AppJourney subscriptions|recipes|habits|voice [URL] [FOLDER]\n".utf8))
            exit(64)
        }
        let server = URL(string: arguments.dropFirst().first ?? "http://127.0.0.1:8080")!
        let folder =
            arguments.dropFirst(2).first.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("app-journey-\(UUID())")
        do {
            let client = try GuestModeClient(
                serverURL: server,
                sessionStore: FileSessionStore(url: folder.appendingPathComponent("session.json")),
                queueURL: folder.appendingPathComponent("queue.json"))
            let session = try await client.signInAsGuest(device: "example")
            print("signed in as guest \(session.userID)")
            try await client.track("app_opened")
            switch profile {
            case "subscriptions": try await subscriptions(client)
            case "recipes": try await recipes(client)
            case "habits": try await habits(client)
            default: try await voice(client)
            }
            let drained = await client.flush()
            print("offline queue: \(drained.delivered) delivered, \(drained.pending) pending")
            print("counters: \(try await client.counters().sorted { $0.key < $1.key })")
        } catch {
            FileHandle.standardError.write(Data("AppJourney \(profile): \(error)\n".utf8))
            exit(1)
        }
    }

    /// `AppJourney queue N SERVER-URL FOLDER`: queues N `command_spoken` events with the session kept
    /// in FOLDER, offline-first (nothing is sent but by a drain, none here), and exits: the process the
    /// tests kill the network under. Prints how many wait in the queue.
    static func queue(_ arguments: [String]) async {
        guard arguments.count == 3, let count = Int(arguments[0]), let server = URL(string: arguments[1]) else {
            FileHandle.standardError.write(Data("usage: AppJourney queue N URL FOLDER\n".utf8))
            exit(64)
        }
        let folder = URL(fileURLWithPath: arguments[2])
        do {
            let client = try GuestModeClient(
                .init(
                    serverURL: server,
                    sessionStore: FileSessionStore(url: folder.appendingPathComponent("session.json")),
                    queueURL: folder.appendingPathComponent("queue.json"), flushesWhenQueuing: false))
            for index in 0..<count { try await client.trackLater("command_spoken", props: ["n": "\(index)"]) }
            print(await client.pendingCount)
        } catch {
            FileHandle.standardError.write(Data("AppJourney queue: \(error)\n".utf8))
            exit(1)
        }
    }

    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    static func show(_ prompt: Prompt?) {
        guard let prompt else { return print("  (no prompt due)") }
        print("  prompt \(prompt.context): \(prompt.content.title) [\(prompt.content.primaryAction)]")
    }

    /// A guest tracks five subscriptions; the sixth asks for an account.
    static func subscriptions(_ client: GuestModeClient) async throws {
        for index in 1...6 {
            let outcome = try await client.putRecord(
                ["name": "Service \(index)", "price": "4.99"], collection: "subscriptions", key: "s\(index)")
            switch outcome {
            case .done: try await client.track("subscription_added")
            case let .needsAccount(prompt) where index == 6:
                print("subscription 6: an account is needed")
                show(prompt)
                return
            default: throw Failed(description: "subscription \(index): \(outcome)")
            }
        }
        throw Failed(description: "the sixth subscription of a guest was not refused")
    }

    /// A guest writes a recipe, reads it back, and views it (the view is queued: nobody waits on it).
    static func recipes(_ client: GuestModeClient) async throws {
        struct Recipe: Codable, Equatable {
            var title: String
            var minutes: Int
        }
        let recipe = Recipe(title: "Pancakes", minutes: 20)
        guard case .done = try await client.putRecord(recipe, collection: "recipes", key: "pancakes") else {
            throw Failed(description: "the recipe was refused")
        }
        try await client.track("recipe_created")
        guard try await client.record(Recipe.self, collection: "recipes", key: "pancakes") == recipe else {
            throw Failed(description: "the recipe read back differs")
        }
        print("recipe written and read back")
        try await client.trackLater("recipe_viewed")
        show(try await client.nextPrompt())
    }

    /// A guest creates a habit and completes it three days running, reported offline-first.
    static func habits(_ client: GuestModeClient) async throws {
        guard case .done = try await client.putRecord(["name": "Read"], collection: "habits", key: "read") else {
            throw Failed(description: "the habit was refused")
        }
        try await client.track("habit_created")
        for day in ["2026-11-01", "2026-11-02", "2026-11-03"] {
            _ = try await client.putRecord(
                ["habit": "read", "day": day], collection: "completions", key: "read-\(day)")
            try await client.trackLater("habit_completed", props: ["day": day])
        }
        print("habit created and completed three days")
        show(try await client.nextPrompt())
    }

    /// A guest speaks 50 of its 60 free minutes, is refused 20 more with the paywall's prompt, and a
    /// session that already ended is recorded anyway, from the offline queue.
    static func voice(_ client: GuestModeClient) async throws {
        guard case let .done(status) = try await client.checkMeter("api_minutes", amount: 50) else {
            throw Failed(description: "50 of 60 free minutes were refused")
        }
        print("api_minutes: \(status.remaining ?? 0) of \(status.allowance ?? 0) left")
        _ = try await client.useMeter("api_minutes", amount: 50)
        try await client.track("command_spoken", count: 50)
        guard case let .meterExhausted(left, prompt) = try await client.useMeter("api_minutes", amount: 20) else {
            throw Failed(description: "20 minutes with 10 left were not refused")
        }
        print("20 more minutes refused: \(left.remaining ?? 0) left")
        show(prompt)
        try await client.useMeterLater("api_minutes", amount: 5)
    }
}
