import Foundation

/// The counts behind the reports, each read in one transaction. The store
/// only counts; ordering by the profile, rates and intervals are computed in
/// the engine (`GuestMode.funnelReport` and the others).
public protocol ReportStore: Sendable {
    /// Users created in `period`, how many have a prompt outcome, how many
    /// linked and how long linking took them.
    func funnelCounts(in period: ReportPeriod) throws -> FunnelCounts
    /// Prompt outcomes recorded in `period`, one entry per context that has any.
    func promptOutcomeCounts(in period: ReportPeriod) throws -> [PromptContextReport]
    /// Users assigned in `period`, per experiment and variant that has any,
    /// and how many of them converted (linked or completed a sign-in prompt).
    func variantConversionCounts(in period: ReportPeriod) throws -> [VariantCounts]
    /// Usage and warnings in `period` of each meter named, keyed by meter.
    func meterUsageCounts(of meters: [String], in period: ReportPeriod) throws -> [String: MeterUsageCounts]
    /// Runs a whole replay (`GuestMode.replay`) in one write transaction on
    /// a scratch store: a replay of 100,000 events makes several store
    /// calls per event, which one transaction each would slow many times
    /// over. The transaction is valid only while `body` runs; when `body`
    /// throws, nothing is kept.
    func withReplayTransaction<T>(_ body: (any ReplayTransaction) throws -> T) throws -> T
}

/// The writes and reads one replayed event needs, inside the replay's
/// transaction (see `ReportStore.withReplayTransaction`). They do what the
/// use cases of the same names do, without their checks: the replay has
/// already checked every event of the log.
public protocol ReplayTransaction {
    /// Adds a user who is known not to exist.
    func insertUser(_ user: User) throws
    /// Appends the event unless its idempotency key was counted, and bumps the counter.
    func apply(_ event: TrackedEvent, profile: Profile, now: Date) throws -> TrackResult
    func storedAssignment(userID: String, experiment: String) throws -> StoredAssignment?
    func storeAssignment(userID: String, experiment: String, variant: String, at: Date) throws -> StoredAssignment
    /// The primitive row operations of the same transaction.
    var rows: any StoreTransaction { get }
}

public struct FunnelCounts: Sendable, Equatable {
    public var guests: Int
    public var prompted: Int
    public var linked: Int
    public var averageHoursToLink: Double?
    public var medianHoursToLink: Double?

    public init(guests: Int, prompted: Int, linked: Int, averageHoursToLink: Double?, medianHoursToLink: Double?) {
        self.guests = guests
        self.prompted = prompted
        self.linked = linked
        self.averageHoursToLink = averageHoursToLink
        self.medianHoursToLink = medianHoursToLink
    }
}

public struct VariantCounts: Sendable, Equatable {
    public var experiment: String
    public var variant: String
    public var users: Int
    public var conversions: Int

    public init(experiment: String, variant: String, users: Int, conversions: Int) {
        self.experiment = experiment
        self.variant = variant
        self.users = users
        self.conversions = conversions
    }
}

public struct MeterUsageCounts: Sendable, Equatable {
    public var users: Int
    public var uses: Int
    /// Added up exactly, in the meter's smallest unit.
    public var amount: MeterAmount
    /// Users who crossed one of the meter's warning thresholds.
    public var warnedUsers: Int

    public init(users: Int, uses: Int, amount: MeterAmount, warnedUsers: Int) {
        self.users = users
        self.uses = uses
        self.amount = amount
        self.warnedUsers = warnedUsers
    }
}
