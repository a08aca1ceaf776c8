import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeKit

extension ArchiveFormat: ExpressibleByArgument {}
extension ConflictPolicy: ExpressibleByArgument {}
extension MergePolicy: ExpressibleByArgument {}
extension UserImportFormat: ExpressibleByArgument {}
extension PromptOutcome: ExpressibleByArgument {}
extension MeterOverage: ExpressibleByArgument {}

package struct RecordLocation: ParsableArguments {
    @Argument(help: "The user id.") package var user: String
    @Argument(help: "The collection.") package var collection: String
    @Argument(help: "The record key.") package var key: String

    package init() {}
}

/// Numeric options are checked against a documented range before any
/// arithmetic, so no value typed on the command line can overflow.
package func requireInRange(_ value: Int, _ range: ClosedRange<Int>, _ option: String) throws {
    guard range.contains(value) else {
        throw ValidationError(
            "\(option) must be between \(range.lowerBound) and \(range.upperBound), not \(value)")
    }
}
