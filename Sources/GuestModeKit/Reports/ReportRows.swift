import Foundation

/// The counts behind the reports, in one transaction (see
/// `StoreTransaction`). The store only counts and lists; the profile's
/// order, rates, conversions and the statistics of hours to link are the
/// engine's (`GuestMode.funnelReport` and the others).
public protocol ReportRows {
    /// Users created in `period`: how many, how many have a prompt outcome
    /// and how many are linked.
    func cohortCounts(createdIn period: ReportPeriod) throws -> CohortCounts

    /// Calls `body` with the creation and link times of each linked user
    /// created in `period`, in no particular order, reading them in constant
    /// memory.
    func forEachLink(
        ofUsersCreatedIn period: ReportPeriod, _ body: (_ createdAt: Date, _ linkedAt: Date) throws -> Void
    ) throws

    /// Prompt outcomes recorded in `period`, counted per context and
    /// outcome; only pairs that have any.
    func promptOutcomeCounts(in period: ReportPeriod) throws -> [PromptOutcomeCount]

    /// Users assigned in `period`, counted per experiment, variant and the
    /// user's state and prompt state now; only groups that have any.
    func assignmentCounts(in period: ReportPeriod) throws -> [AssignmentCount]

    /// Uses of `meter` in `period` (each amount clamped to
    /// `MeterAmount.largestRequest`, added up exactly) and the users warned
    /// in it.
    func meterUsageCounts(of meter: String, in period: ReportPeriod) throws -> MeterUsageCounts
}

/// Users created in a period (`ReportRows.cohortCounts`).
public struct CohortCounts: Sendable, Equatable {
    public var users: Int
    /// Users with at least one prompt outcome.
    public var prompted: Int
    public var linked: Int

    public init(users: Int, prompted: Int, linked: Int) {
        self.users = users
        self.prompted = prompted
        self.linked = linked
    }
}

/// How many outcomes of one kind a context has (`ReportRows.promptOutcomeCounts`).
public struct PromptOutcomeCount: Sendable, Equatable {
    public var context: String
    /// The stored outcome, as text: one this build does not know is counted
    /// under its context and shown in no column.
    public var outcome: String
    public var count: Int

    public init(context: String, outcome: String, count: Int) {
        self.context = context
        self.outcome = outcome
        self.count = count
    }
}

/// How many users of one variant are in one state (`ReportRows.assignmentCounts`).
public struct AssignmentCount: Sendable, Equatable {
    public var experiment: String
    public var variant: String
    public var userState: UserState
    /// The stored prompt state, as text.
    public var promptState: String
    public var users: Int

    public init(experiment: String, variant: String, userState: UserState, promptState: String, users: Int) {
        self.experiment = experiment
        self.variant = variant
        self.userState = userState
        self.promptState = promptState
        self.users = users
    }
}

/// The funnel's counts and its statistics of hours to link.
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
