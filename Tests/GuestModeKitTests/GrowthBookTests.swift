import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// GrowthBook's own SDK test vectors (see Fixtures/growthbook-cases.json).
private struct Cases {
    let document: [String: Any]

    init() throws {
        let url = try #require(
            Bundle.module.url(forResource: "growthbook-cases", withExtension: "json", subdirectory: "Fixtures"))
        document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    }

    func section(_ name: String) -> [[Any]] { document[name] as? [[Any]] ?? [] }
}

private func ranges(_ value: Any) -> [Range<Double>] {
    (value as? [[Double]] ?? []).map { $0[0]..<$0[1] }
}

@Suite struct GrowthBookTests {
    @Test func hashMatchesTheSDKVectors() throws {
        let cases = try Cases().section("hash")
        #expect(cases.count == 15)
        for vector in cases {
            let seed = vector[0] as! String, value = vector[1] as! String, version = vector[2] as! Int
            let expected = vector[3] as? Double
            #expect(GrowthBookHash.hash(seed: seed, value: value, version: version) == expected, "\(vector)")
        }
    }

    @Test func bucketRangesMatchTheSDKVectors() throws {
        let cases = try Cases().section("getBucketRange")
        #expect(cases.count == 13)
        for vector in cases {
            let arguments = vector[1] as! [Any]
            let computed = GrowthBookHash.bucketRanges(
                count: arguments[0] as! Int, coverage: (arguments[1] as! NSNumber).doubleValue,
                weights: arguments[2] as? [Double])
            let expected = ranges(vector[2])
            #expect(computed.count == expected.count, "\(vector[0])")
            // The SDK's own tests compare ranges rounded to 6 places: sums like 0.2 + 0.3 are not exact.
            for (lhs, rhs) in zip(computed, expected) {
                #expect(
                    abs(lhs.lowerBound - rhs.lowerBound) < 1e-6 && abs(lhs.upperBound - rhs.upperBound) < 1e-6,
                    "\(vector[0])")
            }
        }
    }

    @Test func chooseVariationMatchesTheSDKVectors() throws {
        let cases = try Cases().section("chooseVariation")
        #expect(cases.count == 13)
        for vector in cases {
            let bucket = (vector[1] as! NSNumber).doubleValue
            let expected = vector[3] as! Int
            #expect(
                GrowthBookHash.chooseVariation(bucket, ranges: ranges(vector[2])) == (expected < 0 ? nil : expected),
                "\(vector[0])")
        }
    }

    @Test func aHundredThousandUsersSplitWithinOnePercentOfTheWeights() throws {
        let profile = try ProfileLoader.parse(try template("recipes"), file: "recipes.yaml")
        let experiment = try #require(profile.experiment(named: "auth_prompts"))
        var counts: [String: Int] = [:]
        let users = 100_000
        for index in 0..<users {
            counts[experiment.variant(for: "user-\(index)")?.name ?? "none", default: 0] += 1
        }
        #expect(counts["none"] == nil)
        for variant in experiment.variants {
            let share = Double(counts[variant.name] ?? 0) / Double(users)
            #expect(abs(share - variant.weight) < 0.01, "\(variant.name): \(share)")
        }
    }

    @Test func coverageLeavesUsersOutWithoutMovingTheOthers() throws {
        var experiment = Experiment(
            name: "e", seed: "e", coverage: 1,
            variants: [Variant(name: "a", weight: 0.5), Variant(name: "b", weight: 0.5)])
        let full = (0..<2000).map { experiment.variant(for: "u\($0)")?.name }
        experiment.coverage = 0.5
        let half = (0..<2000).map { experiment.variant(for: "u\($0)")?.name }
        for (before, after) in zip(full, half) where after != nil { #expect(after == before) }
        let outside = half.filter { $0 == nil }.count
        #expect(abs(Double(outside) / 2000 - 0.5) < 0.05)
    }

    @Test func assignmentsAreStickyWhenWeightsChange() throws {
        let text = try template("recipes")
        let now = Timestamp.parse("2026-11-01T00:00:00Z")!
        let engine = try GuestMode.inMemory(profileText: text, origin: "recipes.yaml", now: now)
        try engine.store.createUser(
            User(
                id: "u", device: nil, state: .anonymous, promptState: "anonymous", createdAt: now, lastSeenAt: now,
                linkedAt: nil),
            credentials: nil)
        let first = try #require(try engine.assignExperiments(user: "u", named: "auth_prompts", now: now).first)
        #expect(first.isNew)
        var reweighted = engine.profile
        reweighted.experiments[0].variants = reweighted.experiments[0].variants.map { variant in
            var changed = variant
            changed.weight = variant.name == first.variant ? 0 : 0.25
            return changed
        }
        let later = GuestMode(profile: reweighted, store: engine.store)
        let again = try #require(
            try later.assignExperiments(user: "u", named: nil, now: now.addingTimeInterval(60)).first)
        #expect(again.variant == first.variant)
        #expect(!again.isNew)
        #expect(again.assignedAt == first.assignedAt)
    }
}

extension Variant {
    init(name: String, weight: Double) {
        self.init(name: name, weight: weight, promptCooldown: nil, enabledContexts: nil)
    }
}
