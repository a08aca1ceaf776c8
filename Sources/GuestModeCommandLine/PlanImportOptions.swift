import ArgumentParser

/// The formats `plan import` reads.
package enum PlanImportFormat: String, ArgumentChoice {
    case appStore = "app-store"
    case revenuecat
}

/// `guestmode plan import`'s own options. guestmode parses and checks them (its help, its usage
/// errors), then runs guestmode-serve with the same arguments, which reads the file and applies it
/// (guestmode-serve's `PlanImportRoot`): the App Store verification it needs (jwt-kit,
/// swift-certificates) stays out of guestmode, whose every command would otherwise start slower
/// (bench/results.md, "Start-up").
///
/// ```swift
/// @OptionGroup var options: PlanImportOptions
/// func validate() throws { try options.check() }
/// ```
package struct PlanImportOptions: ParsableArguments {
    /// The first argument guestmode gives guestmode-serve for `plan import` (followed by guestmode's
    /// own arguments, unchanged): guestmode-serve then parses them as guestmode did.
    package static let internalCommand = "--internal-plan-import"

    @Option(help: ArgumentHelp("The notifications, one a line; - reads standard input.", valueName: "file"))
    package var from: String

    @Option(help: ArgumentHelp("What the file holds: revenuecat or app-store.", valueName: "format"))
    package var format: PlanImportFormat

    @Option(
        name: .customLong("app-store-root-ca"),
        help: ArgumentHelp(
            "With --format app-store: the root certificate (PEM or DER) the notifications' chains must lead to, Apple Root CA - G3 for the App Store.",
            valueName: "file"))
    package var appStoreRootCA: String?

    @Option(
        name: .customLong("app-store-bundle-id"),
        help: ArgumentHelp(
            "With --format app-store: the app's bundle id; a notification of another app is an invalid line.",
            valueName: "id"))
    package var appStoreBundleID: String?

    @Flag(help: "Apply sandbox notifications too (a test store); by default they are reported as ignored.")
    package var sandbox = false

    @Flag(help: "Apply the valid lines and report the invalid ones (exit 0).")
    package var skipInvalid = false

    package init() {}

    /// The usage errors of the options together, for the command's `validate()`.
    package func check() throws {
        switch format {
        case .appStore where appStoreRootCA == nil || appStoreBundleID == nil:
            throw ValidationError(
                "--format app-store verifies each notification: give --app-store-root-ca FILE and --app-store-bundle-id ID"
            )
        case .revenuecat where appStoreRootCA != nil || appStoreBundleID != nil:
            throw ValidationError("--app-store-root-ca and --app-store-bundle-id go with --format app-store")
        default: break
        }
    }
}
