import Foundation

/// GrowthBook's published bucketing, so an app running a GrowthBook SDK on
/// the device computes the same variant as guestmode for the same seed and
/// user id. Checked against the SDK's own test vectors (`cases.json`).
package enum GrowthBookHash {
    /// FNV-1a, 32 bits, over UTF-16 code units: JavaScript's
    /// `charCodeAt`, which is what the reference SDK hashes.
    package static func fnv1a32(_ text: String) -> UInt32 {
        var value: UInt32 = 0x811C_9DC5
        for unit in text.utf16 {
            value ^= UInt32(unit)
            value = value &* 0x0100_0193
        }
        return value
    }

    /// A number in [0, 1): version 1 is `fnv(value + seed) % 1000 / 1000`
    /// (kept by GrowthBook for old experiments), version 2 is
    /// `fnv(decimal(fnv(seed + value))) % 10000 / 10000`; other versions
    /// have no hash.
    package static func hash(seed: String, value: String, version: Int) -> Double? {
        switch version {
        case 1: Double(fnv1a32(value + seed) % 1000) / 1000
        case 2: Double(fnv1a32(String(fnv1a32(seed + value))) % 10000) / 10000
        default: nil
        }
    }

    /// One half-open range of [0, 1) per variant: each variant owns
    /// `[start, start + coverage × weight)` where `start` is the sum of the
    /// weights before it, so lowering coverage never moves a user from one
    /// variant to another. Coverage is clamped to [0, 1]; weights of the
    /// wrong count or not adding up to 1 ± 0.01 fall back to equal weights.
    package static func bucketRanges(count: Int, coverage: Double, weights: [Double]?) -> [Range<Double>] {
        let coverage = min(max(coverage, 0), 1)
        let equal = count > 0 ? Array(repeating: 1 / Double(count), count: count) : []
        var chosen = weights ?? equal
        if chosen.count != count { chosen = equal }
        let total = chosen.reduce(0, +)
        if total < 0.99 || total > 1.01 { chosen = equal }
        var cumulative = 0.0
        return chosen.map { weight in
            let start = cumulative
            cumulative += weight
            return start..<(start + coverage * weight)
        }
    }

    /// The index of the range holding `bucket`, or nil when it falls in none
    /// (the user is outside the experiment's coverage).
    package static func chooseVariation(_ bucket: Double, ranges: [Range<Double>]) -> Int? {
        ranges.firstIndex { $0.contains(bucket) }
    }
}

extension Experiment {
    /// The hash version guestmode uses for every experiment.
    public static let hashVersion = 2

    /// The user's bucket in [0, 1): GrowthBook hash version 2 of the seed and user id.
    package func bucket(for userID: String) -> Double {
        GrowthBookHash.hash(seed: seed, value: userID, version: Experiment.hashVersion) ?? 0
    }

    /// The variant a user falls into by hash alone, or nil outside coverage.
    package func variant(for userID: String) -> Variant? {
        let ranges = GrowthBookHash.bucketRanges(
            count: variants.count, coverage: coverage, weights: variants.map(\.weight))
        return GrowthBookHash.chooseVariation(bucket(for: userID), ranges: ranges).map { variants[$0] }
    }
}

extension Experiment {
    /// The sticky rule in one place: a stored assignment wins, even over
    /// changed weights; otherwise the hash decides and `keep` stores it. A
    /// user outside coverage is neither enrolled nor stored.
    func assignment(
        for userID: String, stored: StoredAssignment?, keep: (String) throws -> StoredAssignment
    ) rethrows -> ExperimentAssignment {
        let bucket = bucket(for: userID)
        if let stored {
            return ExperimentAssignment(
                experiment: name, variant: stored.variant, bucket: bucket, assignedAt: stored.assignedAt, isNew: false)
        }
        guard let variant = variant(for: userID) else {
            return ExperimentAssignment(experiment: name, variant: nil, bucket: bucket, assignedAt: nil, isNew: false)
        }
        let kept = try keep(variant.name)
        return ExperimentAssignment(
            experiment: name, variant: kept.variant, bucket: bucket, assignedAt: kept.assignedAt, isNew: kept.isNew)
    }
}

/// A user's place in one experiment. `variant` is nil for a user outside
/// the experiment's coverage, who is not enrolled and not stored.
public struct ExperimentAssignment: Codable, Sendable, Equatable {
    /// The experiment's name.
    public var experiment: String
    /// The variant the user sees; nil outside the experiment's coverage.
    public var variant: String?
    /// The user's stable position in [0, 1) for this experiment, from its seed.
    public var bucket: Double
    /// When the user was first enrolled; nil when not enrolled.
    public var assignedAt: Date?
    /// True when this call enrolled the user; false when the stored
    /// assignment was used (it wins even if weights changed since).
    public var isNew: Bool
}

/// An assignment as the store holds it.
package struct StoredAssignment: Sendable, Equatable {
    package var variant: String
    package var assignedAt: Date
    /// True when the store call that returned it wrote it.
    package var isNew: Bool

    package init(variant: String, assignedAt: Date, isNew: Bool) {
        self.variant = variant
        self.assignedAt = assignedAt
        self.isNew = isNew
    }
}

extension GuestMode {
    /// Assigns a user to one named experiment, or to every experiment of the
    /// profile when `experimentName` is nil.
    ///
    /// ```swift
    /// let assignments = try engine.assignExperiments(user: guest.id, named: nil, now: now)
    /// // each assignment.variant, or nil outside an experiment's coverage
    /// ```
    public func assignExperiments(
        user userID: String, named experimentName: String?, now: Date
    ) throws
        -> [ExperimentAssignment]
    {
        try TextRule.check(userID, what: "the user id")
        let experiments: [Experiment]
        if let experimentName {
            experiments = [try requireExperiment(experimentName)]
        } else {
            experiments = profile.experiments
        }
        return try assignments(of: userID, to: experiments, now: now, requiringUser: true)
    }

    /// Puts a user in a chosen variant, replacing their assignment: for QA
    /// and for test users that must see one strategy. Sticky like any other.
    public func forceVariant(
        _ variantName: String, of experimentName: String, user userID: String, now: Date
    ) throws
        -> ExperimentAssignment
    {
        try TextRule.check(["the user id": userID, "the experiment": experimentName, "the variant": variantName])
        let experiment = try requireExperiment(experimentName)
        guard experiment.variants.contains(where: { $0.name == variantName }) else {
            throw GuestModeError(
                .unknownVariant,
                "experiment '\(experimentName)' has no variant '\(variantName)'; variants: \(experiment.variants.map(\.name).joined(separator: ", "))"
            )
        }
        let stored = try store.write { transaction in
            _ = try transaction.requireUser(userID, locking: true)
            try transaction.upsertAssignment(of: userID, experiment: experimentName, variant: variantName, at: now)
            return try transaction.requireAssignment(of: userID, experiment: experimentName)
        }
        return ExperimentAssignment(
            experiment: experimentName, variant: stored.variant, bucket: experiment.bucket(for: userID),
            assignedAt: stored.assignedAt, isNew: true)
    }

    func requireExperiment(_ name: String) throws -> Experiment {
        guard let experiment = profile.experiment(named: name) else {
            let known = profile.experiments.map(\.name)
            throw GuestModeError(
                .experimentNotFound,
                "profile '\(profile.name)' has no experiment '\(name)'; experiments: \(known.isEmpty ? "none" : known.joined(separator: ", "))"
            )
        }
        return experiment
    }

    /// The user's sticky assignment to each of `experiments`, made now where
    /// there is none yet; the user must exist. Only a user with an
    /// assignment to make takes a write (and the lock on its row): asking
    /// again, as every prompt decision does, only reads. With no experiments
    /// there is nothing to read, and the user is looked up only when
    /// `requiringUser` (a prompt decision has looked it up already).
    func assignments(
        of userID: String, to experiments: [Experiment], now: Date, requiringUser: Bool = false
    ) throws -> [ExperimentAssignment] {
        guard !experiments.isEmpty || requiringUser else { return [] }
        let settled = try store.read { transaction -> [ExperimentAssignment]? in
            _ = try transaction.requireUser(userID)
            do {
                return try experiments.map { experiment in
                    try experiment.assignment(
                        for: userID, stored: try transaction.assignment(of: userID, experiment: experiment.name)
                    ) { _ in throw AssignmentToStore() }
                }
            } catch is AssignmentToStore {
                return nil
            }
        }
        if let settled { return settled }
        return try store.write { transaction in
            _ = try transaction.requireUser(userID, locking: true)
            return try experiments.map { try transaction.assignment(of: userID, to: $0, now: now) }
        }
    }
}

/// Ends a read that found an assignment still to be stored.
private struct AssignmentToStore: Error {}

extension StoreTransaction {
    /// The user's sticky assignment to `experiment`, stored now (as of
    /// `time`) when the hash enrols the user and nothing is stored yet.
    func assignment(of userID: String, to experiment: Experiment, now time: Date) throws -> ExperimentAssignment {
        try experiment.assignment(
            for: userID, stored: try assignment(of: userID, experiment: experiment.name)
        ) { variant in
            // A concurrent first assignment that won keeps its variant: the
            // stored row, not this call's choice, is the answer.
            let added = try addAssignment(of: userID, experiment: experiment.name, variant: variant, at: time)
            var stored = try requireAssignment(of: userID, experiment: experiment.name)
            stored.isNew = added
            return stored
        }
    }

    /// The stored assignment, which a write in this transaction just made.
    func requireAssignment(of userID: String, experiment: String) throws -> StoredAssignment {
        guard let stored = try assignment(of: userID, experiment: experiment) else {
            throw GuestModeError(
                .assignmentLost, "the assignment of \(userID) to \(experiment) was not stored")
        }
        return stored
    }
}
