import Foundation

/// Guest-to-account migrations, one journaled step at a time.
/// Each method is one whole use case in one transaction.
public protocol MigrationJournalStore: Sendable {
}
