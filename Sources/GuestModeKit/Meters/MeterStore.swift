import Foundation

/// The usage ledger, warnings fired once, the gate.
/// Each method is one whole use case in one transaction.
public protocol MeterStore: Sendable {
}
