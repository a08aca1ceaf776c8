import Foundation

/// Rows streamed out for backup archives and written back on import.
/// Each method is one whole use case in one transaction.
public protocol BackupRowStore: Sendable {
}
