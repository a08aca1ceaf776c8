import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Funnel, prompt, experiment, meter and migration reports, computed in SQL over the store.",
        subcommands: [Funnel.self, Prompts.self, Experiments.self, Usage.self, Migrations.self]
    )

    struct Funnel: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "funnel",
            abstract:
                "Guests first seen in the period, how many were prompted and linked, the time to link and its percentiles."
        )

        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: ReportOptions

        func run() throws {
            let report = try global.openEngine().funnelReport(try options.period())
            let percentiles = report.hoursToLinkPercentiles
            try options.render(
                report, global: global,
                header: [
                    "GUESTS", "PROMPTED", "LINKED", "PROMPTED_RATE", "LINKED_RATE", "AVG_HOURS_TO_LINK",
                    "MEDIAN_HOURS_TO_LINK", "P25_HOURS", "P75_HOURS", "P90_HOURS", "LINKED_IN_7D", "LINKED_IN_7D_RATE",
                ],
                rows: [
                    [
                        "\(report.guests)", "\(report.prompted)", "\(report.linked)", percent(report.promptedRate),
                        percent(report.linkedRate), hours(report.averageHoursToLink), hours(report.medianHoursToLink),
                        hours(percentiles?.p25), hours(percentiles?.p75), hours(percentiles?.p90),
                        "\(report.linkedWithinSevenDays)", percent(report.linkedWithinSevenDaysRate),
                    ]
                ],
                dataRows: [
                    [
                        "\(report.guests)", "\(report.prompted)", "\(report.linked)",
                        Listing.number(report.promptedRate), Listing.number(report.linkedRate),
                        Listing.number(report.averageHoursToLink), Listing.number(report.medianHoursToLink),
                        Listing.number(percentiles?.p25), Listing.number(percentiles?.p75),
                        Listing.number(percentiles?.p90), "\(report.linkedWithinSevenDays)",
                        Listing.number(report.linkedWithinSevenDaysRate),
                    ]
                ], items: [report])
        }
    }

    struct Prompts: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prompts",
            abstract:
                "Per prompt context: shown, dismissed, later, never, completed and conversion (completed per showing).")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: ReportOptions

        func run() throws {
            let report = try global.openEngine().promptsReport(try options.period())
            try options.render(
                report, global: global, header: PromptsReportTable.header, rows: PromptsReportTable.rows(report),
                dataRows: PromptsReportTable.dataRows(report), items: report.contexts + [report.total])
        }
    }

    struct Experiments: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "experiments",
            abstract: "Per experiment variant: users, conversions and conversion rate with a 95% Wilson interval.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: ReportOptions

        func run() throws {
            let report = try global.openEngine().experimentsReport(try options.period())
            try options.render(
                report, global: global,
                header: ["EXPERIMENT", "VARIANT", "USERS", "CONVERSIONS", "RATE", "CI95_LOW", "CI95_HIGH"],
                rows: report.variants.map { variant in
                    [
                        variant.experiment, variant.variant, "\(variant.users)", "\(variant.conversions)",
                        percent(variant.rate.rate), percent(variant.rate.low), percent(variant.rate.high),
                    ]
                },
                dataRows: report.variants.map { variant in
                    [
                        variant.experiment, variant.variant, "\(variant.users)", "\(variant.conversions)",
                        Listing.number(variant.rate.rate), Listing.number(variant.rate.low),
                        Listing.number(variant.rate.high),
                    ]
                }, items: report.variants)
        }
    }

    struct Usage: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "usage",
            abstract: "Per meter: users, uses, amount used, average per user, users warned and grants given.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: ReportOptions

        func run() throws {
            let report = try global.openEngine().usageReport(try options.period())
            try options.render(
                report, global: global,
                header: [
                    "METER", "UNIT", "USERS", "USES", "AMOUNT", "AVG_PER_USER", "WARNED_USERS", "GRANTS", "GRANTED",
                ],
                rows: report.meters.map { meter in
                    [
                        meter.meter, meter.unit, "\(meter.users)", "\(meter.uses)", meter.amount.description,
                        meter.averagePerUser.map(formatAmount) ?? "", "\(meter.warnedUsers)", "\(meter.grants)",
                        meter.granted.description,
                    ]
                },
                dataRows: report.meters.map { meter in
                    [
                        meter.meter, meter.unit, "\(meter.users)", "\(meter.uses)", meter.amount.description,
                        Listing.number(meter.averagePerUser), "\(meter.warnedUsers)", "\(meter.grants)",
                        meter.granted.description,
                    ]
                }, items: report.meters)
        }
    }

    struct Migrations: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrations",
            abstract:
                "Guest-to-account migrations and merges started in the period: completed, failed, resumed, success rate, failures by step."
        )

        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: ReportOptions

        func run() throws {
            let report = try global.openEngine().migrationsReport(try options.period())
            func failures(_ kind: JournalKindReport) -> String {
                kind.failuresByStep.map { "\($0.position):\($0.step)=\($0.failures)" }.joined(separator: " ")
            }
            try options.render(
                report, global: global,
                header: [
                    "KIND", "STARTED", "COMPLETED", "FAILED", "RESUMED", "UNFINISHED", "SUCCESS_RATE", "CI95_LOW",
                    "CI95_HIGH", "FAILURES_BY_STEP",
                ],
                rows: report.kinds.map { kind in
                    [
                        kind.kind.rawValue, "\(kind.started)", "\(kind.completed)", "\(kind.failed)", "\(kind.resumed)",
                        "\(kind.unfinished)", percent(kind.successRate.rate), percent(kind.successRate.low),
                        percent(kind.successRate.high), failures(kind),
                    ]
                },
                dataRows: report.kinds.map { kind in
                    [
                        kind.kind.rawValue, "\(kind.started)", "\(kind.completed)", "\(kind.failed)", "\(kind.resumed)",
                        "\(kind.unfinished)", Listing.number(kind.successRate.rate),
                        Listing.number(kind.successRate.low), Listing.number(kind.successRate.high), failures(kind),
                    ]
                }, items: report.kinds)
        }
    }
}

struct ReportOptions: ParsableArguments {
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Only what happened at or after this time (ISO 8601).", valueName: "time"))
    var since: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Only what happened before this time (ISO 8601).", valueName: "time"))
    var until: String?

    @OptionGroup var listing: ListingOptions

    func period() throws -> ReportPeriod {
        let period = ReportPeriod(
            since: try since.map { try Timestamp.parseOrThrow($0, what: "--since") },
            until: try until.map { try Timestamp.parseOrThrow($0, what: "--until") })
        if let start = period.since, let end = period.until, end <= start {
            throw GuestModeError(
                .emptyPeriod,
                "--until (\(Timestamp.format(end))) must come after --since (\(Timestamp.format(start)))")
        }
        return period
    }

    /// Table cells are for people (`54.5%`); tsv and csv cells (`dataRows`) are plain numbers (`0.545`).
    func render<Report: Encodable, Item: Encodable>(
        _ report: Report, global: GlobalOptions, header: [String], rows: [[String]], dataRows: [[String]],
        items: [Item]
    ) throws {
        try listing.render(
            document: report, items: items, header: header, rows: rows, dataRows: dataRows, global: global)
    }
}

enum PromptsReportTable {
    static let header = ["CONTEXT", "SHOWN", "DISMISSED", "LATER", "NEVER", "COMPLETED", "CONVERSION"]

    static func rows(_ report: PromptsReport) -> [[String]] {
        (report.contexts + [report.total]).map { row in
            [
                row.context, "\(row.shown)", "\(row.dismissed)", "\(row.later)", "\(row.never)", "\(row.completed)",
                percent(row.conversion),
            ]
        }
    }

    static func dataRows(_ report: PromptsReport) -> [[String]] {
        (report.contexts + [report.total]).map { row in
            [
                row.context, "\(row.shown)", "\(row.dismissed)", "\(row.later)", "\(row.never)", "\(row.completed)",
                Listing.number(row.conversion),
            ]
        }
    }
}

/// RFC 4180: quote fields holding a comma, quote or line break; double quotes inside.
