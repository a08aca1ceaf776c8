import Foundation
import GuestModeKit

/// The failures `FaultHooks.failurePoint` asks for, as the engine's errors
/// (FaultHooks.swift compiles on its own, without the engine).
package enum InjectedFaults {
    /// Throws an internal failure that names the point, as a bug there would,
    /// when the test asked for a failure at `name`.
    package static func failIfAsked(at name: String) throws {
        guard FaultHooks.failurePoint == name else { return }
        throw GuestModeError(.internalFailure, "fault injected at \(name)")
    }

    /// Makes the engine fail after the idempotency key check of the write the
    /// test named (`track-key`, `meter-use-key`), or fail or die once the
    /// first batch of a build of kept grant draws has committed
    /// (`grant-draws-batch`); installs nothing otherwise.
    package static func install(on engine: inout GuestMode) {
        engine.faults = faults
    }

    /// The faults `install` gives an engine.
    package static var faults: EngineFaults {
        var faults = EngineFaults()
        if let point = FaultHooks.failurePoint, point.hasSuffix("-key") {
            faults.afterKeyCheck = { write in try failIfAsked(at: "\(write.rawValue)-key") }
        }
        if FaultHooks.failurePoint == "grant-draws-batch" || FaultHooks.stops(after: "grant-draws-batch") {
            faults.afterGrantDrawsBatch = {
                FaultHooks.stopIfAsked(after: "grant-draws-batch")
                try failIfAsked(at: "grant-draws-batch")
            }
        }
        return faults
    }
}
