import ArgumentParser
import GuestModeCommandLine

extension PlanCommand {
    /// `plan import` as guestmode parses and checks it; guestmode-serve reads and applies the file
    /// (`PlanImportOptions`), so guestmode links neither the App Store verification nor what it brings.
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Apply a file of store notifications to plans, as the server does when they are delivered.",
            discussion: """
                For backfills and for replaying what a server missed. revenuecat: NDJSON, one RevenueCat \
                webhook body ({"api_version":"1.0","event":{...}}) a line, as the webhook route takes it. \
                app-store: one App Store Server Notification V2 a line, its signedPayload or the body Apple \
                posts ({"signedPayload":"..."}), verified as the server verifies it against \
                --app-store-root-ca and --app-store-bundle-id. Blank lines are skipped.

                Each notification is applied as POST /v1/integrations/revenuecat or /app-store applies it: \
                once per event id (a line the server already took is a duplicate, so running a file twice \
                changes nothing the second time), never over a newer event of the same purchase \
                (superseded), and to a user here (unknown_user otherwise). Lines are applied oldest first by \
                the store's time. Sandbox notifications are reported as ignored unless --sandbox.

                Every line is read before any is applied: a line that is not a notification is named \
                FILE:LINE on standard error and nothing is applied (exit 65), unless --skip-invalid. A \
                store failure stops at its line, which changed nothing; the lines before it stay applied \
                and running the file again finds them duplicates. See guestmode-plan(1).

                Example: guestmode plan import --from missed.ndjson --format revenuecat
                """)

        @OptionGroup var global: GlobalOptions

        @OptionGroup var options: PlanImportOptions

        func validate() throws { try options.check() }

        func run() throws {
            // guestmode-serve parses the same arguments as this command did, then runs it.
            ServeLauncher.exec(
                [PlanImportOptions.internalCommand] + Array(CommandLine.arguments.dropFirst()), isJSON: global.json,
                command: "plan import")
        }
    }
}
