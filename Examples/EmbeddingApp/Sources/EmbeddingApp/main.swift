import Foundation
import GuestModeKit
import GuestModeSQLite

// An app embedding guestmode: no command line, no exit statuses, only the
// engine (GuestModeKit) over a store (here SQLite in memory). It prints what
// it does and exits 1 if any answer is not the one expected.

// Top-level variables belong to the main actor, so the functions that change
// them run there too.
var failures = 0

@MainActor func expect(_ condition: Bool, _ what: String) {
    print(condition ? "  ok    \(what)" : "  FAIL  \(what)")
    if !condition { failures += 1 }
}

// The engine never reads the wall clock: the app passes the time of every
// call. A fixed one keeps this program's output the same on every run.
let now = Timestamp.parse("2026-11-01T10:00:00Z")!

// The built-in templates: a catalogue without directories falls back to the
// copies compiled into GuestModeKit. An app could also pass its own YAML text.
let templates = ProfileCatalog(directories: [])

/// A fresh in-memory store bound to a template, and the engine over it.
func engine(_ template: String) throws -> GuestMode {
    let source = try templates.load(template)
    return try GuestMode(
        store: SQLiteStore.inMemory(), profileText: source.text, origin: source.origin, now: now)
}

@MainActor func capsAndTheRefusal() throws {
    print("subscriptions: a guest keeps 5 subscriptions")
    let app = try engine("subscriptions")
    let guest = try app.createGuest(device: "phone-1", now: now)
    print("  guest \(guest.id) (\(guest.state.rawValue))")

    for number in 1...5 {
        let result = try app.putRecord(
            user: guest.id, collection: "subscriptions", key: "sub-\(number)",
            json: #"{"price": 4.99}"#, now: now)
        expect(
            result.outcome == .allowed && result.limit.used == number && result.limit.cap == 5,
            "subscription \(number) stored: \(result.limit.used ?? 0)/\(result.limit.cap ?? 0)")
    }

    // The sign-in prompt waits for the refusal that raises its trigger.
    let quiet = try app.nextPrompt(user: guest.id, trigger: nil, now: now)
    expect(quiet.offer == nil, "at 5 of 5 no prompt is due yet")

    // A refusal is an answer, not an error: nothing is written and the
    // outcome says what to ask the user for.
    let sixth = try app.putRecord(
        user: guest.id, collection: "subscriptions", key: "sub-6", json: "{}", now: now)
    expect(sixth.outcome == .needsAccount, "the 6th is refused: \(sixth.outcome.rawValue)")
    let kept = try app.records(user: guest.id, collection: "subscriptions")
    expect(kept.map(\.key) == (1...5).map { "sub-\($0)" }, "nothing was stored: still \(kept.count) records")

    // Replacing an existing key never counts against the cap.
    let replaced = try app.putRecord(
        user: guest.id, collection: "subscriptions", key: "sub-1", json: #"{"price": 5.49}"#, now: now)
    expect(replaced.outcome == .allowed && replaced.isReplacement, "replacing sub-1 is allowed at the cap")

    // The refusal raised the profile's trigger, so its sign-in prompt is due.
    let offer = try app.nextPrompt(user: guest.id, trigger: nil, now: now).offer
    expect(
        offer?.context == "guest_cap_reached" && offer?.trigger == "guest_cap_refused",
        "the refusal raised the sign-in prompt: \(offer?.content.primaryAction ?? "none")")

    // Linking keeps the id; the account's own cap applies from then on.
    _ = try app.link(user: guest.id, provider: "apple", subject: "001234.abcd", email: nil, now: now)
    let asAccount = try app.putRecord(
        user: guest.id, collection: "subscriptions", key: "sub-6", json: "{}", now: now)
    expect(asAccount.outcome == .needsPremium, "once linked, the 6th needs premium: \(asAccount.outcome.rawValue)")

    // Mistakes are thrown as GuestModeError: a kind to map (to an HTTP status,
    // say) and a stable code to match on.
    do {
        _ = try app.putRecord(user: guest.id, collection: "nope", key: "k", json: "{}", now: now)
        expect(false, "an unknown collection is refused")
    } catch let error as GuestModeError {
        expect(
            error.kind == .usage && error.code == .unknownCollection,
            "an unknown collection is refused: \(error.kind.rawValue)/\(error.code)")
    }
}

@MainActor func meteredCall() throws {
    print("voice: 60 free minutes, the gate before a paid call")
    let app = try engine("voice")
    let speaker = try app.createGuest(device: nil, now: now)

    let before = try app.checkMeter(user: speaker.id, meter: "api_minutes", amount: MeterAmount(units: 20), now: now)
    expect(before.isAllowed, "20 minutes may be spent: \(before.status.remaining?.description ?? "unlimited") left")

    let used = try app.useMeter(
        user: speaker.id, meter: "api_minutes", amount: MeterAmount(units: 45), key: "session-1", now: now)
    expect(used.isRecorded && used.isAllowed, "45 minutes recorded")
    expect(used.warnings.map(\.percent) == [75], "the 75 % warning fired once")

    // The same idempotency key again (a retried request) records nothing.
    let retried = try app.useMeter(
        user: speaker.id, meter: "api_minutes", amount: MeterAmount(units: 45), key: "session-1", now: now)
    expect(retried.isDuplicate && !retried.isRecorded, "a retry with the same key records nothing")

    let gate = try app.checkMeter(user: speaker.id, meter: "api_minutes", amount: MeterAmount(units: 20), now: now)
    expect(!gate.isAllowed, "20 more are refused: only \(gate.status.remaining?.description ?? "?") left")

    let refused = try app.useMeter(
        user: speaker.id, meter: "api_minutes", amount: MeterAmount(units: 20), key: "session-2", now: now)
    expect(!refused.isRecorded && !refused.isAllowed, "a use past the allowance records nothing")

    let status = try app.meterStatus(user: speaker.id, meter: "api_minutes", now: now)
    expect(
        status.used == MeterAmount(units: 45),
        "the meter stands at \(status.used) of \(status.allowance?.description ?? "unlimited")")
}

@MainActor func aStoreFileOpensAgain() throws {
    print("a store file: bound once, opened again with the profile it keeps")
    let path = NSTemporaryDirectory() + "embedding-app-\(UUID().uuidString).sqlite"
    defer { try? FileManager.default.removeItem(atPath: path) }
    let source = try templates.load("habits")
    var guestID = ""
    try SQLiteStore.create(path: path, replacing: false) { store in
        let app = try GuestMode(store: store, profileText: source.text, origin: source.origin, now: now)
        guestID = try app.createGuest(device: "tablet-1", now: now).id
    }
    let store = try SQLiteStore.open(path: path)
    defer { try? store.close() }
    let app = try GuestMode(store: store)
    expect(app.profile.name == "habits", "the store opens with its profile: \(app.profile.name)")
    expect(try app.user(guestID).state == .anonymous, "the guest created before is still there")
}

do {
    try capsAndTheRefusal()
    try meteredCall()
    try aStoreFileOpensAgain()
} catch {
    print("  FAIL  unexpected error: \(error)")
    failures += 1
}
if failures > 0 {
    print("\(failures) check(s) failed")
    exit(1)
}
print("every check passed")
