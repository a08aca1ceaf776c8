import Foundation

/// What kind of failure an error is. The engine reports every failure as one
/// of these so each front end answers it its own way without knowing where
/// it came from: the command line maps a kind to an exit status
/// (Sources/guestmode/Support/ExitStatus.swift).
public enum FailureKind: String, Sendable, Codable, CaseIterable {
    case internalFailure = "internal"
    case needsAccount = "needs_account"
    case needsPremium = "needs_premium"
    case meterExhausted = "meter_exhausted"
    case nothingDue = "nothing_due"
    case conflict
    case usage
    case badData = "bad_data"
    case notFound = "not_found"
    case cannotCreate = "cannot_create"
    case ioError = "io_error"
    case tryAgainLater = "try_again_later"
}

/// An engine failure: what class it is, a stable machine-readable code and a
/// message for people that says what went wrong, where, and how to fix it.
///
/// The code decides the kind, as SQLite's result code decides GRDB's
/// `ResultCode`: every failure with one code is answered the same way (one
/// exit status, one HTTP status), whoever raised it.
public struct GuestModeError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The failure's code, which decides its kind.
    public var code: Code
    /// What went wrong, where, and how to fix it, for people.
    public var message: String

    /// What kind of failure this is: always its code's kind.
    public var kind: FailureKind { code.kind }

    /// A failure of `code`'s kind.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The form the package's sources raise errors with: the kind written
    /// where the error is raised, so the reader sees the answer it gets.
    /// `kind` must be `code.kind` (the error's kind is the code's either
    /// way); `ErrorKindTests` reads every construction in the sources and
    /// fails on one that names another.
    package init(_ kind: FailureKind, code: Code, _ message: String) {
        self.init(code, message)
    }

    /// The message.
    public var description: String { message }

    package static func notFound(_ message: String, code: Code) -> GuestModeError {
        GuestModeError(.notFound, code: code, message)
    }

    package static func badData(_ message: String, code: Code) -> GuestModeError {
        GuestModeError(.badData, code: code, message)
    }

    package static func usage(_ message: String, code: Code) -> GuestModeError {
        GuestModeError(.usage, code: code, message)
    }

    package static func conflict(_ message: String, code: Code) -> GuestModeError {
        GuestModeError(.conflict, code: code, message)
    }
}

extension GuestModeError {
    /// A stable snake_case identifier scripts can switch on (`--json` prints
    /// it as `error.code`); the catalogue is listed in guestmode(1) with the
    /// exit status of each. Codes are compared as values, never as strings.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The code's snake_case name, such as `user_not_found`.
        public let rawValue: String
        /// The kind of every failure with this code.
        public let kind: FailureKind

        /// The catalogue's code named `rawValue`; nil for a name it does not hold.
        public init?(rawValue: String) {
            guard let code = Code.all.first(where: { $0.rawValue == rawValue }) else { return nil }
            self = code
        }

        private init(_ rawValue: String, _ kind: FailureKind) {
            self.rawValue = rawValue
            self.kind = kind
        }

        /// The code's name.
        public var description: String { rawValue }

        /// True when `error` is a `GuestModeError` with this code, so a
        /// caller catches one failure by its code, as GRDB's `ResultCode` is caught:
        ///
        /// ```swift
        /// do {
        ///     try engine.deleteUser(id)
        /// } catch GuestModeError.Code.userNotFound {
        ///     // already gone
        /// }
        /// ```
        public static func ~= (pattern: Code, error: any Error) -> Bool {
            (error as? GuestModeError)?.code == pattern
        }

        /// Every code the engine and the command line raise, in order.
        public static let all: [Code] = [
            .alreadyMigrated,
            .archiveError,
            .archiveFormatMismatch,
            .archiveNotFound,
            .archiveTooNew,
            .archiveTooOld,
            .archiveUnreadable,
            .archiveUserMismatch,
            .archiveWriteFailed,
            .assignmentLost,
            .backupKeyNotFound,
            .badBackupKey,
            .badDuration,
            .badHeader,
            .badManifest,
            .badRow,
            .badSignature,
            .badTime,
            .bodyTooLarge,
            .cannotCreateBackup,
            .cannotCreateOutput,
            .cannotCreateStore,
            .cannotDecrypt,
            .cannotOpenStore,
            .cannotSpool,
            .commitUnknown,
            .conflictNotFound,
            .conflictingPlanTerms,
            .cooldown,
            .copyMismatch,
            .corruptStore,
            .countOverflow,
            .damagedArchive,
            .databaseError,
            .destinationRefused,
            .destinationUnauthorized,
            .destinationUnavailable,
            .differentUser,
            .diskFull,
            .duplicateRow,
            .emptyKey,
            .emptyPeriod,
            .emptySubject,
            .endNotAfterNow,
            .experimentNotFound,
            .fileNotFound,
            .fileTooLarge,
            .foreignRow,
            .grantNotFound,
            .guestAlreadyMoved,
            .guestOwnerMismatch,
            .hostileArchive,
            .idTokenAudienceMismatch,
            .idTokenExpired,
            .idTokenInvalid,
            .idTokenIssuerMismatch,
            .idTokenNonceMismatch,
            .idempotencyKeyReused,
            .identityAlreadyExists,
            .identityNotFound,
            .identityProviderNotConfigured,
            .importConflict,
            .inconsistentRows,
            .insufficientScope,
            .integrityCheckFailed,
            .internalFailure,
            .invalidAmount,
            .invalidAttempts,
            .invalidDevice,
            .invalidEvent,
            .invalidEventLog,
            .invalidIdempotencyKey,
            .invalidIdentityProvider,
            .invalidImportFile,
            .invalidJson,
            .invalidJWKS,
            .invalidKeyName,
            .invalidLevel,
            .invalidLimit,
            .invalidPoolSize,
            .invalidProfile,
            .invalidSchema,
            .invalidURL,
            .invalidUsername,
            .invalidUtf8,
            .ioError,
            .journalMismatch,
            .journalNotFound,
            .keyExists,
            .lengthRequired,
            .lineTooLong,
            .malformedLog,
            .malformedRequest,
            .manifestMismatch,
            .meterExhausted,
            .migrationInterrupted,
            .migrationUnfinished,
            .missingManifest,
            .missingSecret,
            .missingUserRow,
            .needsAccount,
            .needsPremium,
            .neverAsk,
            .noEligiblePrompt,
            .noFreeKey,
            .noTemplates,
            .notABackup,
            .notAFile,
            .notAGuest,
            .notAStore,
            .notAnArchive,
            .nothingToResume,
            .nulInText,
            .ownerlessKeyWithoutOwner,
            .passphraseRequired,
            .planNotFound,
            .poolExhausted,
            .profileMismatch,
            .profileNotFound,
            .profileUpgradeRefused,
            .providerAlreadyLinked,
            .pushIncomplete,
            .rateLimited,
            .recordCapNeedsPremium,
            .recordCapReached,
            .recordExists,
            .recordKeyTaken,
            .recordNotFound,
            .recordNotObject,
            .recordsLeftBehind,
            .refreshTokenInvalid,
            .refreshTokenReused,
            .requestIncomplete,
            .requestTimeout,
            .routeNotFound,
            .rowConflict,
            .sameStore,
            .sameUser,
            .schemaMigrationFailed,
            .secretTooLong,
            .serverBusy,
            .serverKeyExists,
            .serverKeyNotFound,
            .storeBusy,
            .storeExists,
            .storeIsDirectory,
            .storeNotFound,
            .storeTooNew,
            .storeUnreachable,
            .storeWithoutProfile,
            .tooManyProviders,
            .trialAlreadyUsed,
            .unauthorized,
            .unexportableValue,
            .unknownCollection,
            .unknownContext,
            .unknownMeter,
            .unknownPlan,
            .unknownProvider,
            .unknownTrigger,
            .unknownVariant,
            .unknownWebhook,
            .unsupportedStore,
            .unsupportedTransferEncoding,
            .upgradeInProgress,
            .usage,
            .userAuthenticated,
            .userExists,
            .userLinked,
            .userNotFound,
            .usernameTaken,
            .verifyFailed,
            .webhookDelivered,
            .webhookNotFound,
            .webhookSecretUnavailable,
            .webhooksUndelivered,
            .windowFull,
        ]

        /// The guest was already moved into an account; there is nothing left to move.
        public static let alreadyMigrated = Code("already_migrated", .conflict)
        /// The archive library failed in a way the engine did not expect.
        public static let archiveError = Code("archive_error", .internalFailure)
        /// The archive's name promises one format but its bytes are another.
        public static let archiveFormatMismatch = Code("archive_format_mismatch", .badData)
        /// The archive file does not exist or cannot be opened.
        public static let archiveNotFound = Code("archive_not_found", .notFound)
        /// The archive uses a backup format version newer than this release reads.
        public static let archiveTooNew = Code("archive_too_new", .badData)
        /// The archive uses a backup format version this release no longer reads.
        public static let archiveTooOld = Code("archive_too_old", .badData)
        /// Reading the archive failed part way (an I/O error).
        public static let archiveUnreadable = Code("archive_unreadable", .ioError)
        /// An archive pushed to or pulled from one user's backups holds other users' data.
        public static let archiveUserMismatch = Code("archive_user_mismatch", .conflict)
        /// Writing the archive failed (an I/O error); no archive was left behind.
        public static let archiveWriteFailed = Code("archive_write_failed", .ioError)
        /// An experiment assignment written in this transaction could not be read back.
        public static let assignmentLost = Code("assignment_lost", .internalFailure)
        /// The backup key file named by the environment does not exist.
        public static let backupKeyNotFound = Code("backup_key_not_found", .notFound)
        /// A backup signing key is not the expected number of hex digits.
        public static let badBackupKey = Code("bad_backup_key", .badData)
        /// A duration (a trial, a purge age) is not positive.
        public static let badDuration = Code("bad_duration", .usage)
        /// The archive's header.json cannot be read.
        public static let badHeader = Code("bad_header", .badData)
        /// The archive's manifest.json cannot be read.
        public static let badManifest = Code("bad_manifest", .badData)
        /// A row in the archive is not a JSON object of column values.
        public static let badRow = Code("bad_row", .badData)
        /// The archive's signature is missing, malformed or does not match.
        public static let badSignature = Code("bad_signature", .badData)
        /// A time is not written as ISO 8601.
        public static let badTime = Code("bad_time", .usage)
        /// The safety backup taken before a change could not be written.
        public static let cannotCreateBackup = Code("cannot_create_backup", .cannotCreate)
        /// An output file (an export, a report) could not be created.
        public static let cannotCreateOutput = Code("cannot_create_output", .cannotCreate)
        /// A new store could not be created where asked.
        public static let cannotCreateStore = Code("cannot_create_store", .cannotCreate)
        /// An encrypted archive does not open with the key or passphrase given.
        public static let cannotDecrypt = Code("cannot_decrypt", .badData)
        /// The store exists but cannot be opened (busy, or no permission).
        public static let cannotOpenStore = Code("cannot_open_store", .cannotCreate)
        /// The temporary file that holds a large input could not be created.
        public static let cannotSpool = Code("cannot_spool", .cannotCreate)
        /// The connection was lost during a commit, so whether the transaction committed is unknown.
        public static let commitUnknown = Code("commit_unknown", .tryAgainLater)
        /// No archived merge conflict has the id given.
        public static let conflictNotFound = Code("conflict_not_found", .notFound)
        /// A plan was granted both as a trial and until a time.
        public static let conflictingPlanTerms = Code("conflicting_plan_terms", .usage)
        /// No prompt is due: the last one was shown within the profile's cooldown.
        public static let cooldown = Code("cooldown", .nothingDue)
        /// A table differs between a copied store and its source.
        public static let copyMismatch = Code("copy_mismatch", .badData)
        /// A value in the store is not one the engine wrote (an unknown name, a bad time, a number out of range).
        public static let corruptStore = Code("corrupt_store", .badData)
        /// A counter would pass its largest value.
        public static let countOverflow = Code("count_overflow", .badData)
        /// The archive is truncated or is not a compressed archive.
        public static let damagedArchive = Code("damaged_archive", .badData)
        /// The database reported an error the engine did not expect.
        public static let databaseError = Code("database_error", .internalFailure)
        /// The backup destination (a directory or an HTTP server) or a webhook endpoint cannot be reached or written.
        public static let destinationUnavailable = Code("destination_unavailable", .tryAgainLater)
        /// A user in the archive has the id of a different user in the store.
        public static let differentUser = Code("different_user", .conflict)
        /// A remote backup destination answered a push or a pull with a refusal other than of its credentials.
        public static let destinationRefused = Code("destination_refused", .cannotCreate)
        /// A remote backup destination refused the bearer token (401 or 403): a setting to fix, not an outage.
        public static let destinationUnauthorized = Code("destination_unauthorized", .usage)
        /// The disk is full; nothing was changed.
        public static let diskFull = Code("disk_full", .ioError)
        /// The archive repeats the key of an earlier row.
        public static let duplicateRow = Code("duplicate_row", .badData)
        /// A record key is empty.
        public static let emptyKey = Code("empty_key", .usage)
        /// A report period ends before or when it starts.
        public static let emptyPeriod = Code("empty_period", .usage)
        /// An identity's subject is empty.
        public static let emptySubject = Code("empty_subject", .usage)
        /// A plan's end is not after the current time.
        public static let endNotAfterNow = Code("end_not_after_now", .usage)
        /// The profile has no experiment of that name.
        public static let experimentNotFound = Code("experiment_not_found", .notFound)
        /// An input file (an event log, a records file) does not exist.
        public static let fileNotFound = Code("file_not_found", .notFound)
        /// An input file is larger than the engine reads.
        public static let fileTooLarge = Code("file_too_large", .badData)
        /// An archive row belongs to a user the archive does not list.
        public static let foreignRow = Code("foreign_row", .badData)
        /// No meter grant has the id given.
        public static let grantNotFound = Code("grant_not_found", .notFound)
        /// The guest is gone: another migration already moved it.
        public static let guestAlreadyMoved = Code("guest_already_moved", .conflict)
        /// The archive's guest owner differs from the one the profile names.
        public static let guestOwnerMismatch = Code("guest_owner_mismatch", .badData)
        /// The archive holds an entry that could escape the directory or exhaust memory; it was refused unread.
        public static let hostileArchive = Code("hostile_archive", .badData)
        /// An idempotency key was seen before with another action, meter or user.
        public static let idempotencyKeyReused = Code("idempotency_key_reused", .conflict)
        /// The identity already belongs to another user.
        public static let identityAlreadyExists = Code("identity_already_exists", .conflict)
        /// The user has no identity with that provider.
        public static let identityNotFound = Code("identity_not_found", .notFound)
        /// The archive's rows contradict each other (counts, references, times).
        public static let inconsistentRows = Code("inconsistent_rows", .badData)
        /// The store's database integrity check found damage.
        public static let integrityCheckFailed = Code("integrity_check_failed", .badData)
        /// A failure the engine did not expect; the message says where.
        public static let internalFailure = Code("internal", .internalFailure)
        /// A meter amount is not a positive number the meter can hold.
        public static let invalidAmount = Code("invalid_amount", .usage)
        /// The maximum number of push attempts is less than 1.
        public static let invalidAttempts = Code("invalid_attempts", .usage)
        /// A device id is empty, too long or holds control characters.
        public static let invalidDevice = Code("invalid_device", .usage)
        /// A tracked event lacks a user or an action, or has a bad count or property.
        public static let invalidEvent = Code("invalid_event", .usage)
        /// An event log has invalid lines, so nothing was applied.
        public static let invalidEventLog = Code("invalid_event_log", .badData)
        /// Record data is not valid JSON.
        public static let invalidJson = Code("invalid_json", .badData)
        /// A compression level is out of range for the archive format.
        public static let invalidLevel = Code("invalid_level", .usage)
        /// A listing limit is out of range.
        public static let invalidLimit = Code("invalid_limit", .usage)
        /// A connection pool was given fewer than one connection.
        public static let invalidPoolSize = Code("invalid_pool_size", .usage)
        /// A profile does not validate; the message lists every problem.
        public static let invalidProfile = Code("invalid_profile", .badData)
        /// A PostgreSQL schema name is not one the store uses.
        public static let invalidSchema = Code("invalid_schema", .usage)
        /// An anonymous username is empty, too long or holds control characters.
        public static let invalidUsername = Code("invalid_username", .usage)
        /// A destination address is not an http:// or https:// URL, is plain http:// to another machine, or
        /// carries a user name or password.
        public static let invalidURL = Code("invalid_url", .usage)
        /// Text is not valid UTF-8.
        public static let invalidUtf8 = Code("invalid_utf8", .badData)
        /// Reading or writing a file failed.
        public static let ioError = Code("io_error", .ioError)
        /// A migration journal was planned with other steps than the profile now declares.
        public static let journalMismatch = Code("journal_mismatch", .badData)
        /// No migration journal has the id given.
        public static let journalNotFound = Code("journal_not_found", .notFound)
        /// A backup key file already exists and would be overwritten.
        public static let keyExists = Code("key_exists", .conflict)
        /// A line of an input file is longer than the engine reads.
        public static let lineTooLong = Code("line_too_long", .badData)
        /// An account of a user import is already in the store with other
        /// data, or one of its identities belongs to another user.
        public static let importConflict = Code("import_conflict", .conflict)
        /// A user import's file is not what its format says, or an account
        /// in it cannot be imported.
        public static let invalidImportFile = Code("invalid_import_file", .badData)
        /// An event log has invalid lines, so nothing was replayed.
        public static let malformedLog = Code("malformed_log", .badData)
        /// The archive's entries do not match its manifest.
        public static let manifestMismatch = Code("manifest_mismatch", .badData)
        /// A migration stopped part way; resuming it finishes it.
        public static let migrationInterrupted = Code("migration_interrupted", .tryAgainLater)
        /// An earlier migration of the same guest is unfinished.
        public static let migrationUnfinished = Code("migration_unfinished", .conflict)
        /// The archive has no manifest.
        public static let missingManifest = Code("missing_manifest", .badData)
        /// An anonymous credential was given without its secret.
        public static let missingSecret = Code("missing_secret", .usage)
        /// The archive lists a user it has no row for.
        public static let missingUserRow = Code("missing_user_row", .badData)
        /// No prompt is due: the user asked never to be asked again.
        public static let neverAsk = Code("never_ask", .nothingDue)
        /// No prompt is due: no rule of the profile holds.
        public static let noEligiblePrompt = Code("no_eligible_prompt", .nothingDue)
        /// No free record key was left for a kept-both merge conflict.
        public static let noFreeKey = Code("no_free_key", .internalFailure)
        /// No profile templates were found.
        public static let noTemplates = Code("no_templates", .notFound)
        /// The archive has no entries, so it is not a backup.
        public static let notABackup = Code("not_a_backup", .badData)
        /// A path names something other than a regular file.
        public static let notAFile = Code("not_a_file", .notFound)
        /// The user to move is not a guest.
        public static let notAGuest = Code("not_a_guest", .conflict)
        /// A database is not a guestmode store.
        public static let notAStore = Code("not_a_store", .badData)
        /// A path to read an archive from is not a regular file.
        public static let notAnArchive = Code("not_an_archive", .badData)
        /// No unfinished migration of that guest into that account exists.
        public static let nothingToResume = Code("nothing_to_resume", .notFound)
        /// Text contains a NUL character, which the engine never stores.
        public static let nulInText = Code("nul_in_text", .badData)
        /// An ownerless record in a collection with unique fields has no owner in its key.
        public static let ownerlessKeyWithoutOwner = Code("ownerless_key_without_owner", .usage)
        /// The archive is encrypted with a passphrase and none was given.
        public static let passphraseRequired = Code("passphrase_required", .usage)
        /// The user has no grant of that plan.
        public static let planNotFound = Code("plan_not_found", .notFound)
        /// Every connection of the pool stayed in use for the whole wait.
        public static let poolExhausted = Code("pool_exhausted", .tryAgainLater)
        /// The archive holds data of a profile other than the store's.
        public static let profileMismatch = Code("profile_mismatch", .badData)
        /// No template and no file has the profile name given.
        public static let profileNotFound = Code("profile_not_found", .notFound)
        /// The store's data does not fit the new profile version.
        public static let profileUpgradeRefused = Code("profile_upgrade_refused", .badData)
        /// The user already has an identity with that provider.
        public static let providerAlreadyLinked = Code("provider_already_linked", .conflict)
        /// Some queued backups could not be pushed; they stay queued.
        public static let pushIncomplete = Code("push_incomplete", .tryAgainLater)
        /// An account reached its tier's cap; a plan raises it.
        public static let recordCapNeedsPremium = Code("record_cap_needs_premium", .needsPremium)
        /// A guest reached its cap; linking an account raises it.
        public static let recordCapReached = Code("record_cap_reached", .needsAccount)
        /// A record with that key already exists and the conflict policy refuses it.
        public static let recordExists = Code("record_exists", .conflict)
        /// Another user already has a record with that key in a collection with unique keys.
        public static let recordKeyTaken = Code("record_key_taken", .conflict)
        /// The user has no record with that key.
        public static let recordNotFound = Code("record_not_found", .notFound)
        /// Record data is JSON but not an object.
        public static let recordNotObject = Code("record_not_object", .badData)
        /// A migration finished but records of the guest remain.
        public static let recordsLeftBehind = Code("records_left_behind", .internalFailure)
        /// An archive row collides with a row already in the store.
        public static let rowConflict = Code("row_conflict", .conflict)
        /// A copy names the store being copied as its destination.
        public static let sameStore = Code("same_store", .usage)
        /// A migration or merge names one user as both the guest and the account.
        public static let sameUser = Code("same_user", .usage)
        /// A schema migration failed; the store is unchanged.
        public static let schemaMigrationFailed = Code("schema_migration_failed", .badData)
        /// An anonymous secret is longer than the engine reads.
        public static let secretTooLong = Code("secret_too_long", .badData)
        /// The store stayed locked by another writer for the whole wait.
        public static let storeBusy = Code("store_busy", .tryAgainLater)
        /// A store already exists where a new one was to be created.
        public static let storeExists = Code("store_exists", .cannotCreate)
        /// The store path names a directory.
        public static let storeIsDirectory = Code("store_is_directory", .cannotCreate)
        /// No store exists at the path or in the schema given.
        public static let storeNotFound = Code("store_not_found", .notFound)
        /// The store was written by a newer release.
        public static let storeTooNew = Code("store_too_new", .badData)
        /// The database server cannot be reached.
        public static let storeUnreachable = Code("store_unreachable", .tryAgainLater)
        /// The store is not bound to a profile.
        public static let storeWithoutProfile = Code("store_without_profile", .badData)
        /// The user already has as many identities as the profile allows.
        public static let tooManyProviders = Code("too_many_providers", .conflict)
        /// The user already had this plan's trial.
        public static let trialAlreadyUsed = Code("trial_already_used", .conflict)
        /// A stored value cannot be carried by a backup.
        public static let unexportableValue = Code("unexportable_value", .badData)
        /// The profile has no collection of that name.
        public static let unknownCollection = Code("unknown_collection", .usage)
        /// The profile has no prompt context of that name.
        public static let unknownContext = Code("unknown_context", .usage)
        /// The profile has no meter of that name.
        public static let unknownMeter = Code("unknown_meter", .usage)
        /// The profile has no plan of that name.
        public static let unknownPlan = Code("unknown_plan", .usage)
        /// The profile does not accept that identity provider.
        public static let unknownProvider = Code("unknown_provider", .usage)
        /// The profile has no prompt trigger of that name.
        public static let unknownTrigger = Code("unknown_trigger", .usage)
        /// The experiment has no variant of that name.
        public static let unknownVariant = Code("unknown_variant", .usage)
        /// The profile has no webhook endpoint of that name.
        public static let unknownWebhook = Code("unknown_webhook", .usage)
        /// A store location is neither a file path nor a PostgreSQL URI.
        public static let unsupportedStore = Code("unsupported_store", .usage)
        /// Another account link of the same user is in progress.
        public static let upgradeInProgress = Code("upgrade_in_progress", .conflict)
        /// The input is wrong in a way no narrower code names.
        public static let usage = Code("usage", .usage)
        /// No prompt is due: the user already has an account.
        public static let userAuthenticated = Code("user_authenticated", .nothingDue)
        /// A user in the archive already exists in the store.
        public static let userExists = Code("user_exists", .conflict)
        /// No prompt is due: the user is already linked.
        public static let userLinked = Code("user_linked", .nothingDue)
        /// No user has the id given.
        public static let userNotFound = Code("user_not_found", .notFound)
        /// Another user already has that anonymous username.
        public static let usernameTaken = Code("username_taken", .conflict)
        /// An archive failed verification.
        public static let verifyFailed = Code("verify_failed", .badData)
        /// The webhook delivery was already delivered; it is not sent again.
        public static let webhookDelivered = Code("webhook_delivered", .conflict)
        /// The webhook outbox has no delivery with that number.
        public static let webhookNotFound = Code("webhook_not_found", .notFound)
        /// A webhook endpoint's secret file cannot be read, or its environment variable is unset or empty.
        public static let webhookSecretUnavailable = Code("webhook_secret_unavailable", .usage)
        /// Some webhook deliveries could not be made; they stay in the outbox.
        public static let webhooksUndelivered = Code("webhooks_undelivered", .tryAgainLater)
        /// No prompt is due: the profile's window already holds its most prompts.
        public static let windowFull = Code("window_full", .nothingDue)
        /// A request body is larger than the server accepts.
        public static let bodyTooLarge = Code("body_too_large", .usage)
        /// The server key's scope does not allow this request.
        public static let insufficientScope = Code("insufficient_scope", .usage)
        /// A server key name is empty or holds characters a name may not.
        public static let invalidKeyName = Code("invalid_key_name", .usage)
        /// A metered use does not fit in what remains of the allowance.
        public static let meterExhausted = Code("meter_exhausted", .meterExhausted)
        /// The guest is at a cap only an account lifts.
        public static let needsAccount = Code("needs_account", .needsAccount)
        /// The account is at a cap only a premium plan lifts.
        public static let needsPremium = Code("needs_premium", .needsPremium)
        /// The refresh token is unknown, expired or revoked.
        public static let refreshTokenInvalid = Code("refresh_token_invalid", .notFound)
        /// A refresh token was used twice: its whole session family is revoked.
        public static let refreshTokenReused = Code("refresh_token_reused", .conflict)
        /// No server route has that method and path.
        public static let routeNotFound = Code("route_not_found", .notFound)
        /// The server is already answering as many requests as its --max-requests allows.
        public static let serverBusy = Code("server_busy", .tryAgainLater)
        /// An HTTP/1.0 request has a body but no Content-Length (RFC 1945 asks one of every POST).
        public static let lengthRequired = Code("length_required", .usage)
        /// A request is not valid HTTP/1.1: its head, or a chunk of its body, cannot be read.
        public static let malformedRequest = Code("malformed_request", .usage)
        /// The connection closed before the request's body ended: nothing of the request was done.
        public static let requestIncomplete = Code("request_incomplete", .usage)
        /// A request's head or body did not arrive in the time the server gives (--head-timeout,
        /// --body-timeout), or its body came slower than --min-body-rate.
        public static let requestTimeout = Code("request_timeout", .usage)
        /// A request's body uses a transfer coding the server does not read (anything but plain chunked).
        public static let unsupportedTransferEncoding = Code("unsupported_transfer_encoding", .usage)
        /// A server key of that name already exists.
        public static let serverKeyExists = Code("server_key_exists", .conflict)
        /// No server key has that name.
        public static let serverKeyNotFound = Code("server_key_not_found", .notFound)
        /// The request carries no valid session token or server key.
        public static let unauthorized = Code("unauthorized", .usage)
        /// Too many guest sign-ins, or requests at once, from one client address; retry after the time given.
        public static let rateLimited = Code("rate_limited", .tryAgainLater)
        /// An ID token presented to link an identity is not for this app: its audience is not the one configured for the provider.
        public static let idTokenAudienceMismatch = Code("id_token_audience_mismatch", .usage)
        /// An ID token presented to link an identity has expired.
        public static let idTokenExpired = Code("id_token_expired", .usage)
        /// An ID token presented to link an identity is malformed, signed with an algorithm or key its provider's key set does not give, or its signature does not verify.
        public static let idTokenInvalid = Code("id_token_invalid", .usage)
        /// An ID token presented to link an identity was not issued by the issuer configured for its provider.
        public static let idTokenIssuerMismatch = Code("id_token_issuer_mismatch", .usage)
        /// An ID token presented to link an identity does not carry the nonce the request gives.
        public static let idTokenNonceMismatch = Code("id_token_nonce_mismatch", .usage)
        /// The server takes no ID tokens from that provider.
        public static let identityProviderNotConfigured = Code("identity_provider_not_configured", .usage)
        /// An identity provider's setting is not PROVIDER=ISSUER,AUDIENCE,JWKS, or names a provider twice.
        public static let invalidIdentityProvider = Code("invalid_identity_provider", .usage)
        /// A provider's JSON Web Key Set cannot be read or holds no usable signing key.
        public static let invalidJWKS = Code("invalid_jwks", .usage)
        /// A request's Idempotency-Key header is not 1 to 255 printable ASCII characters, or is given twice.
        public static let invalidIdempotencyKey = Code("invalid_idempotency_key", .usage)
    }
}
