import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+ReportStore.swift when the area is ported; never shipped.
extension PostgresStore: ReportStore {
    public func funnelCounts(in period: ReportPeriod) throws -> FunnelCounts {
        throw PostgresStore.pending("ReportStore")
    }

    public func promptOutcomeCounts(in period: ReportPeriod) throws -> [PromptContextReport] {
        throw PostgresStore.pending("ReportStore")
    }

    public func variantConversionCounts(in period: ReportPeriod) throws -> [VariantCounts] {
        throw PostgresStore.pending("ReportStore")
    }

    public func meterUsageCounts(of meters: [String], in period: ReportPeriod) throws -> [String: MeterUsageCounts] {
        throw PostgresStore.pending("ReportStore")
    }

    public func withReplayTransaction<T>(_ body: (any ReplayTransaction) throws -> T) throws -> T {
        throw PostgresStore.pending("ReportStore")
    }
}
