import Foundation
import Testing

@testable import GuestModeKit

/// The grant draws kept for `userID`'s `meterName`, and the row the replay of
/// its whole ledger gives, made from the inputs the store holds now.
func keptAndReplayedGrantDraws(
    _ engine: GuestMode, _ userID: String, meter meterName: String
) throws -> (kept: MeterGrantDrawsRow?, replayed: MeterGrantDrawsRow) {
    let meter = try #require(engine.profile.meter(named: meterName))
    return try engine.store.read { transaction in
        let user = try transaction.requireUser(userID)
        let grants = try transaction.meterGrants(of: userID, meter: meter.name)
        let plans = try transaction.planGrants(of: userID)
        let replay = try transaction.replayGrantLedger(
            of: user, meter: meter, grants: grants, plans: plans, profile: engine.profile, until: .distantFuture,
            periodTime: { $0 })
        return (
            try transaction.meterGrantDraws(of: userID, meter: meter.name),
            MeterGrantDrawsRow(
                userID: userID, meter: meter.name,
                inputs: transaction.grantDrawInputs(
                    of: user, meter: meter, grants: grants, plans: plans, profile: engine.profile),
                through: replay.lastUse.map(Timestamp.format), ledger: replay.ledger)
        )
    }
}
