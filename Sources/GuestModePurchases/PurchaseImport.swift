import Foundation
import GuestModeKit

/// `plan import`: a file of store notifications (RevenueCat events or App Store Server Notifications), one a line, applied as the server applies them when
/// they are delivered, so a replayed notification the server already took is a duplicate.
///
/// Every line is read before any is applied: a file with a bad line changes nothing unless
/// `skippingInvalid`, and then only its good lines change plans.
///
/// ```swift
/// let report = try PurchaseImport(revenueCatLines: data).run(
///     engine: engine, acceptsSandbox: false, skippingInvalid: false, now: now, progress: { _, _ in })
/// // report.applied, report.duplicate, report.events[0].outcome
/// ```
package struct PurchaseImport: Sendable {
    /// One line that is not a notification: its number (from 1) and why.
    package struct Problem: Encodable, Sendable, Equatable {
        package var line: Int
        package var message: String
    }

    /// One notification applied: its line and what became of it.
    package struct Line: Encodable, Sendable {
        package var line: Int
        package var eventID: String
        package var type: String
        package var outcome: RevenueCatReceipt.Outcome
        package var user: String?
        package var plans: [String]
        package var note: String?
    }

    /// The document `plan import --json` prints.
    package struct Report: Encodable, Sendable {
        package var format: String
        /// Lines that hold a notification (blank lines are not counted).
        package var lines: Int
        package var applied = 0
        package var duplicate = 0
        package var superseded = 0
        package var unknownUser = 0
        package var ignored = 0
        /// Lines refused as they were read; none was applied when any is and invalid lines were not skipped.
        package var invalid = 0
        /// The notifications in the order they were applied (applied or not).
        package var events: [Line] = []
        /// The refused lines, in file order.
        package var problems: [Problem] = []
    }

    /// The longest line read: the largest notification either store sends, with room to spare.
    package static let maximumLineLength = RevenueCatEvent.maximumSize

    /// One notification read from a line.
    package enum Notification: Sendable {
        case revenueCat(RevenueCatEvent)
        case appStore(AppStoreNotification)

        /// When the store says it happened: the order the lines are applied in.
        var timestamp: Date {
            switch self {
            case .revenueCat(let event): event.timestamp
            case .appStore(let notification): notification.signedDate
            }
        }
    }

    /// The notifications of the file and the lines that are none.
    package let notifications: [(line: Int, notification: Notification)]
    package let problems: [Problem]
    package let format: String

    /// Reads every line of `data` (NDJSON; blank lines and a final line without a newline allowed) as a
    /// RevenueCat webhook body.
    package init(revenueCatLines data: Data) {
        var notifications: [(Int, Notification)] = []
        var problems: [Problem] = []
        Self.eachLine(of: data, problems: &problems) { number, line in
            notifications.append((number, .revenueCat(try RevenueCatEvent(json: line))))
        }
        self.notifications = notifications
        self.problems = problems
        format = "revenuecat"
    }

    /// Reads every line of `data` as an App Store Server Notification V2, verified by `verifier`: the
    /// signedPayload itself, or the body Apple posts, `{"signedPayload": "…"}`.
    package static func appStore(lines data: Data, verifier: AppStoreVerifier) async -> PurchaseImport {
        var payloads: [(Int, String)] = []
        var problems: [Problem] = []
        eachLine(of: data, problems: &problems) { number, line in
            payloads.append((number, try signedPayload(of: line)))
        }
        var notifications: [(Int, Notification)] = []
        for (number, payload) in payloads {
            do {
                notifications.append((number, .appStore(try await verifier.notification(payload))))
            } catch let error as GuestModeError {
                problems.append(Problem(line: number, message: error.message))
            } catch {
                problems.append(Problem(line: number, message: "\(error)"))
            }
        }
        return PurchaseImport(
            notifications: notifications, problems: problems.sorted { $0.line < $1.line }, format: "app-store")
    }

    private init(notifications: [(Int, Notification)], problems: [Problem], format: String) {
        self.notifications = notifications.map { (line: $0.0, notification: $0.1) }
        self.problems = problems
        self.format = format
    }

    private static func signedPayload(of line: Data.SubSequence) throws -> String {
        guard line.first == UInt8(ascii: "{") else {
            return try TextRule.decode(line, what: "the signed payload")
        }
        let value: JSONValue
        do {
            value = try StrictJSON.parse(Data(line))
        } catch {
            throw GuestModeError(.invalidJson, "the line is not valid JSON: \(error)")
        }
        guard case .object(let members) = value, case .string(let payload)? = members["signedPayload"] else {
            throw GuestModeError(
                .invalidJson, "the line must be a signedPayload or {\"signedPayload\": \"…\"}, as Apple posts it")
        }
        return payload
    }

    /// Calls `read` with each line that is not blank, its trailing CR removed; what it throws becomes the
    /// line's problem.
    private static func eachLine(
        of data: Data, problems: inout [Problem], _ read: (Int, Data.SubSequence) throws -> Void
    ) {
        var number = 0
        for raw in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            var line = raw
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            do {
                guard line.count <= maximumLineLength else {
                    throw GuestModeError(
                        .lineTooLong,
                        "the line is longer than \(maximumLineLength) bytes, the most one notification may hold")
                }
                try read(number, line)
            } catch let error as GuestModeError {
                problems.append(Problem(line: number, message: error.message))
            } catch {
                problems.append(Problem(line: number, message: "\(error)"))
            }
        }
    }

    /// Applies the notifications oldest first (by the time the store gives each, the file's order
    /// between equal times), as they happened; `progress` gets how many are done and how many there are.
    /// Sandbox notifications change plans only when `acceptsSandbox`. A failure of the store stops the
    /// import at that line, which changed nothing: the lines before it are applied, and running the file
    /// again finds them duplicates.
    package func run(
        engine: GuestMode, acceptsSandbox: Bool, skippingInvalid: Bool, now: Date, progress: (Int, Int) -> Void
    ) throws -> Report {
        var report = Report(format: format, lines: notifications.count + problems.count)
        report.invalid = problems.count
        report.problems = problems
        if !problems.isEmpty && !skippingInvalid { return report }
        let ordered = notifications.enumerated().sorted {
            ($0.element.notification.timestamp, $0.offset) < ($1.element.notification.timestamp, $1.offset)
        }.map(\.element)
        let revenueCat = RevenueCatApplication(engine: engine, acceptsSandbox: acceptsSandbox)
        for (index, item) in ordered.enumerated() {
            let line: Line
            do {
                switch item.notification {
                case .revenueCat(let event):
                    line = Line(item.line, try revenueCat.apply(event, now: now))
                case .appStore(let notification):
                    line = try Self.apply(
                        notification, line: item.line, engine: engine, acceptsSandbox: acceptsSandbox, now: now)
                }
            } catch let error as GuestModeError {
                throw GuestModeError(error.code, "line \(item.line): \(error.message)")
            }
            switch line.outcome {
            case .applied: report.applied += 1
            case .duplicate: report.duplicate += 1
            case .superseded: report.superseded += 1
            case .unknownUser: report.unknownUser += 1
            case .ignored: report.ignored += 1
            }
            report.events.append(line)
            progress(index + 1, ordered.count)
        }
        return report
    }

    /// An App Store notification as `POST /v1/integrations/app-store` applies it.
    private static func apply(
        _ notification: AppStoreNotification, line: Int, engine: GuestMode, acceptsSandbox: Bool, now: Date
    ) throws -> Line {
        var type = notification.notificationType
        if let subtype = notification.subtype { type += "/" + subtype }
        var result = Line(
            line: line, eventID: notification.notificationUUID, type: type, outcome: .ignored, user: nil, plans: [],
            note: nil)
        switch AppStorePlanChanges.change(for: notification, profile: engine.profile) {
        case .acknowledged(let why):
            result.note = why
        case .change(let change):
            if change.environment == .sandbox && !acceptsSandbox {
                result.note = "a Sandbox notification; sandbox notifications are not applied"
                return result
            }
            let applied = try engine.applyStorePlanChange(change, now: now)
            result.outcome = RevenueCatReceipt.Outcome(applied.outcome)
            result.user = applied.userID
            result.plans = [change.kind.planName ?? applied.status?.plan].compactMap { $0 }
        }
        return result
    }
}

extension PurchaseImport.Line {
    init(_ line: Int, _ receipt: RevenueCatReceipt) {
        self.init(
            line: line, eventID: receipt.eventID, type: receipt.type, outcome: receipt.outcome, user: receipt.user,
            plans: receipt.plans, note: receipt.note)
    }
}
