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

struct RecordLocation: ParsableArguments {
    @Argument(help: "The user id.") var user: String
    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record key.") var key: String
}

/// Numeric options are checked against a documented range before any
/// arithmetic, so no value typed on the command line can overflow.
func requireInRange(_ value: Int, _ range: ClosedRange<Int>, _ option: String) throws {
    guard range.contains(value) else {
        throw ValidationError(
            "\(option) must be between \(range.lowerBound) and \(range.upperBound), not \(value)")
    }
}
