import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit
import GuestModeServer

/// `serve`'s RevenueCat options, one group so the serve command only adds it and asks for its settings.
struct ServeRevenueCatOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Take RevenueCat's webhooks on POST /v1/integrations/revenuecat: FILE holds the Authorization header value set in RevenueCat's dashboard (a trailing newline is ignored); a request without exactly that value is 401. Without it the route answers 404 revenuecat_not_configured.",
            valueName: "file"))
    var revenuecatAuthorizationFile: String?

    @Flag(
        help:
            "Apply RevenueCat's SANDBOX events too (a test deployment); by default they are answered 200 and change nothing."
    )
    var revenuecatSandbox = false

    func validate() throws {
        if revenuecatSandbox && revenuecatAuthorizationFile == nil {
            throw ValidationError(
                "--revenuecat-sandbox goes with --revenuecat-authorization-file FILE, which turns the RevenueCat route on"
            )
        }
    }

    /// The settings, the file read once here: the value is kept only as its digest and never printed.
    func settings() throws -> RevenueCatSettings? {
        guard let path = revenuecatAuthorizationFile else { return nil }
        guard FileManager.default.fileExists(atPath: path) else {
            throw GuestModeError(.fileNotFound, "no file '\(path)' (--revenuecat-authorization-file)")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw GuestModeError(.ioError, "cannot read '\(path)' (--revenuecat-authorization-file)")
        }
        defer { try? handle.close() }
        let bytes = (try? handle.read(upToCount: RevenueCatSettings.maximumLength + 3)) ?? Data()
        var text = String(decoding: bytes, as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        do {
            return try RevenueCatSettings(authorization: text, acceptsSandbox: revenuecatSandbox)
        } catch {
            throw GuestModeError(
                .usage,
                "'\(path)' (--revenuecat-authorization-file) must hold the Authorization value RevenueCat sends: 1 to \(RevenueCatSettings.maximumLength) visible ASCII characters on one line"
            )
        }
    }
}
