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
    /// test named (`track-key`, `meter-use-key`); installs nothing otherwise.
    package static func install(on engine: inout GuestMode) {
        guard let point = FaultHooks.failurePoint, point.hasSuffix("-key") else { return }
        engine.faults = EngineFaults { write in try failIfAsked(at: "\(write.rawValue)-key") }
    }
}
