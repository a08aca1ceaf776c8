import Crypto
import Foundation

// What each grant of a user's meter has drawn, kept in the store
// (meter_grant_draws) so a meter with grants is read without replaying the
// user's whole ledger. The replay (`MeterGrantLedger` over every use since
// the first grant) stays the reference: a kept row is used only while it
// was made from the same inputs, and `db check` holds every kept row equal
// to it.
//
// A kept row is the replay of every use of the meter up to `through`, the
// latest one, made from inputs named by a digest: the grants (all their
// times), the user's plans and link time, and what the profile says about
// the meter (its reset, which tiers leave it unlimited, which tier each plan
// gives). A change to any of those changes the digest, and the row no
// longer counts. A change to the ledger itself (an import, a merge, a
// deletion, a use recorded out of order) deletes the row, by the store's
// triggers on meter_usage. A use recorded by `useMeter` deletes it too and
// the engine writes it back, one use further on, in the same transaction.

/// One kept row as the store holds it (`MeterRows.meterGrantDraws`).
package struct MeterGrantDrawsRow: Sendable, Equatable {
    package var userID: String
    package var meter: String
    /// The digest of the replay's inputs other than the ledger.
    package var inputs: String
    /// The time of the latest use replayed, as stored; nil when none was.
    package var through: String?
    /// What the grants gave, in millionths, to uses in the period that holds `through`.
    package var drawnInPeriod: Int64
    /// What each grant gave, as `id:millionths` pairs joined by commas, by id.
    package var drawn: String

    package init(
        userID: String, meter: String, inputs: String, through: String?, drawnInPeriod: Int64, drawn: String
    ) {
        self.userID = userID
        self.meter = meter
        self.inputs = inputs
        self.through = through
        self.drawnInPeriod = drawnInPeriod
        self.drawn = drawn
    }

    /// The row that keeps `ledger`, the replay of the uses up to `through`.
    init(userID: String, meter: String, inputs: String, through: String?, ledger: MeterGrantLedger) {
        self.init(
            userID: userID, meter: meter, inputs: inputs, through: through,
            drawnInPeriod: ledger.drawnInPeriod.millionths,
            drawn: ledger.drawn.filter { $0.value.isPositive }.sorted { $0.key < $1.key }
                .map { "\($0.key):\($0.value.millionths)" }.joined(separator: ","))
    }

    /// What each grant gave; nil when the text is not what `init` writes.
    var drawnByGrant: [Int64: MeterAmount]? {
        var drawn: [Int64: MeterAmount] = [:]
        for pair in self.drawn.split(separator: ",", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: ":")
            guard parts.count == 2, let id = Int64(parts[0]), let millionths = Int64(parts[1]), millionths > 0,
                drawn[id] == nil
            else { return nil }
            drawn[id] = MeterAmount(millionths: millionths)
        }
        return drawn
    }

    /// The kept ledger as the replay of the uses up to `now` would give it,
    /// whose period is the one of `reset` that holds `now`; nil when the
    /// store holds a use later than `now` (the kept row covers it) or the
    /// row does not read back.
    func ledger(at now: Date, reset: MeterReset) -> MeterGrantLedger? {
        guard let drawn = drawnByGrant, drawnInPeriod >= 0 else { return nil }
        guard let through else { return MeterGrantLedger(drawn: drawn, drawnInPeriod: .zero) }
        guard through <= Timestamp.format(now), let last = Timestamp.parse(through) else { return nil }
        // The latest use falls in the period of `now`, or in an earlier one
        // that `now`'s period follows: then no use fell in `now`'s period.
        let inPeriod =
            reset.periodStart(containing: now) == reset.periodStart(containing: last)
            ? MeterAmount(millionths: drawnInPeriod) : .zero
        return MeterGrantLedger(drawn: drawn, drawnInPeriod: inPeriod)
    }
}

extension StoreTransaction {
    /// The digest of what the replay of `user`'s ledger of `meter` depends
    /// on besides the ledger: a kept row made from other inputs is not used.
    func grantDrawInputs(
        of user: User, meter: Meter, grants: [MeterGrantRow], plans: [PlanGrant], profile: Profile
    ) -> String {
        func time(_ date: Date?) -> String { date.map(Timestamp.format) ?? "-" }
        var text = "meter=\(meter.name);reset=\(meter.reset.rawValue);unlimited="
        for level in TierLevel.allCases {
            text += "\(level.rawValue):\(profile.tier(level).exactAllowance(for: meter.name) == nil),"
        }
        text += ";linked=\(time(user.linkedAt));plans="
        for plan in plans {
            text +=
                "\(plan.plan)|\(profile.plan(named: plan.plan)?.tier.rawValue ?? "-")|\(time(plan.grantedAt))|\(time(plan.trialEndsAt))|\(time(plan.endsAt))|\(time(plan.revokedAt)),"
        }
        text += ";grants="
        for grant in grants {
            text +=
                "\(grant.id)|\(grant.amount.millionths)|\(time(grant.grantedAt))|\(time(grant.expiresAt))|\(time(grant.revokedAt)),"
        }
        return SecretHash.hex(Array(SHA256.hash(data: Data(text.utf8))))
    }

    /// Whether usage at a time drew on nothing: the tier the user had then
    /// (its link time and the plans in force) left the meter unlimited.
    func isUnlimited(
        _ user: User, meter: Meter, plans: [PlanGrant], profile: Profile
    ) -> (Date) -> Bool {
        { time in
            let state: UserState = user.linkedAt.map { $0 <= time } ?? false ? .linked : .anonymous
            return profile.tier(profile.tier(for: state, grants: plans, now: time)).exactAllowance(for: meter.name)
                == nil
        }
    }

    /// The replay of every use of `meter` since the first of `grants`, up
    /// to `end`, with the current period the one holding `periodTime`.
    func replayGrantLedger(
        of user: User, meter: Meter, grants: [MeterGrantRow], plans: [PlanGrant], profile: Profile, until end: Date,
        periodTime: (_ lastUse: Date?) -> Date?
    ) throws -> (ledger: MeterGrantLedger, lastUse: Date?) {
        let first = grants.map(\.grantedAt).min() ?? end
        let uses = try meterUses(of: user.id, meter: meter.name, since: first, until: end)
        let last = uses.last?.at
        return (
            MeterGrantLedger(
                grants: grants, uses: uses,
                periodStart: periodTime(last).flatMap { meter.reset.periodStart(containing: $0) }
                    ?? (meter.reset == .never ? nil : .distantFuture),
                isUnlimited: isUnlimited(user, meter: meter, plans: plans, profile: profile)),
            last
        )
    }

    /// The kept row of `meter` rebuilt by the replay of every use since the
    /// first of `grants`, and stored.
    @discardableResult
    func rebuildGrantDraws(
        of user: User, meter: Meter, grants: [MeterGrantRow], plans: [PlanGrant], profile: Profile
    ) throws -> MeterGrantDrawsRow {
        let replay = try replayGrantLedger(
            of: user, meter: meter, grants: grants, plans: plans, profile: profile, until: .distantFuture,
            periodTime: { $0 })
        let row = MeterGrantDrawsRow(
            userID: user.id, meter: meter.name,
            inputs: grantDrawInputs(of: user, meter: meter, grants: grants, plans: plans, profile: profile),
            through: replay.lastUse.map(Timestamp.format), ledger: replay.ledger)
        try keepMeterGrantDraws(row)
        return row
    }

    /// Keeps the grant draws of `meter` with the use just recorded at `time`
    /// (`kept` is the row read before it): one step of the replay on top of
    /// the kept row when it was made from the same inputs and the use is
    /// the latest; else the whole replay. Nothing when the user holds no
    /// grant of the meter.
    func keepGrantDraws(
        of user: User, meter: Meter, grants: [MeterGrantRow], kept: MeterGrantDrawsRow?, use: MeterUse,
        profile: Profile
    ) throws {
        guard !grants.isEmpty else { return }
        let plans = try planGrants(of: user.id)
        let inputs = grantDrawInputs(of: user, meter: meter, grants: grants, plans: plans, profile: profile)
        // The time as stored, to the millisecond: the replay reads it so.
        let through = Timestamp.format(use.at)
        guard let kept, kept.inputs == inputs, kept.through.map({ $0 <= through }) ?? true,
            let at = Timestamp.parse(through), var ledger = kept.ledger(at: at, reset: meter.reset)
        else {
            try rebuildGrantDraws(of: user, meter: meter, grants: grants, plans: plans, profile: profile)
            return
        }
        // A use before every grant is outside the replay (it starts at the first grant) and draws nothing.
        if let first = grants.map(\.grantedAt).min(), at < first {
            try keepMeterGrantDraws(kept)
            return
        }
        ledger.record(
            MeterUse(amount: use.amount, at: at), ordered: grants.sorted(by: MeterGrantRow.drawsBefore),
            periodStart: meter.reset.periodStart(containing: at),
            isUnlimited: isUnlimited(user, meter: meter, plans: plans, profile: profile)(at))
        try keepMeterGrantDraws(
            MeterGrantDrawsRow(userID: user.id, meter: meter.name, inputs: inputs, through: through, ledger: ledger))
    }
}

extension GuestMode {
    /// Each kept row of grant draws (meter_grant_draws) made from the inputs
    /// the store holds now, against the replay of the ledger it keeps: the
    /// ones that disagree, named. A row made from other inputs is not used
    /// and is not a problem. Part of `guestmode db check`.
    ///
    /// ```swift
    /// for problem in try engine.grantDrawProblems() { print(problem) }
    /// ```
    package func grantDrawProblems() throws -> [String] {
        try store.read { transaction in
            var problems: [String] = []
            try transaction.forEachMeterGrantDraws { row in
                guard problems.count < 100, let meter = profile.meter(named: row.meter),
                    let user = try transaction.user(row.userID, locking: false)
                else { return }
                let grants = try transaction.meterGrants(of: user.id, meter: meter.name)
                let plans = try transaction.planGrants(of: user.id)
                guard
                    row.inputs
                        == transaction.grantDrawInputs(
                            of: user, meter: meter, grants: grants, plans: plans, profile: profile)
                else { return }
                let what = "the kept grant draws of meter \(meter.name) of user \(user.id)"
                let replay = try transaction.replayGrantLedger(
                    of: user, meter: meter, grants: grants, plans: plans, profile: profile, until: .distantFuture,
                    periodTime: { $0 })
                let expected = MeterGrantDrawsRow(
                    userID: user.id, meter: meter.name, inputs: row.inputs,
                    through: replay.lastUse.map(Timestamp.format), ledger: replay.ledger)
                guard let drawn = row.drawnByGrant else {
                    problems.append("\(what) read '\(row.drawn)', not what each grant drew")
                    return
                }
                if row.through != expected.through {
                    problems.append(
                        "\(what) cover uses through \(row.through ?? "none") but its ledger's latest use is at \(expected.through ?? "none")"
                    )
                }
                let counted = expected.drawnByGrant ?? [:]
                for id in Set(drawn.keys).union(counted.keys).sorted() where drawn[id] != counted[id] {
                    problems.append(
                        "\(what) say grant \(id) drew \(drawn[id] ?? .zero) but its ledger gives \(counted[id] ?? .zero)"
                    )
                }
                if row.drawnInPeriod != expected.drawnInPeriod {
                    let kept = "\(MeterAmount(millionths: max(0, row.drawnInPeriod)))"
                    problems.append(
                        "\(what) say the grants gave \(row.drawnInPeriod < 0 ? "\(row.drawnInPeriod) millionths" : kept) in the period of their latest use but its ledger gives \(MeterAmount(millionths: expected.drawnInPeriod))"
                    )
                }
            }
            return problems
        }
    }
}
