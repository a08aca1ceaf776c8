import ArgumentParser
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit
import Testing

@testable import guestmode

/// The value lists `ArgumentChoice` makes are the ones ArgumentParser's own
/// defaults make for the same cases, which help, completion scripts and
/// errors print.
@Suite struct ArgumentChoiceTests {
    /// ArgumentParser's defaults: the same cases, without `ArgumentChoice`.
    enum Plain: String, ExpressibleByArgument, CaseIterable {
        case table, tsv, csv, json, ndjson
    }

    enum Described: String, ArgumentChoice {
        case first, second = "two"
        var defaultValueDescription: String { self == .first ? "the first" : rawValue }
    }

    enum PlainDescribed: String, ExpressibleByArgument, CaseIterable {
        case first, second = "two"
        var defaultValueDescription: String { self == .first ? "the first" : rawValue }
    }

    @Test func theListsAreArgumentParsers() {
        #expect(ListingFormat.allValueStrings == Plain.allValueStrings)
        #expect(ListingFormat.allValueDescriptions == Plain.allValueDescriptions)
        #expect(Described.allValueStrings == PlainDescribed.allValueStrings)
        #expect(Described.allValueDescriptions == PlainDescribed.allValueDescriptions)
        #expect(Described.allValueDescriptions == ["first": "the first"])
        // What completion scripts offer: printed whole, since the kind's cases are ArgumentParser's own.
        #expect(
            String(describing: ListingFormat.defaultCompletionKind) == String(describing: Plain.defaultCompletionKind))
        #expect(String(describing: ListingFormat.defaultCompletionKind).contains("ndjson"))
    }

    @Test func everyChoiceListsItsCasesInOrder() {
        func lists<Choice: ArgumentChoice>(_ type: Choice.Type) -> Bool {
            type.allValueStrings == type.allCases.map(\.rawValue) && type.allValueDescriptions.isEmpty
        }
        #expect(lists(ArchiveFormat.self) && lists(ConflictPolicy.self) && lists(MergePolicy.self))
        #expect(lists(UserImportFormat.self) && lists(PromptOutcome.self) && lists(MeterOverage.self))
        #expect(lists(RecordConflictPolicy.self) && lists(WebhookDeliveryStatus.self) && lists(PlanImportFormat.self))
    }
}
