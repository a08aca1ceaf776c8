import Foundation

/// The usage ledger and the fired warnings of one transaction (see
/// `StoreTransaction`).
package protocol MeterRows {
    /// Calls `body` with the kept total of the user's uses of `meter` in
    /// each UTC day (`span` `.day`) or month (`.month`) from the one that
    /// begins at `start` on (every one when nil), in no particular order.
    /// The store keeps these totals with every change to the ledger, in the
    /// same transaction, so the cost does not grow with the uses a period
    /// holds. A total below zero reads as zero, one past what an amount can
    /// hold as `MeterAmount.largest`.
    func forEachMeterUsageTotal(
        of userID: String, meter: String, span: MeterTotalSpan, from start: Date?,
        _ body: (MeterAmount) throws -> Void
    ) throws

    /// The amount of the user's use of `meter` recorded under the
    /// idempotency key `key`, in any period; nil when there is none.
    func meterUseAmount(of userID: String, meter: String, key: String) throws -> MeterAmount?

    /// Records one use of `meter` at `time`, under `key` when one is given.
    func appendMeterUse(of userID: String, meter: String, amount: MeterAmount, at time: Date, key: String?) throws

    /// The user's uses of `meter` recorded at or after `start` and at or
    /// before `end`, in the order they were recorded (by time, then
    /// insertion). A stored amount past what an amount can hold reads as
    /// `MeterAmount.largestRequest`.
    func meterUses(of userID: String, meter: String, since start: Date, until end: Date) throws -> [MeterUse]

    /// The user's grants (of `meter` only, when given), oldest first (by
    /// grant time, then id).
    func meterGrants(of userID: String, meter: String?) throws -> [MeterGrantRow]

    /// The grant with this id, of any user; nil when there is none.
    func meterGrant(id: Int64) throws -> MeterGrantRow?

    /// The user's grant stored under the idempotency key `key`, of any
    /// meter; nil when there is none.
    func meterGrant(of userID: String, key: String) throws -> MeterGrantRow?

    /// Stores a grant as given (its `id` is ignored) and returns the id the
    /// store gave it.
    func addMeterGrant(_ grant: MeterGrantRow) throws -> Int64

    /// Sets the revocation time of the grant unless it has one already;
    /// false when it had one (or there is no such grant).
    func revokeMeterGrant(id: Int64, at time: Date) throws -> Bool

    /// The kept grant draws of the user's `meter` (`MeterGrantDrawsRow`);
    /// nil when none are kept. The store deletes them with any change to the
    /// user's ledger of that meter (meter_usage), whoever makes it.
    func meterGrantDraws(of userID: String, meter: String) throws -> MeterGrantDrawsRow?

    /// Stores `row`, replacing the one kept for its user and meter.
    func keepMeterGrantDraws(_ row: MeterGrantDrawsRow) throws

    /// Calls `body` with every kept row of grant draws, by user then meter.
    func forEachMeterGrantDraws(_ body: (MeterGrantDrawsRow) throws -> Void) throws

    /// At most `limit` (user, meter) pairs that hold a grant of the meter
    /// (in any state) and no kept grant draws, by user then meter in the
    /// store's order, from the first one after `position` (from the start
    /// when nil).
    func meterGrantHoldersWithoutDraws(after position: MeterGrantHolder?, limit: Int) throws -> [MeterGrantHolder]

    /// The build of kept grant draws the store owes (meta key
    /// `OwedGrantDraws.metaKey`, set in a store holding grants by the schema
    /// step after the one that added them, SQLite v15 and PostgreSQL pg14):
    /// where it has got to, as
    /// `OwedGrantDraws.position` wrote it ("" before the first pair); nil
    /// when nothing is owed.
    func owedGrantDraws() throws -> String?

    /// Stores where the owed build has got to; nil: nothing is owed any more.
    func setOwedGrantDraws(_ position: String?) throws

    /// Stores that the warning at `percent` of `meter` fired at `time` in the
    /// period starting at `periodStart` (nil: the meter never resets), unless
    /// that warning of that period is stored already: then nothing changes
    /// and the result is false.
    func addFiredWarning(
        of userID: String, meter: String, periodStart: Date?, percent: Double, level: MeterLevel, at time: Date
    ) throws -> Bool
}

/// The buckets the store keeps usage totals in (`MeterRows.forEachMeterUsageTotal`): UTC days and
/// months, the boundaries of every period a meter can have.
package enum MeterTotalSpan: String, Sendable {
    case day
    case month

    /// The buckets `meter`'s usage is added up from: a daily meter's days, every other meter's months.
    package init(of meter: Meter) { self = meter.reset == .daily ? .day : .month }

    /// The bucket `start` begins, as the store names it: `YYYY-MM-DD` or `YYYY-MM`.
    package func bucket(beginningAt start: Date) -> String {
        String(Timestamp.format(start).prefix(self == .day ? 10 : 7))
    }
}

/// A user's meter that holds grants (`MeterRows.meterGrantHoldersWithoutDraws`).
package struct MeterGrantHolder: Sendable, Equatable {
    package var userID: String
    package var meter: String

    package init(userID: String, meter: String) {
        self.userID = userID
        self.meter = meter
    }
}

/// One recorded use of a meter (`MeterRows.meterUses`).
package struct MeterUse: Sendable, Equatable {
    package var amount: MeterAmount
    package var at: Date

    package init(amount: MeterAmount, at: Date) {
        self.amount = amount
        self.at = at
    }
}

/// A stored grant of extra allowance on a meter (`MeterRows`).
package struct MeterGrantRow: Sendable, Equatable {
    package var id: Int64
    package var userID: String
    package var meter: String
    package var amount: MeterAmount
    package var grantedAt: Date
    package var expiresAt: Date?
    package var revokedAt: Date?
    package var reason: String?
    package var idempotencyKey: String?

    package init(
        id: Int64, userID: String, meter: String, amount: MeterAmount, grantedAt: Date, expiresAt: Date?,
        revokedAt: Date?, reason: String?, idempotencyKey: String?
    ) {
        self.id = id
        self.userID = userID
        self.meter = meter
        self.amount = amount
        self.grantedAt = grantedAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.reason = reason
        self.idempotencyKey = idempotencyKey
    }
}

extension MeterRows {
    /// The user's usage of `meter` in the period that began at `start` (all
    /// of it when nil: a meter that never resets), added up exactly from the
    /// store's daily totals for a daily meter, else its monthly ones: a
    /// period always begins where one of those does. A total past what an
    /// amount can hold reads as `MeterAmount.largest`: usage written by
    /// earlier versions may pass it, and a meter must still answer
    /// (exhausted), not fail.
    func meterUsage(of userID: String, meter: Meter, since start: Date?) throws -> MeterAmount {
        var used = MeterAmount.zero
        try forEachMeterUsageTotal(of: userID, meter: meter.name, span: MeterTotalSpan(of: meter), from: start) {
            used = used.addingTotal($0)
        }
        return used
    }
}

extension MeterAmount {
    /// `self` and one more of a period's kept totals (`MeterRows.meterUsage`).
    package func addingTotal(_ total: MeterAmount) -> MeterAmount { adding(total) ?? .largest }
}
