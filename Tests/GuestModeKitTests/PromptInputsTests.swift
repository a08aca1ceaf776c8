import Foundation
import Testing

@testable import GuestModeKit
@testable import GuestModeSQLite

/// A prompt decision looks up only the collections and meters its rules
/// read, in their conditions or in their content's placeholders: counting a
/// collection nothing reads cost `prompt next` a look at every record the
/// user holds (`bench/results.md`).
@Suite("What a prompt decision reads")
struct PromptInputsTests {
    /// The voice profile, with a collection and a meter that only a rule's
    /// content names, a collection that only an experiment's copy names, and
    /// a collection and a meter nothing names.
    static let text = (try? template("voice"))?
        .replacingOccurrences(
            of: "collections:\n  commands:\n  settings:\n",
            with: "collections:\n  commands:\n  settings:\n  notes:\n  drafts:\n"
        )
        .replacingOccurrences(
            of: "meters:\n  api_minutes:\n",
            with:
                "meters:\n  tokens:\n    unit: tokens\n    reset: never\n  credits:\n    unit: credits\n    reset: never\n  api_minutes:\n"
        )
        .replacingOccurrences(
            of: "  guest:\n    meters:\n      api_minutes: 60\n",
            with: "  guest:\n    caps:\n      notes: 5\n    meters:\n      api_minutes: 60\n      tokens: 100\n"
        )
        .replacingOccurrences(
            of: "benefits: [Unlimited minutes, Your settings on every device]",
            with:
                "benefits: [Unlimited minutes, '{limit.notes.used} of {limit.notes.max} notes', '{meter.tokens.remaining} tokens', '{{limit.settings.used}} stays as written']"
        )
        .replacingOccurrences(
            of: "backup:\n",
            with: """
                experiments:
                  copy:
                    seed: copy
                    coverage: 1
                    variants:
                      - name: drafts
                        weight: 1
                        content:
                          minutes_paywall:
                            message: You keep your {limit.drafts.used} drafts.
                backup:

                """)

    @Test("the collections and meters named in conditions, content and experiments' copy, and no other")
    func whatIsRead() throws {
        let text = try #require(Self.text)
        let profile = try ProfileLoader.parse(text, file: "voice.yaml")
        let read = profile.promptInputs
        #expect(read.collections.isSuperset(of: ["notes", "drafts"]) && !read.collections.contains("commands"))
        #expect(read.meters == ["api_minutes", "tokens"])
        // Only the conditions, for a decision whose content is not shown.
        #expect(profile.prompts.conditionInputs.collections.isEmpty)
        #expect(profile.prompts.conditionInputs.meters == ["api_minutes"])
        // The templates as they ship: voice's rules name no collection.
        let voice = try ProfileLoader.parse(try template("voice"), file: "voice.yaml")
        #expect(voice.promptInputs.collections.isEmpty)
        #expect(voice.promptInputs.meters == ["api_minutes"])
        let subscriptions = try ProfileLoader.parse(try template("subscriptions"), file: "subscriptions.yaml")
        #expect(subscriptions.promptInputs.collections == ["subscriptions"])
    }

    @Test("an engine keeps what its decisions read, each kind apart, whichever is asked first")
    func theEngineKeepsEachKindApart() throws {
        let profile = try ProfileLoader.parse(try #require(Self.text), file: "voice.yaml")
        let shown = profile.promptInputs
        let decided = profile.prompts.conditionInputs
        #expect(shown != decided)
        for decidedFirst in [true, false] {
            let reads = PromptReads()
            for onlyWhatRulesRead in [decidedFirst, !decidedFirst, decidedFirst, !decidedFirst] {
                let inputs = reads.inputs(of: profile, onlyWhatRulesRead: onlyWhatRulesRead)
                #expect(inputs == (onlyWhatRulesRead ? decided : shown))
            }
        }
    }

    /// An engine over an in-memory store bound to `text`.
    static func engine() throws -> (GuestMode, Profile, SQLiteStore) {
        let text = try #require(Self.text)
        let profile = try ProfileLoader.parse(text, file: "voice.yaml")
        let store = try SQLiteStore.inMemory()
        try store.bindProfile(text: text, origin: "voice.yaml", now: day(1))
        return (GuestMode(profile: profile, store: store), profile, store)
    }

    /// A server makes an engine over each request's transaction: what the
    /// engine kept is the server's, not worked out again for every request.
    @Test("the engine a server key's transaction runs shares what its engine kept")
    func aRequestsEngineSharesTheReads() throws {
        let (engine, profile, store) = try Self.engine()
        let issued = try engine.createServerKey(named: "app", scope: .userData, now: day(1))
        for writing in [false, true] {
            let shared = try engine.asServerKey(issued.secret, writing: writing) { _, inner in
                inner.promptReads === engine.promptReads
            }
            #expect(shared == true)
        }
        #expect(GuestMode(profile: profile, store: store).promptReads !== engine.promptReads)
    }

    @Test("a collection and a meter named only in a prompt's content are filled in it; others are not looked up")
    func contentPlaceholdersAreFilled() throws {
        let (engine, profile, store) = try Self.engine()
        try store.createUser(newUser("u"), credentials: nil)
        for index in 1...3 {
            _ = try engine.putRecord(user: "u", collection: "notes", key: "n\(index)", json: "{}", now: day(1))
        }
        _ = try engine.putRecord(user: "u", collection: "commands", key: "c", json: "{}", now: day(1))
        _ = try engine.useMeter(user: "u", meter: "tokens", amount: 30, key: nil, now: day(1))
        _ = try engine.useMeter(user: "u", meter: "api_minutes", amount: 60, key: nil, now: day(1))

        let facts = try #require(
            try store.read { try $0.promptSnapshot(of: "u", profile: profile, reads: engine.promptReads, now: day(2)) })
        #expect(facts.limits["notes"] != nil && facts.limits["drafts"] != nil && facts.limits["commands"] == nil)
        #expect(facts.limits["notes"]?.used == 3)
        #expect(Set(facts.meters.keys) == ["api_minutes", "tokens"])

        let explanation = try engine.explainPrompt(user: "u", trigger: nil, now: day(2))
        let offer = try #require(explanation.offer)
        #expect(offer.context == "minutes_paywall")
        let benefits = offer.content.benefits
        #expect(offer.variants.map(\.variant) == ["drafts"])
        #expect(offer.content.message == "You keep your 0 drafts.")
        #expect(benefits.contains("3 of 5 notes"), "\(benefits)")
        #expect(benefits.contains("70 tokens"), "\(benefits)")
        #expect(benefits.contains("{limit.settings.used} stays as written"), "\(benefits)")
    }
}
