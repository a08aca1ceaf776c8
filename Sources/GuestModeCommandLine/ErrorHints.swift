import GuestModeKit

extension GuestModeError.Code {
    /// How to fix a failure with this command line. The engine and backends
    /// say what went wrong without naming flags; the CLI, which owns the
    /// flags, adds the remedy.
    package var hint: String? {
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
        case .corruptStore: "'guestmode db check' checks the rest of the store"
        case .profileNotFound: "'guestmode profile list' shows the templates"
        case .schemaMigrationFailed:
            "'guestmode db status' shows the schema history; run 'guestmode db migrate' again once the cause is fixed"
        case .storeIsDirectory: "name a file in it with --store, such as --store DIRECTORY/guestmode.sqlite"
        case .identityAlreadyExists:
            "'guestmode merge GUEST --into USER' moves a guest's data into the user who holds the identity"
        case .cannotDecrypt:
            "import the deployment's key with 'guestmode backup key import', or give the passphrase with --passphrase-file"
        case .signingKeyInUse: "'guestmode serve signing-key rotate' makes a new current key"
        case .signingKeySealedElsewhere:
            "put the deployment's key on this machine with 'guestmode backup key import FILE' (GUESTMODE_BACKUP_KEY_FILE names where)"
        default: nil
        }
    }
}
