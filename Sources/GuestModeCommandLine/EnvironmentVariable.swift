import Foundation

/// One environment variable, read with `getenv`. `ProcessInfo.environment` builds a dictionary of every
/// variable on each call, 0.4 M instructions the first time: paid by every command for the one or two it
/// reads (bench/results.md, "Start-up"). FaultHooks.swift keeps `ProcessInfo`: it is compiled on its own by
/// scripts/check-release-hooks.sh, and only test builds read its variables.
///
/// ```swift
/// let now = EnvironmentVariable.nonEmpty("GUESTMODE_NOW")  // nil when unset or empty
/// ```
package enum EnvironmentVariable {
    /// The variable's value, nil when it is unset.
    package static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The variable's value, nil when it is unset or empty.
    package static func nonEmpty(_ name: String) -> String? {
        value(name).flatMap { $0.isEmpty ? nil : $0 }
    }
}
