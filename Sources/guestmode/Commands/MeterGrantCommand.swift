import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

extension MeterCommand {
    struct Grant: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "grant",
            abstract: "Give a user extra allowance on a meter, on top of the tier's.",
            discussion: """
                Usage draws on the grant that expires soonest first (grants that never expire last), then on \
                the tier's allowance; when a grant expires, what is left of it lapses. Under a plan that makes \
                the meter unlimited a grant is moot and keeps its amount for later. A repeated --id with the \
                same grant changes nothing and answers as the first time; with another meter, amount, expiry or \
                reason it exits 14 and writes nothing.

                Examples:
                  guestmode meter grant u_1 api_minutes 30 --expires 30d --reason referral --id referral-u_2
                  guestmode meter grant u_1 api_minutes 10 --until 2026-12-31T23:59:59Z --reason "failed session"
                """)

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user id.") var user: String
        @Argument(help: "The meter.") var meter: String
        @Argument(
            help: ArgumentHelp(
                "How much to give, in the meter's unit: a plain decimal such as 30 or 2.5.", valueName: "amount"))
        var amount: String

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "What is left lapses this long after now: ISO 8601 (P30D, PT12H) or short (30d, 12h, 1 month).",
                valueName: "duration"))
        var expires: String?

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp("What is left lapses at this time (ISO 8601).", valueName: "time"))
        var until: String?

        @Option(parsing: .unconditional, help: ArgumentHelp("Why it was given, kept with it.", valueName: "text"))
        var reason: String?

        @Option(
            help: ArgumentHelp(
                "An idempotency key: a repeated key grants once; the key with another grant is refused (exit 14).",
                valueName: "key"))
        var id: String?

        func validate() throws {
            if expires != nil && until != nil { throw ValidationError("give either --expires or --until, not both") }
            if let expires, case .failure(let refusal) = TimeSpan.parse(expires) {
                throw ValidationError("--expires: \(refusal)")
            }
            if let until, Timestamp.parse(until) == nil {
                throw ValidationError("--until '\(until)' is not an ISO 8601 time")
            }
        }

        func run() throws {
            let expiry: MeterGrantExpiry =
                if let span = expires.flatMap(TimeSpan.init(parsing:)) {
                    .after(span)
                } else if let date = until.flatMap(Timestamp.parse) {
                    .at(date)
                } else {
                    .never
                }
            let result = try global.openEngine().grantMeter(
                user: user, meter: meter, amount: try MeterAmount.parse(amount), expiry: expiry, reason: reason,
                key: id, now: try global.currentTime())
            try global.output.result(result) {
                let verb = result.isChanged ? "granted" : "already granted (id \(id ?? ""))"
                global.output.line(
                    "\(verb): \(MeterCommand.describe(result.grant, unit: result.status.unit)); \(result.status.summary)"
                )
            }
        }
    }

    struct Grants: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "grants",
            abstract: "List a user's meter grants: amount, used, remaining, expiry and state, by --now.",
            discussion: """
                States: active (usage draws on it), pending (granted for later), used_up, expired (what was \
                left lapsed), revoked.

                Examples:
                  guestmode meter grants u_1
                  guestmode meter grants u_1 api_minutes --json
                """)

        @OptionGroup var global: GlobalOptions

        @OptionGroup var listing: ListingOptions

        @Argument(help: "The user id.") var user: String
        @Argument(help: "Only this meter.") var meter: String?

        func run() throws {
            let grants = try global.openEngine().meterGrants(user: user, meter: meter, now: try global.currentTime())
            try listing.render(
                grants,
                header: ["ID", "METER", "AMOUNT", "USED", "REMAINING", "STATE", "GRANTED", "EXPIRES", "REASON"],
                rows: grants.map { grant in
                    [
                        "\(grant.id)", grant.meter, grant.amount.description, grant.used.description,
                        grant.remaining.description, grant.state.rawValue, Timestamp.format(grant.grantedAt),
                        grant.expiresAt.map(Timestamp.format) ?? "never", grant.reason ?? "",
                    ]
                },
                dataRows: grants.map { grant in
                    [
                        "\(grant.id)", grant.meter, grant.amount.description, grant.used.description,
                        grant.remaining.description, grant.state.rawValue, Timestamp.format(grant.grantedAt),
                        grant.expiresAt.map(Timestamp.format) ?? "", grant.reason ?? "",
                    ]
                }, global: global)
        }
    }

    struct RevokeGrant: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-grant",
            abstract: "Revoke a meter grant now: what is left of it lapses.",
            discussion: """
                What usage already drew on the grant stays drawn. Revoking a grant already revoked changes \
                nothing; an unknown id exits 66.

                Example:
                  guestmode meter revoke-grant 3
                """)

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The grant's id, as 'meter grant' and 'meter grants' show it.") var id: Int64

        func run() throws {
            let result = try global.openEngine().revokeMeterGrant(id: id, now: try global.currentTime())
            try global.output.result(result) {
                let verb = result.isChanged ? "revoked" : "already revoked"
                global.output.line(
                    "\(verb): \(MeterCommand.describe(result.grant, unit: result.status.unit)); \(result.status.summary)"
                )
            }
        }
    }

    static func describe(_ grant: MeterGrant, unit: String) -> String {
        var text = "grant \(grant.id) of \(grant.amount) \(unit) on \(grant.meter), \(grant.remaining) left"
        if let expiry = grant.expiresAt {
            text += ", \(grant.state == .expired ? "expired" : "expires") \(Timestamp.format(expiry))"
        }
        if let reason = grant.reason { text += " (\(reason))" }
        return text
    }
}
