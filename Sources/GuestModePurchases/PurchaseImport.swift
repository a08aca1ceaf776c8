import Foundation
import GuestModeKit

/// `plan import`: a file of store notifications, one a line, applied as the server applies them when
/// they are delivered, so a replayed notification the server already took is a duplicate.
///
/// Every line is read before any is applied: a file with a bad line changes nothing unless
/// `skippingInvalid`, and then only its good lines change plans.
///
/// ```swift
/// let report = try PurchaseImport(lines: data, reader: .revenueCat).run(
///     application: RevenueCatApplication(engine: engine, acceptsSandbox: false), skippingInvalid: false,
///     now: now, progress: { _, _ in })
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

    /// The notifications of `data` and the lines that are none.
    package let events: [(line: Int, event: RevenueCatEvent)]
    package let problems: [Problem]
    package let format: String

    /// Reads every line of `data` (NDJSON; blank lines and a final line without a newline allowed).
    package init(revenueCatLines data: Data) {
        var events: [(Int, RevenueCatEvent)] = []
        var problems: [Problem] = []
        var number = 0
        for raw in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            var line = raw
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            do {
                guard line.count <= Self.maximumLineLength else {
                    throw GuestModeError(
                        .lineTooLong,
                        "the line is longer than \(Self.maximumLineLength) bytes, the most one event may hold")
                }
                events.append((number, try RevenueCatEvent(json: line)))
            } catch let error as GuestModeError {
                problems.append(Problem(line: number, message: error.message))
            } catch {
                problems.append(Problem(line: number, message: "\(error)"))
            }
        }
        self.events = events
        self.problems = problems
        format = "revenuecat"
    }

    /// Applies the notifications oldest first (by the time the store gives each, the file's order
    /// between equal times), as they happened; `progress` gets how many are done and how many there are.
    /// A failure of the store stops the import at that line, which changed nothing: the lines before it
    /// are applied, and running the file again finds them duplicates.
    package func run(
        application: RevenueCatApplication, skippingInvalid: Bool, now: Date,
        progress: (Int, Int) -> Void
    ) throws -> Report {
        var report = Report(format: format, lines: events.count + problems.count)
        report.invalid = problems.count
        report.problems = problems
        if !problems.isEmpty && !skippingInvalid { return report }
        let ordered = events.enumerated().sorted {
            ($0.element.event.timestamp, $0.offset) < ($1.element.event.timestamp, $1.offset)
        }.map(\.element)
        for (index, item) in ordered.enumerated() {
            let receipt: RevenueCatReceipt
            do {
                receipt = try application.apply(item.event, now: now)
            } catch let error as GuestModeError {
                throw GuestModeError(error.code, "line \(item.line) (event \(item.event.id)): \(error.message)")
            }
            switch receipt.outcome {
            case .applied: report.applied += 1
            case .duplicate: report.duplicate += 1
            case .superseded: report.superseded += 1
            case .unknownUser: report.unknownUser += 1
            case .ignored: report.ignored += 1
            }
            report.events.append(
                Line(
                    line: item.line, eventID: receipt.eventID, type: receipt.type, outcome: receipt.outcome,
                    user: receipt.user, plans: receipt.plans, note: receipt.note))
            progress(index + 1, events.count)
        }
        return report
    }
}
