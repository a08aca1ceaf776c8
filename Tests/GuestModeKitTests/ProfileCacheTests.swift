import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit

/// The validated profile a store keeps (see `ProfileCache`) must give back
/// exactly the profile the YAML parse gives, and anything stale or damaged
/// must be a miss.
@Suite struct ProfileCacheTests {
    static let templates = ["habits", "recipes", "subscriptions", "voice"]

    @Test(arguments: templates) func encodeThenDecodeGivesTheParsedProfile(name: String) throws {
        let text = try template(name)
        let profile = try ProfileLoader.parse(text, file: "\(name).yaml")
        let entry = try ProfileCache.entry(for: profile, text: text)
        let decoded = try #require(ProfileCache.profile(from: entry, text: text))
        #expect(decoded == profile)
        #expect(entry.seal.count == 64)
    }

    @Test func theBackupFixtureProfileComesBackEqual() throws {
        let text = try backupFixtureProfile()
        let profile = try ProfileLoader.parse(text, file: "habits-backup.yaml")
        let entry = try ProfileCache.entry(for: profile, text: text)
        #expect(ProfileCache.profile(from: entry, text: text) == profile)
    }

    /// A profile with every case of every enum and every optional both set
    /// and unset, so no type of the form goes unread.
    static func everyCaseProfile() throws -> Profile {
        var profile = try ProfileLoader.parse(try template("subscriptions"), file: "subscriptions.yaml")
        let atLeast = Comparison(comparator: .atLeast, value: 2.5)
        profile.version = 7
        profile.allowsFreeFormActions.toggle()
        profile.meters.append(
            Meter(
                name: "tokens", unit: "tokens", reset: .daily,
                warnings: [
                    MeterWarning(percent: 33.3, level: .warning), MeterWarning(percent: 1e-7, level: .critical),
                ],
                overage: .allow))
        profile.tiers[0].caps["notes"] = 3
        profile.tiers[0].allowances["tokens"] = 0.1
        profile.plans.append(
            Plan(
                name: "odd", price: Decimal(string: "12.345")!, currency: "EUR",
                billingPeriod: try TimeSpan.parse("P1DT12H").get(), trial: nil, tier: .account))
        profile.plans.append(
            Plan(
                name: "free", price: 0, currency: "USD", billingPeriod: TimeSpan(amount: 1, unit: .years),
                trial: TimeSpan(amount: 2, unit: .weeks), tier: .premium))
        profile.prompts.cooldown = try TimeSpan.parse("1h30m").get()
        profile.prompts.window = nil
        profile.prompts.maximumShownPerWindow = nil
        profile.prompts.triggers = [
            PromptTrigger(name: "full", source: .collection("notes", outcome: .needsAccount)),
            PromptTrigger(name: "any", source: .collection("notes", outcome: nil)),
            PromptTrigger(name: "dry", source: .meter("tokens")),
        ]
        profile.prompts.rules.append(
            PromptRule(
                context: "everything", priority: .critical, isOnce: true,
                reshowAfter: TimeSpan(amount: 90, unit: .seconds), trigger: "full",
                conditions: [
                    .counter(action: "open", comparison: atLeast),
                    .daysSinceFirstSeen(Comparison(comparator: .below, value: -1)),
                    .state(.anonymous), .state(.linked),
                    .limitReached(collection: "notes", outcome: .needsPremium),
                    .limitReached(collection: "notes", outcome: nil),
                    .limitRemaining(collection: "notes", comparison: Comparison(comparator: .equals, value: 0)),
                    .meterPercentUsed(meter: "tokens", comparison: Comparison(comparator: .above, value: 99.9)),
                    .meterRemaining(meter: "tokens", comparison: Comparison(comparator: .atMost, value: 1e21)),
                    .meterExhausted(meter: "tokens"),
                ],
                content: PromptContent(
                    title: "T \"quoted\"\n", message: "é 🚀", benefits: [], primaryAction: "Yes",
                    secondaryAction: "", style: "sheet"),
                kind: .upgrade))
        profile.experiments.append(
            Experiment(
                name: "copy", seed: "s", coverage: 0.75,
                variants: [
                    Variant(name: "a", weight: 1, promptCooldown: nil, enabledContexts: nil, contentOverrides: [:]),
                    Variant(
                        name: "b", weight: 2.5, promptCooldown: TimeSpan(amount: 3, unit: .days),
                        enabledContexts: ["everything"],
                        contentOverrides: [
                            "everything": PromptContentOverride(title: "Other", benefits: ["more"]),
                            "none": PromptContentOverride(),
                        ]),
                ]))
        profile.upgrade = ProfileUpgrade(
            fromVersion: 6,
            steps: [
                .renameCollection(from: "old", to: "notes"),
                .renameField(collection: "notes", from: "body", to: "text"),
            ])
        profile.webhooks = WebhookSettings(
            endpoints: [
                WebhookEndpoint(
                    name: "ops", url: "https://hooks.example.com/g", events: WebhookEventType.allCases,
                    secret: .file("/run/secret")),
                WebhookEndpoint(
                    name: "local", url: "http://127.0.0.1:9/", events: [], secret: .environment("HOOK_SECRET")),
            ],
            maxAttempts: 3)
        return profile
    }

    @Test func everyCaseComesBackEqual() throws {
        let text = "every case"
        let profile = try Self.everyCaseProfile()
        let entry = try ProfileCache.entry(for: profile, text: text)
        #expect(ProfileCache.profile(from: entry, text: text) == profile)
        // Without webhooks or an upgrade too.
        var plain = profile
        plain.upgrade = nil
        plain.webhooks = WebhookSettings()
        let plainEntry = try ProfileCache.entry(for: plain, text: text)
        #expect(ProfileCache.profile(from: plainEntry, text: text) == plain)
    }

    @Test func aNumberThatIsNotFiniteIsNotCached() throws {
        var profile = try ProfileLoader.parse(try template("voice"), file: "voice.yaml")
        profile.experiments = [Experiment(name: "x", seed: "s", coverage: .nan, variants: [])]
        #expect(throws: ProfileCacheCodec.Mismatch.self) { try ProfileCache.entry(for: profile, text: "t") }
    }

    /// The entry's JSON changed by `edit` and sealed again, so only the decoding can refuse it.
    static func resealed(
        _ entry: ProfileCacheEntry, text: String, _ edit: (inout [String: JSONValue]) -> Void
    ) throws
        -> ProfileCacheEntry
    {
        guard case .object(var members) = try StrictJSON.parse(entry.json) else {
            Issue.record("the cached JSON is not an object")
            return entry
        }
        edit(&members)
        let json = JSONValue.object(members).canonicalText
        return ProfileCacheEntry(seal: ProfileCache.seal(text: text, json: json), json: json)
    }

    @Test func aWellSealedEntryOfTheWrongShapeIsAMiss() throws {
        let text = "every case"
        let profile = try Self.everyCaseProfile()
        let entry = try ProfileCache.entry(for: profile, text: text)
        // The unchanged entry, resealed, is still a hit: the edits below are what makes each a miss.
        #expect(try ProfileCache.profile(from: Self.resealed(entry, text: text) { _ in }, text: text) == profile)
        func nested(
            _ name: String, _ edit: @escaping (inout [String: JSONValue]) -> Void
        ) -> (
            inout [String: JSONValue]
        ) -> Void {
            { members in
                guard case .object(var inner) = members[name] else { return }
                edit(&inner)
                members[name] = .object(inner)
            }
        }
        let edits: [(String, (inout [String: JSONValue]) -> Void)] = [
            ("a field of the wrong type", { $0["version"] = .string("7") }),
            ("a fraction for an integer", { $0["version"] = .number("7.0") }),
            ("a number for a boolean", { $0["allowsFreeFormActions"] = .number("1") }),
            ("a number for a string", nested("backup") { $0["format"] = .number("1") }),
            (
                "an unknown raw value",
                { members in
                    guard case .array(var tiers) = members["tiers"], case .object(var first) = tiers.first else {
                        return
                    }
                    first["level"] = .string("gold")
                    tiers[0] = .object(first)
                    members["tiers"] = .array(tiers)
                }
            ),
            ("an unknown field", { $0["extra"] = .null }),
            ("an unknown nested field", nested("identity") { $0["extra"] = .bool(true) }),
            ("a missing field", { $0["webhooks"] = nil }),
            ("a missing optional (absent, not null)", { $0["upgrade"] = nil }),
            ("a null for a required object", { $0["prompts"] = .null }),
            ("an unknown enum case", nested("upgrade") { $0["steps"] = .array([.object(["case": .string("drop")])]) }),
            (
                "a payload case with an extra member",
                nested("upgrade") {
                    $0["steps"] = .array([
                        .object([
                            "case": .string("renameCollection"), "from": .string("a"), "to": .string("b"), "x": .null,
                        ])
                    ])
                }
            ),
            ("a non-canonical number", nested("identity") { $0["maximumProvidersPerUser"] = .number("2e0") }),
            (
                "a span out of order",
                nested("prompts") {
                    $0["cooldown"] = .array([
                        .object(["amount": .number("30"), "unit": .string("minutes")]),
                        .object(["amount": .number("1"), "unit": .string("hours")]),
                    ])
                }
            ),
            ("no tiers", { $0["tiers"] = .array([]) }),
        ]
        for (what, edit) in edits {
            let damaged = try Self.resealed(entry, text: text, edit)
            #expect(damaged.json != entry.json, "\(what)")
            #expect(ProfileCache.profile(from: damaged, text: text) == nil, "\(what)")
        }
    }

    @Test func anEntryInTheOldCodableFormIsAMiss() throws {
        let text = try template("voice")
        let profile = try ProfileLoader.parse(text, file: "voice.yaml")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(profile), as: UTF8.self)
        // Sealed as the older guestmode sealed it (no format), and as this one would.
        let oldSeal = StreamingSHA256.hex(of: Array(text.utf8) + [0] + Array(json.utf8))
        #expect(ProfileCache.profile(from: ProfileCacheEntry(seal: oldSeal, json: json), text: text) == nil)
        let resealed = ProfileCacheEntry(seal: ProfileCache.seal(text: text, json: json), json: json)
        #expect(ProfileCache.profile(from: resealed, text: text) == nil)
    }

    @Test func anEntryForOtherTextIsAMiss() throws {
        let voice = try template("voice")
        let habits = try template("habits")
        let entry = try ProfileCache.entry(for: try ProfileLoader.parse(habits, file: "habits.yaml"), text: habits)
        #expect(ProfileCache.profile(from: entry, text: voice) == nil)
        #expect(ProfileCache.profile(from: nil, text: voice) == nil)
    }

    @Test func aDamagedEntryIsAMiss() throws {
        let text = try template("voice")
        let profile = try ProfileLoader.parse(text, file: "voice.yaml")
        let entry = try ProfileCache.entry(for: profile, text: text)
        // The JSON edited, the seal left as it was.
        var edited = entry
        edited.json = entry.json.replacingOccurrences(of: "\"premium\"", with: "\"account\"")
        #expect(edited.json != entry.json)
        #expect(ProfileCache.profile(from: edited, text: text) == nil)
        // Truncated JSON, even freshly sealed, does not decode.
        let truncated = String(entry.json.prefix(entry.json.count / 2))
        let resealed = ProfileCacheEntry(seal: ProfileCache.seal(text: text, json: truncated), json: truncated)
        #expect(ProfileCache.profile(from: resealed, text: text) == nil)
        // A wrong seal.
        #expect(ProfileCache.profile(from: ProfileCacheEntry(seal: "0", json: entry.json), text: text) == nil)
    }

    /// The cache reads a price without asking `Decimal.description` when its text is plain; that is
    /// only right if `description` writes every plain text back unchanged, which this checks against
    /// Foundation: every text of up to five characters of digits, point and minus, and long ones.
    @Test func plainDecimalTextIsWhatDescriptionWrites() throws {
        let alphabet = Array("0123456789.-")
        var texts = [""]
        var plain = 0
        for _ in 1...5 {
            texts = texts.flatMap { prefix in alphabet.map { prefix + String($0) } }
            for text in texts where ProfileCacheCodec.isPlainDecimal(text) {
                plain += 1
                #expect(Decimal(string: text, locale: nil)?.description == text, "\(text)")
            }
        }
        #expect(plain > 50_000)
        var generator = SystemRandomNumberGenerator()
        for digits in 1...38 {
            for _ in 0..<40 {
                var text = String((0..<digits).map { _ in "0123456789".randomElement(using: &generator)! })
                let point = Int.random(in: 0...digits, using: &generator)
                if point > 0 && point < digits { text.insert(".", at: text.index(text.startIndex, offsetBy: point)) }
                if Bool.random(using: &generator) { text = "-" + text }
                if ProfileCacheCodec.isPlainDecimal(text) {
                    #expect(Decimal(string: text, locale: nil)?.description == text, "\(text)")
                }
            }
        }
        let largest = String(repeating: "9", count: 38)
        for text in [
            largest, "-" + largest, "0." + String(repeating: "9", count: 37), "1" + String(repeating: "0", count: 37),
        ] {
            #expect(ProfileCacheCodec.isPlainDecimal(text), "\(text)")
            #expect(Decimal(string: text, locale: nil)?.description == text, "\(text)")
        }
        for text in [
            "", "-", ".", "-0", "-0.0", "0.0", "00", "01", "1.50", "1.", ".5", "+1", "1e2", "1.2.3", " 1", "1 ", "٣",
            largest + "9", "0." + String(repeating: "1", count: 38),
        ] {
            #expect(!ProfileCacheCodec.isPlainDecimal(text), "\(text)")
        }
    }

    @Test func aPriceNotWrittenAsItsDescriptionIsAMiss() throws {
        let text = try template("subscriptions")
        let profile = try ProfileLoader.parse(text, file: "subscriptions.yaml")
        let entry = try ProfileCache.entry(for: profile, text: text)
        let price = try #require(profile.plans.first { $0.price.description.contains(".") }?.price.description)
        // The same value, written otherwise: a trailing zero, a leading zero, an exponent.
        for written in [price + "0", "0" + price, price + "e0"] {
            let json = entry.json.replacingOccurrences(of: "\"price\":\"\(price)\"", with: "\"price\":\"\(written)\"")
            try #require(json != entry.json, "the price \(price) is not in the cached JSON")
            let altered = ProfileCacheEntry(seal: ProfileCache.seal(text: text, json: json), json: json)
            #expect(ProfileCache.profile(from: altered, text: text) == nil, "\(written)")
        }
    }

    @Test func theSealIsTheSHA256OfFormatTextAndJSON() {
        // printf 'guestmode-profile-cache-2\0a\0b' | sha256sum
        #expect(
            ProfileCache.seal(text: "a", json: "b")
                == "cde57fa1d68a88c35860040249316ede8a430eb16e3d13edf8ba7195048f77b7")
    }
}
