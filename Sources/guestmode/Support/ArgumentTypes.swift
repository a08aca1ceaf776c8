import ArgumentParser
import Foundation
import GuestModeKit

extension ArchiveFormat: ExpressibleByArgument {}
extension ConflictPolicy: ExpressibleByArgument {}
extension MergePolicy: ExpressibleByArgument {}
extension PromptOutcome: ExpressibleByArgument {}

struct RecordLocation: ParsableArguments {
    @Argument(help: "The user id.") var user: String
    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record key.") var key: String
}
