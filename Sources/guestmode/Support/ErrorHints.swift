import GuestModeKit

extension GuestModeError.Code {
    /// How to fix a failure with this command line. The engine and backends
    /// say what went wrong without naming flags; the CLI, which owns the
    /// flags, adds the remedy.
    var hint: String? {
        switch self {
        case .storeNotFound:
            "create one with 'guestmode init --profile NAME', or point --store (or GUESTMODE_STORE) at an existing one"
        case .userNotFound: "list users with 'guestmode user list'"
        case .storeExists: "add --force to replace it, or choose another --store"
        case .storeWithoutProfile: "bind it with 'guestmode init --profile NAME --force' on that store"
        case .migrationUnfinished: "continue it with 'guestmode migrate GUEST --to ACCOUNT --resume'"
        case .migrationInterrupted:
            "once the store answers again, continue it with 'guestmode migrate GUEST --to ACCOUNT --resume'"
        case .userExists:
            "use --on-conflict skip to keep the store's data or --on-conflict replace to take the archive's"
        case .passphraseRequired: "give the passphrase with --passphrase-file FILE (- for standard input)"
        case .keyExists: "pass --force to replace it"
        default: nil
        }
    }
}
