import Foundation

/// The counts behind the reports, in one transaction (see
/// `StoreTransaction`). The store only counts and lists; the profile's
/// order, rates, conversions and the statistics of hours to link are the
/// engine's (`GuestMode.funnelReport` and the others).
package protocol ReportRows {
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
    /// `MeterAmount.largestRequest`, added up exactly), the users warned in
    /// it, and the grants of `meter` given in it with their amounts added
    /// up the same way.
    func meterUsageCounts(of meter: String, in period: ReportPeriod) throws -> MeterUsageCounts

    /// Migration and merge journals started in `period`, counted per kind,
    /// status, number of resumes and number of step failures (added up over
    /// the journal's steps); only groups that have any.
    func journalAttemptCounts(startedIn period: ReportPeriod) throws -> [JournalAttemptCount]

    /// The failures of the steps of journals started in `period`, added up
    /// per kind, position and step name; only steps that failed.
    func stepFailureCounts(startedIn period: ReportPeriod) throws -> [StepFailureCount]
}

/// How many journals of one kind share a status, a number of resumes and a
/// number of failures (`ReportRows.journalAttemptCounts`).
package struct JournalAttemptCount: Sendable, Equatable {
    package var kind: JournalKind
    /// The stored status, as text.
    package var status: String
    package var resumes: Int
    package var failures: Int
    package var journals: Int

    package init(kind: JournalKind, status: String, resumes: Int, failures: Int, journals: Int) {
        self.kind = kind
        self.status = status
        self.resumes = resumes
        self.failures = failures
        self.journals = journals
    }
}

/// The failures of one step of the journals of a kind (`ReportRows.stepFailureCounts`).
package struct StepFailureCount: Sendable, Equatable {
    package var kind: JournalKind
    package var position: Int
    package var step: String
    package var failures: Int

    package init(kind: JournalKind, position: Int, step: String, failures: Int) {
        self.kind = kind
        self.position = position
        self.step = step
        self.failures = failures
    }
}

/// Users created in a period (`ReportRows.cohortCounts`).
package struct CohortCounts: Sendable, Equatable {
    package var users: Int
    /// Users with at least one prompt outcome.
    package var prompted: Int
    package var linked: Int

    package init(users: Int, prompted: Int, linked: Int) {
        self.users = users
        self.prompted = prompted
        self.linked = linked
    }
}

/// How many outcomes of one kind a context has (`ReportRows.promptOutcomeCounts`).
package struct PromptOutcomeCount: Sendable, Equatable {
    package var context: String
    /// The stored outcome, as text: one this build does not know is counted
    /// under its context and shown in no column.
    package var outcome: String
    package var count: Int

    package init(context: String, outcome: String, count: Int) {
        self.context = context
        self.outcome = outcome
        self.count = count
    }
}

/// How many users of one variant are in one state (`ReportRows.assignmentCounts`).
package struct AssignmentCount: Sendable, Equatable {
    package var experiment: String
    package var variant: String
    package var userState: UserState
    /// The stored prompt state, as text.
    package var promptState: String
    package var users: Int

    package init(experiment: String, variant: String, userState: UserState, promptState: String, users: Int) {
        self.experiment = experiment
        self.variant = variant
        self.userState = userState
        self.promptState = promptState
        self.users = users
    }
}

/// The funnel's counts and its statistics of hours to link.
package struct FunnelCounts: Sendable, Equatable {
    package var guests: Int
    package var prompted: Int
    package var linked: Int
    package var averageHoursToLink: Double?
    package var medianHoursToLink: Double?
    /// The quartiles and the 90th percentile of hours to link; nil when
    /// nobody linked.
    package var hoursToLinkPercentiles: LinkTimePercentiles?
    /// Users who linked within seven days of being first seen.
    package var linkedWithinSevenDays: Int

    package init(
        guests: Int, prompted: Int, linked: Int, averageHoursToLink: Double?, medianHoursToLink: Double?,
        hoursToLinkPercentiles: LinkTimePercentiles? = nil, linkedWithinSevenDays: Int = 0
    ) {
        self.guests = guests
        self.prompted = prompted
        self.linked = linked
        self.averageHoursToLink = averageHoursToLink
        self.medianHoursToLink = medianHoursToLink
        self.hoursToLinkPercentiles = hoursToLinkPercentiles
        self.linkedWithinSevenDays = linkedWithinSevenDays
    }
}

/// Percentiles of the hours from first seen to linked, each interpolated
/// between the two nearest ranks (so `p50` is the median).
///
/// ```swift
/// let funnel = try engine.funnelReport(ReportPeriod())
/// if let hours = funnel.hoursToLinkPercentiles { print("90 % linked within \(hours.p90) hours") }
/// ```
public struct LinkTimePercentiles: Codable, Sendable, Equatable {
    /// A quarter of the users linked within this many hours.
    public var p25: Double
    /// Half of the users linked within this many hours: the median.
    public var p50: Double
    /// Three quarters of the users linked within this many hours.
    public var p75: Double
    /// Nine users in ten linked within this many hours.
    public var p90: Double

    /// Percentiles as given, in hours.
    public init(p25: Double, p50: Double, p75: Double, p90: Double) {
        self.p25 = p25
        self.p50 = p50
        self.p75 = p75
        self.p90 = p90
    }
}

package struct VariantCounts: Sendable, Equatable {
    package var experiment: String
    package var variant: String
    package var users: Int
    package var conversions: Int

    package init(experiment: String, variant: String, users: Int, conversions: Int) {
        self.experiment = experiment
        self.variant = variant
        self.users = users
        self.conversions = conversions
    }
}

package struct MeterUsageCounts: Sendable, Equatable {
    package var users: Int
    package var uses: Int
    /// Added up exactly, in the meter's smallest unit.
    package var amount: MeterAmount
    /// Users who crossed one of the meter's warning thresholds.
    package var warnedUsers: Int
    /// Grants given, and what they gave, added up exactly as `amount` is.
    package var grants: Int
    package var granted: MeterAmount

    package init(
        users: Int, uses: Int, amount: MeterAmount, warnedUsers: Int, grants: Int = 0, granted: MeterAmount = .zero
    ) {
        self.users = users
        self.uses = uses
        self.amount = amount
        self.warnedUsers = warnedUsers
        self.grants = grants
        self.granted = granted
    }
}
