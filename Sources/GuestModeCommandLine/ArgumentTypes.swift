import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeKit

/// An option's value that is one case of a string enumeration (`--format table`).
///
/// ArgumentParser's own lists of such a type's values (`allValueStrings`,
/// `allValueDescriptions`, for help, completion scripts and errors) build a
/// key path, `\.rawValue.defaultValueDescription`, each time a command that
/// takes one is parsed: 2.7 M instructions of every `--format` command's
/// start-up (bench/results.md, "Start-up"). These are the same lists, made
/// from the cases directly; `ArgumentChoiceTests` holds them equal.
///
///     extension ArchiveFormat: ArgumentChoice {}
package protocol ArgumentChoice: ExpressibleByArgument, CaseIterable, RawRepresentable where RawValue == String {}

extension ArgumentChoice {
    public static var allValueStrings: [String] { allCases.map { $0.rawValue } }

    /// A case whose description is its own value has none, as in ArgumentParser's.
    public static var allValueDescriptions: [String: String] {
        var descriptions: [String: String] = [:]
        for value in allCases where value.defaultValueDescription != value.rawValue {
            descriptions[value.rawValue] = value.defaultValueDescription
        }
        return descriptions
    }
}

extension ArchiveFormat: ArgumentChoice {}
extension ConflictPolicy: ArgumentChoice {}
extension MergePolicy: ArgumentChoice {}
extension UserImportFormat: ArgumentChoice {}
extension PromptOutcome: ArgumentChoice {}
extension MeterOverage: ArgumentChoice {}

package struct RecordLocation: ParsableArguments {
    @Argument(help: "The user id.") package var user: String
    @Argument(help: "The collection.") package var collection: String
    @Argument(help: "The record key.") package var key: String

    package init() {}

    /// The first three operands of a quickly parsed line (`QuickCommand`).
    package init(_ line: QuickLine) {
        user = line.operands[0]
        collection = line.operands[1]
        key = line.operands[2]
    }
}

/// Numeric options are checked against a documented range before any
/// arithmetic, so no value typed on the command line can overflow.
package func requireInRange(_ value: Int, _ range: ClosedRange<Int>, _ option: String) throws {
    guard range.contains(value) else {
        throw ValidationError(
            "\(option) must be between \(range.lowerBound) and \(range.upperBound), not \(value)")
    }
}
