import Foundation
import Testing

@testable import GuestModeKit
@testable import GuestModeSQLite

/// The documents a server writes without `Codable` (`JSONWritable`) are the `Codable` documents byte for byte:
/// the engine's own answers on every profile, and values drawn at random with every field's edge cases.
@Suite struct JSONWriterTests {
    /// The writer's document against the encoder's, compact and pretty.
    static func expectSameDocument<Value: Encodable & JSONWritable>(
        _ value: Value, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        for pretty in [true, false] {
            let encoded = try JSONDocument.encodeLine(value, pretty: pretty)
            let written = try JSONWriter.document(value, pretty: pretty, lineEnd: true)
            #expect(written == encoded, sourceLocation: sourceLocation)
        }
    }

    @Test func theEnginesAnswersAreWrittenAsTheyAreEncoded() throws {
        var documents = 0
        var reasonsWithATime = 0
        for name in ["habits", "recipes", "subscriptions", "voice"] {
            let (store, profile) = try StoreBackend.sqlite.makeStore(profile: name)
            let engine = GuestMode(profile: profile, store: store)
            let guest = try engine.createGuest(device: nil, now: day(1))
            for meter in profile.meters {
                for (index, amount) in ["0.5", "12.25", "45", "0.000001", "3"].enumerated() {
                    let amount = try MeterAmount(parsing: amount)
                    _ = try engine.useMeter(
                        user: guest.id, meter: meter.name, amount: amount, key: nil, now: day(1 + index))
                    try Self.expectSameDocument(
                        try engine.checkMeter(user: guest.id, meter: meter.name, amount: amount, now: day(1 + index)))
                    try Self.expectSameDocument(
                        try engine.checkMeter(user: guest.id, meter: meter.name, amount: nil, now: day(1 + index)))
                    documents += 2
                }
            }
            for collection in profile.collections.map(\.name) {
                let data =
                    #"{"title":"Ünïcode \"quoted\"\n","n":[1.50,null,true,{"deep":{}}],"e":[],"z":12345678901234567890}"#
                _ = try engine.putRecord(user: guest.id, collection: collection, key: "k1", json: data, now: day(2))
                try Self.expectSameDocument(try engine.record(user: guest.id, collection: collection, key: "k1"))
                documents += 1
            }
            for trigger in [nil] + profile.prompts.triggers.map(\.name) {
                for dayNumber in [1, 3, 25] {
                    let explanation = try engine.explainPrompt(user: guest.id, trigger: trigger, now: day(dayNumber))
                    try Self.expectSameDocument(explanation)
                    if let offer = explanation.offer {
                        try Self.expectSameDocument(offer)
                        _ = try engine.recordPrompt(
                            .dismissed, context: offer.context, user: guest.id, now: day(dayNumber))
                        // A cooldown or a full window now: a reason with its time.
                        let quiet = try engine.explainPrompt(user: guest.id, trigger: trigger, now: day(dayNumber))
                        try Self.expectSameDocument(quiet)
                        if quiet.quiet?.eligibleAt != nil { reasonsWithATime += 1 }
                        documents += 2
                    }
                    documents += 1
                }
            }
        }
        #expect(documents > 60 && reasonsWithATime > 0)
    }

    @Test func valuesDrawnAtRandomAreWrittenAsTheyAreEncoded() throws {
        var random = SplitMix64(state: 36)
        for _ in 0..<400 {
            try Self.expectSameDocument(MeterDecision.drawn(&random))
            try Self.expectSameDocument(PromptExplanation.drawn(&random))
            try Self.expectSameDocument(PromptOffer.drawn(&random))
            try Self.expectSameDocument(
                StoredRecord(
                    owner: .drawn(&random), collection: .drawn(&random), key: .drawn(&random),
                    data: JSONValue.object([(String.drawn(&random), .string(.drawn(&random)))]).canonicalText,
                    createdAt: .drawn(&random), updatedAt: .drawn(&random)))
        }
    }

    @Test func aDocumentLargerThanTheWritersFirstBufferIsWrittenWhole() throws {
        let long = String(repeating: "a \"quoted\" line\n", count: 8_000)
        let grant = MeterGrant(
            id: 1, userID: long, meter: "m", amount: 1, used: 0, remaining: 1, grantedAt: day(1), expiresAt: nil,
            revokedAt: nil, reason: long, state: .active)
        let status = MeterStatus(
            meter: "m", unit: "u", tier: .guest, used: 0, allowance: nil, remaining: nil, percentUsed: nil,
            level: .none, periodStart: nil, grants: Array(repeating: grant, count: 3))
        try Self.expectSameDocument(MeterDecision(isAllowed: true, requested: 1, status: status))
        let data = JSONValue.object((0..<2_000).map { ("key\($0)", .string(long.prefix($0).description)) })
        try Self.expectSameDocument(
            StoredRecord(
                owner: "u", collection: "c", key: "k", data: data.canonicalText, createdAt: day(1),
                updatedAt: day(1)))
    }

    @Test func anAmountIsWrittenWithItsOwnDigits() {
        let edges: [Int64] = [0, 1, -1, 10, 100_000, 999_999, 1_000_000, 1_000_001, -1_500_000, .max, .min, .min + 1]
        var random = SplitMix64(state: 7)
        let drawn = (0..<2_000).map { _ in Int64(bitPattern: random.next()) >> Int64.random(in: 0...62, using: &random)
        }
        for millionths in edges + drawn {
            var writer = JSONWriter(pretty: false)
            let amount = MeterAmount(millionths: millionths)
            writer.write(amount)
            #expect(writer.text == amount.description)
        }
    }

    @Test func aRecordWhoseDataIsNotJSONIsRefusedAsTheEncoderRefusesIt() {
        let record = StoredRecord(
            owner: "u", collection: "c", key: "k", data: "{", createdAt: day(1), updatedAt: day(1))
        #expect(throws: EncodingError.self) { try JSONWriter.document(record, lineEnd: true) }
        #expect(throws: EncodingError.self) { try JSONDocument.encodeLine(record) }
    }
}

extension String {
    /// Texts that need every kind of escape, and none.
    static let samples = [
        "", "plain", "with \"quotes\"", "back\\slash", "line\nbreak\r\n", "\u{01}\u{1F}\u{7F}", "tab\t", "Ünïcödé",
        "emoji 🎙️", "/slash", String(repeating: "long text ", count: 12),
    ]

    static func drawn(_ random: inout SplitMix64) -> String { samples.randomElement(using: &random)! }
}

extension Date {
    static func drawn(_ random: inout SplitMix64) -> Date {
        switch Int.random(in: 0..<8, using: &random) {
        case 0: .distantPast
        case 1: .distantFuture
        case 2: Date(timeIntervalSince1970: 0.0005)
        default: Date(timeIntervalSince1970: Double.random(in: -1e10...1e10, using: &random))
        }
    }
}

extension Optional {
    static func drawn(_ random: inout SplitMix64, _ some: (inout SplitMix64) -> Wrapped) -> Wrapped? {
        Bool.random(using: &random) ? some(&random) : nil
    }
}

extension Double {
    static func drawn(_ random: inout SplitMix64) -> Double {
        [0, 1, -0.0, 91.666_666_666_666_66, 5.551_115_123_125_783e-17, 1e20, -3.5e15, .nan, .infinity, 0.999_999_5]
            .randomElement(using: &random)!
            + (Bool.random(using: &random) ? 0 : Double.random(in: 0..<1, using: &random))
    }
}

extension CaseIterable {
    static func drawn(_ random: inout SplitMix64) -> Self { allCases.randomElement(using: &random)! }
}

extension MeterAmount {
    static func drawn(_ random: inout SplitMix64) -> MeterAmount {
        MeterAmount(millionths: Int64(bitPattern: random.next()) >> Int64.random(in: 0...63, using: &random))
    }
}

extension Array {
    static func drawn(_ random: inout SplitMix64, _ element: (inout SplitMix64) -> Element) -> [Element] {
        (0..<Int.random(in: 0...3, using: &random)).map { _ in element(&random) }
    }
}

extension MeterDecision {
    static func drawn(_ random: inout SplitMix64) -> MeterDecision {
        let grants = [MeterGrant].drawn(&random) { random in
            MeterGrant(
                id: Int64(bitPattern: random.next()), userID: .drawn(&random), meter: .drawn(&random),
                amount: .drawn(&random), used: .drawn(&random), remaining: .drawn(&random), grantedAt: .drawn(&random),
                expiresAt: .drawn(&random, Date.drawn), revokedAt: .drawn(&random, Date.drawn),
                reason: .drawn(&random, String.drawn), state: .drawn(&random))
        }
        let status = MeterStatus(
            meter: .drawn(&random), unit: .drawn(&random), tier: .drawn(&random), used: .drawn(&random),
            allowance: .drawn(&random, MeterAmount.drawn), remaining: .drawn(&random, MeterAmount.drawn),
            percentUsed: .drawn(&random, Double.drawn), level: .drawn(&random),
            periodStart: .drawn(&random, Date.drawn),
            granted: .drawn(&random), grants: grants)
        return MeterDecision(isAllowed: .random(using: &random), requested: .drawn(&random), status: status)
    }
}

extension ExperimentAssignment {
    static func drawn(_ random: inout SplitMix64) -> ExperimentAssignment {
        ExperimentAssignment(
            experiment: .drawn(&random), variant: .drawn(&random, String.drawn), bucket: .drawn(&random),
            assignedAt: .drawn(&random, Date.drawn), isNew: .random(using: &random))
    }
}

extension PromptOffer {
    static func drawn(_ random: inout SplitMix64) -> PromptOffer {
        PromptOffer(
            user: .drawn(&random), context: .drawn(&random), priority: .drawn(&random),
            trigger: .drawn(&random, String.drawn),
            content: PromptContent(
                title: .drawn(&random), message: .drawn(&random), benefits: .drawn(&random, String.drawn),
                primaryAction: .drawn(&random), secondaryAction: .drawn(&random), style: .drawn(&random)),
            variants: .drawn(&random, ExperimentAssignment.drawn))
    }
}

extension PromptExplanation {
    static func drawn(_ random: inout SplitMix64) -> PromptExplanation {
        let quiet: [QuietReason] = [
            .linked, .authenticated, .neverAsk, .cooldown(until: .drawn(&random)),
            .windowFull(shown: 3, window: TimeSpan(amount: 7, unit: .days), until: .drawn(&random)), .noEligibleRule,
        ]
        let rules = [RuleExplanation].drawn(&random) { random in
            RuleExplanation(
                context: .drawn(&random), priority: .drawn(&random), kind: .drawn(&random),
                isEligible: .random(using: &random), verdict: .drawn(&random), message: .drawn(&random),
                eligibleAt: .drawn(&random, Date.drawn), condition: .drawn(&random, String.drawn))
        }
        return PromptExplanation(
            userID: .drawn(&random), isDue: .random(using: &random), decidedBy: .drawn(&random, String.drawn),
            offer: .drawn(&random, PromptOffer.drawn), quiet: .drawn(&random) { quiet.randomElement(using: &$0)! },
            rules: rules, variants: .drawn(&random, ExperimentAssignment.drawn))
    }
}
