import Foundation

/// Ways for the test suite to make this process fail where a crash or a bug
/// would. They exist only in a build with the `GUESTMODE_FAULT_HOOKS`
/// condition (`make test`, `make crash`, `make fuzz-build`); without it the
/// hooks do nothing and their names are not in the binary, so the installed
/// `guestmode` (`make install`) cannot be made to kill itself by its
/// environment. `scripts/check-release-hooks.sh` checks that.
package enum FaultHooks {
    /// The environment variables the hooks read, cleared for processes a
    /// hooked process starts so a hook meant for one command does not fire in another.
    package static var variables: [String] {
        #if GUESTMODE_FAULT_HOOKS
        ["GUESTMODE_TEST_STOP_AFTER", "GUESTMODE_TEST_FAIL_AT", "GUESTMODE_TOUR_BREAK"]
        #else
        []
        #endif
    }

    /// True when the test asked this process to die at the point `name`
    /// (`link-lock`, `migrate-backup`, `migrate-step-N`).
    package static func stops(after name: String) -> Bool {
        #if GUESTMODE_FAULT_HOOKS
        ProcessInfo.processInfo.environment["GUESTMODE_TEST_STOP_AFTER"] == name
        #else
        false
        #endif
    }

    /// Ends the process at once, as `kill -9` would, when the test asked for a stop at `name`.
    package static func stopIfAsked(after name: String) {
        if stops(after: name) { kill(getpid(), SIGKILL) }
    }

    /// The point where the test asked this process to fail with an error
    /// rather than a kill (`migrate-step-N`: before step N runs; `track-key`,
    /// `meter-use-key`: after the write's idempotency key was checked and
    /// written, before the commit); see `InjectedFaults`.
    package static var failurePoint: String? {
        #if GUESTMODE_FAULT_HOOKS
        ProcessInfo.processInfo.environment["GUESTMODE_TEST_FAIL_AT"]
        #else
        nil
        #endif
    }

    /// The tour step the test wants to see fail: the first step whose command contains this text.
    package static var brokenTourStep: String? {
        #if GUESTMODE_FAULT_HOOKS
        ProcessInfo.processInfo.environment["GUESTMODE_TOUR_BREAK"]
        #else
        nil
        #endif
    }
}
