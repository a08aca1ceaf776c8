import Foundation

/// What kind of failure an error is. The engine reports every failure as one
/// of these so each front end answers it its own way without knowing where
/// it came from: the command line maps a kind to an exit status
/// (Sources/GuestModeCommandLine/ExitStatus.swift).
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

    /// The message.
    public var description: String { message }
}

extension GuestModeError {
    /// A stable snake_case identifier scripts can switch on (`--json` prints
    /// it as `error.code`); the catalogue is listed in guestmode(1) with the
    /// exit status of each. Codes are compared as values, never as strings.
    /// A stable snake_case identifier scripts can switch on (`--json` prints
    /// it as `error.code`); the catalogue is listed in guestmode(1) with the
    /// exit status of each, in the order of `allCases`. Codes are compared
    /// as values, never as strings; a caller catches one failure by its code:
    ///
    /// ```swift
    /// do {
    ///     try engine.deleteUser(id)
    /// } catch let error as GuestModeError where error.code == .userNotFound {
    ///     // already gone
    /// }
    /// ```
    public enum Code: String, CaseIterable, Sendable, Codable, CustomStringConvertible {
        /// The guest was already moved into an account; there is nothing left to move.
        case alreadyMigrated = "already_migrated"
        /// The server takes no App Store purchases (no --app-store-root-ca and --app-store-bundle-id).
        case appStoreNotConfigured = "app_store_not_configured"
        /// The archive library failed in a way the engine did not expect.
        case archiveError = "archive_error"
        /// The archive's name promises one format but its bytes are another.
        case archiveFormatMismatch = "archive_format_mismatch"
        /// The archive file does not exist or cannot be opened.
        case archiveNotFound = "archive_not_found"
        /// The archive uses a backup format version newer than this release reads.
        case archiveTooNew = "archive_too_new"
        /// The archive uses a backup format version this release no longer reads.
        case archiveTooOld = "archive_too_old"
        /// Reading the archive failed part way (an I/O error).
        case archiveUnreadable = "archive_unreadable"
        /// An archive pushed to or pulled from one user's backups holds other users' data.
        case archiveUserMismatch = "archive_user_mismatch"
        /// Writing the archive failed (an I/O error); no archive was left behind.
        case archiveWriteFailed = "archive_write_failed"
        /// An experiment assignment written in this transaction could not be read back.
        case assignmentLost = "assignment_lost"
        /// The backup key is current, or seals the store's current signing key: it cannot be retired yet.
        case backupKeyInUse = "backup_key_in_use"
        /// The backup key file named by the environment does not exist, or the deployment has no key of that id.
        case backupKeyNotFound = "backup_key_not_found"
        /// A backup signing key is not the expected number of hex digits.
        case badBackupKey = "bad_backup_key"
        /// A duration (a trial, a purge age) is not positive.
        case badDuration = "bad_duration"
        /// The archive's header.json cannot be read.
        case badHeader = "bad_header"
        /// The archive's manifest.json cannot be read.
        case badManifest = "bad_manifest"
        /// A row in the archive is not a JSON object of column values.
        case badRow = "bad_row"
        /// The archive's signature is missing, malformed or does not match.
        case badSignature = "bad_signature"
        /// A time is not written as ISO 8601.
        case badTime = "bad_time"
        /// A request body is larger than the server accepts.
        case bodyTooLarge = "body_too_large"
        /// The safety backup taken before a change could not be written.
        case cannotCreateBackup = "cannot_create_backup"
        /// An output file (an export, a report) could not be created.
        case cannotCreateOutput = "cannot_create_output"
        /// A new store could not be created where asked.
        case cannotCreateStore = "cannot_create_store"
        /// An encrypted archive does not open with the key or passphrase given.
        case cannotDecrypt = "cannot_decrypt"
        /// The store exists but cannot be opened (busy, or no permission).
        case cannotOpenStore = "cannot_open_store"
        /// The temporary file that holds a large input could not be created.
        case cannotSpool = "cannot_spool"
        /// The connection was lost during a commit, so whether the transaction committed is unknown.
        case commitUnknown = "commit_unknown"
        /// No archived merge conflict has the id given.
        case conflictNotFound = "conflict_not_found"
        /// A plan was granted both as a trial and until a time.
        case conflictingPlanTerms = "conflicting_plan_terms"
        /// No prompt is due: the last one was shown within the profile's cooldown.
        case cooldown = "cooldown"
        /// A table differs between a copied store and its source.
        case copyMismatch = "copy_mismatch"
        /// A value in the store is not one the engine wrote (an unknown name, a bad time, a number out of range).
        case corruptStore = "corrupt_store"
        /// A counter would pass its largest value.
        case countOverflow = "count_overflow"
        /// The archive is truncated or is not a compressed archive.
        case damagedArchive = "damaged_archive"
        /// The database reported an error the engine did not expect.
        case databaseError = "database_error"
        /// A remote backup destination answered a push or a pull with a refusal other than of its credentials.
        case destinationRefused = "destination_refused"
        /// A remote backup destination refused the bearer token (401 or 403): a setting to fix, not an outage.
        case destinationUnauthorized = "destination_unauthorized"
        /// The backup destination (a directory or an HTTP server) or a webhook endpoint cannot be reached or written.
        case destinationUnavailable = "destination_unavailable"
        /// A user in the archive has the id of a different user in the store.
        case differentUser = "different_user"
        /// The disk is full; nothing was changed.
        case diskFull = "disk_full"
        /// The archive repeats the key of an earlier row.
        case duplicateRow = "duplicate_row"
        /// A record key is empty.
        case emptyKey = "empty_key"
        /// A report period ends before or when it starts.
        case emptyPeriod = "empty_period"
        /// An identity's subject is empty.
        case emptySubject = "empty_subject"
        /// A plan's end is not after the current time.
        case endNotAfterNow = "end_not_after_now"
        /// The profile has no experiment of that name.
        case experimentNotFound = "experiment_not_found"
        /// An input file (an event log, a records file) does not exist.
        case fileNotFound = "file_not_found"
        /// An input file is larger than the engine reads.
        case fileTooLarge = "file_too_large"
        /// An archive row belongs to a user the archive does not list.
        case foreignRow = "foreign_row"
        /// No meter grant has the id given.
        case grantNotFound = "grant_not_found"
        /// The guest is gone: another migration already moved it.
        case guestAlreadyMoved = "guest_already_moved"
        /// The archive's guest owner differs from the one the profile names.
        case guestOwnerMismatch = "guest_owner_mismatch"
        /// The archive holds an entry that could escape the directory or exhaust memory; it was refused unread.
        case hostileArchive = "hostile_archive"
        /// An ID token presented to link an identity is not for this app: its audience is not the one configured for the provider.
        case idTokenAudienceMismatch = "id_token_audience_mismatch"
        /// An ID token presented to link an identity has expired.
        case idTokenExpired = "id_token_expired"
        /// An ID token presented to link an identity is malformed, signed with an algorithm or key its provider's key set does not give, or its signature does not verify.
        case idTokenInvalid = "id_token_invalid"
        /// An ID token presented to link an identity was not issued by the issuer configured for its provider.
        case idTokenIssuerMismatch = "id_token_issuer_mismatch"
        /// An ID token presented to link an identity does not carry the nonce the request gives.
        case idTokenNonceMismatch = "id_token_nonce_mismatch"
        /// An idempotency key was seen before with another action, meter or user.
        case idempotencyKeyReused = "idempotency_key_reused"
        /// The identity already belongs to another user.
        case identityAlreadyExists = "identity_already_exists"
        /// The user has no identity with that provider.
        case identityNotFound = "identity_not_found"
        /// The server takes no ID tokens from that provider.
        case identityProviderNotConfigured = "identity_provider_not_configured"
        /// An account of a user import is already in the store with other
        /// data, or one of its identities belongs to another user.
        case importConflict = "import_conflict"
        /// The archive's rows contradict each other (counts, references, times).
        case inconsistentRows = "inconsistent_rows"
        /// The server key's scope does not allow this request.
        case insufficientScope = "insufficient_scope"
        /// The store's database integrity check found damage.
        case integrityCheckFailed = "integrity_check_failed"
        /// A failure the engine did not expect; the message says where.
        case internalFailure = "internal"
        /// A meter amount is not a positive number the meter can hold.
        case invalidAmount = "invalid_amount"
        /// The maximum number of push attempts is less than 1.
        case invalidAttempts = "invalid_attempts"
        /// A device id is empty, too long or holds control characters.
        case invalidDevice = "invalid_device"
        /// A tracked event lacks a user or an action, or has a bad count or property.
        case invalidEvent = "invalid_event"
        /// An event log has invalid lines, so nothing was applied.
        case invalidEventLog = "invalid_event_log"
        /// A request's Idempotency-Key header is not 1 to 255 printable ASCII characters, or is given twice.
        case invalidIdempotencyKey = "invalid_idempotency_key"
        /// An identity provider's setting is not PROVIDER=ISSUER,AUDIENCE,JWKS, or names a provider twice.
        case invalidIdentityProvider = "invalid_identity_provider"
        /// A user import's file is not what its format says, or an account
        /// in it cannot be imported.
        case invalidImportFile = "invalid_import_file"
        /// Record data is not valid JSON.
        case invalidJson = "invalid_json"
        /// A provider's JSON Web Key Set cannot be read or holds no usable signing key.
        case invalidJWKS = "invalid_jwks"
        /// A server key name is empty or holds characters a name may not.
        case invalidKeyName = "invalid_key_name"
        /// A compression level is out of range for the archive format.
        case invalidLevel = "invalid_level"
        /// A listing limit is out of range.
        case invalidLimit = "invalid_limit"
        /// A connection pool was given fewer than one connection.
        case invalidPoolSize = "invalid_pool_size"
        /// A profile does not validate; the message lists every problem.
        case invalidProfile = "invalid_profile"
        /// A PostgreSQL schema name is not one the store uses.
        case invalidSchema = "invalid_schema"
        /// A destination address is not an http:// or https:// URL, is plain http:// to another machine, or
        /// carries a user name or password.
        case invalidURL = "invalid_url"
        /// An anonymous username is empty, too long or holds control characters.
        case invalidUsername = "invalid_username"
        /// Text is not valid UTF-8.
        case invalidUtf8 = "invalid_utf8"
        /// Reading or writing a file failed.
        case ioError = "io_error"
        /// A migration journal was planned with other steps than the profile now declares.
        case journalMismatch = "journal_mismatch"
        /// No migration journal has the id given.
        case journalNotFound = "journal_not_found"
        /// A backup key file already exists and would be overwritten.
        case keyExists = "key_exists"
        /// An HTTP/1.0 request has a body but no Content-Length (RFC 1945 asks one of every POST).
        case lengthRequired = "length_required"
        /// A line of an input file is longer than the engine reads.
        case lineTooLong = "line_too_long"
        /// An event log has invalid lines, so nothing was replayed.
        case malformedLog = "malformed_log"
        /// A request is not valid HTTP/1.1: its head, or a chunk of its body, cannot be read.
        case malformedRequest = "malformed_request"
        /// The archive's entries do not match its manifest.
        case manifestMismatch = "manifest_mismatch"
        /// A metered use does not fit in what remains of the allowance.
        case meterExhausted = "meter_exhausted"
        /// A migration stopped part way; resuming it finishes it.
        case migrationInterrupted = "migration_interrupted"
        /// An earlier migration of the same guest is unfinished.
        case migrationUnfinished = "migration_unfinished"
        /// The archive has no manifest.
        case missingManifest = "missing_manifest"
        /// An anonymous credential was given without its secret.
        case missingSecret = "missing_secret"
        /// The archive lists a user it has no row for.
        case missingUserRow = "missing_user_row"
        /// The guest is at a cap only an account lifts.
        case needsAccount = "needs_account"
        /// The account is at a cap only a premium plan lifts.
        case needsPremium = "needs_premium"
        /// No prompt is due: the user asked never to be asked again.
        case neverAsk = "never_ask"
        /// No prompt is due: no rule of the profile holds.
        case noEligiblePrompt = "no_eligible_prompt"
        /// No free record key was left for a kept-both merge conflict.
        case noFreeKey = "no_free_key"
        /// No profile templates were found.
        case noTemplates = "no_templates"
        /// The archive has no entries, so it is not a backup.
        case notABackup = "not_a_backup"
        /// A path names something other than a regular file.
        case notAFile = "not_a_file"
        /// The user to move is not a guest.
        case notAGuest = "not_a_guest"
        /// A database is not a guestmode store.
        case notAStore = "not_a_store"
        /// A path to read an archive from is not a regular file.
        case notAnArchive = "not_an_archive"
        /// No unfinished migration of that guest into that account exists.
        case nothingToResume = "nothing_to_resume"
        /// Text contains a NUL character, which the engine never stores.
        case nulInText = "nul_in_text"
        /// An ownerless record in a collection with unique fields has no owner in its key.
        case ownerlessKeyWithoutOwner = "ownerless_key_without_owner"
        /// The archive is encrypted with a passphrase and none was given.
        case passphraseRequired = "passphrase_required"
        /// The user has no grant of that plan.
        case planNotFound = "plan_not_found"
        /// Every connection of the pool stayed in use for the whole wait.
        case poolExhausted = "pool_exhausted"
        /// The archive holds data of a profile other than the store's.
        case profileMismatch = "profile_mismatch"
        /// No template and no file has the profile name given.
        case profileNotFound = "profile_not_found"
        /// The store's data does not fit the new profile version.
        case profileUpgradeRefused = "profile_upgrade_refused"
        /// The user already has an identity with that provider.
        case providerAlreadyLinked = "provider_already_linked"
        /// A signed App Store transaction or notification that does not verify: its algorithm, its
        /// certificate chain, its signature, its bundle id or its shape.
        case purchaseInvalid = "purchase_invalid"
        /// A purchase made for another user (its appAccountToken names someone else).
        case purchaseUserMismatch = "purchase_user_mismatch"
        /// Some queued backups could not be pushed; they stay queued.
        case pushIncomplete = "push_incomplete"
        /// Too many guest sign-ins, or requests at once, from one client address; retry after the time given.
        case rateLimited = "rate_limited"
        /// An account reached its tier's cap; a plan raises it.
        case recordCapNeedsPremium = "record_cap_needs_premium"
        /// A guest reached its cap; linking an account raises it.
        case recordCapReached = "record_cap_reached"
        /// A record with that key already exists and the conflict policy refuses it.
        case recordExists = "record_exists"
        /// Another user already has a record with that key in a collection with unique keys.
        case recordKeyTaken = "record_key_taken"
        /// The user has no record with that key.
        case recordNotFound = "record_not_found"
        /// Record data is JSON but not an object.
        case recordNotObject = "record_not_object"
        /// A migration finished but records of the guest remain.
        case recordsLeftBehind = "records_left_behind"
        /// The refresh token is unknown, expired or revoked.
        case refreshTokenInvalid = "refresh_token_invalid"
        /// A refresh token was used twice: its whole session family is revoked.
        case refreshTokenReused = "refresh_token_reused"
        /// The connection closed before the request's body ended: nothing of the request was done.
        case requestIncomplete = "request_incomplete"
        /// A request's head or body did not arrive in the time the server gives (--head-timeout,
        /// --body-timeout), or its body came slower than --min-body-rate.
        case requestTimeout = "request_timeout"
        /// The server takes no RevenueCat webhooks: it was started without their Authorization value.
        case revenueCatNotConfigured = "revenuecat_not_configured"
        /// No server route has that method and path.
        case routeNotFound = "route_not_found"
        /// An archive row collides with a row already in the store.
        case rowConflict = "row_conflict"
        /// A copy names the store being copied as its destination.
        case sameStore = "same_store"
        /// A migration or merge names one user as both the guest and the account.
        case sameUser = "same_user"
        /// A schema migration failed; the store is unchanged.
        case schemaMigrationFailed = "schema_migration_failed"
        /// An anonymous secret is longer than the engine reads.
        case secretTooLong = "secret_too_long"
        /// The server is already answering as many requests as its --max-requests allows.
        case serverBusy = "server_busy"
        /// A server key of that name already exists.
        case serverKeyExists = "server_key_exists"
        /// No server key has that name.
        case serverKeyNotFound = "server_key_not_found"
        /// The user has no session with that id.
        case sessionNotFound = "session_not_found"
        /// The signing key is the current one: it cannot be retired before a rotation.
        case signingKeyInUse = "signing_key_in_use"
        /// No signing key has that id.
        case signingKeyNotFound = "signing_key_not_found"
        /// The store's current signing key does not open with this machine's deployment key.
        case signingKeySealedElsewhere = "signing_key_sealed_elsewhere"
        /// The store stayed locked by another writer for the whole wait.
        case storeBusy = "store_busy"
        /// A purchase of a store environment (Sandbox) the server was not told to take.
        case storeEnvironmentRefused = "store_environment_refused"
        /// A store already exists where a new one was to be created.
        case storeExists = "store_exists"
        /// The store path names a directory.
        case storeIsDirectory = "store_is_directory"
        /// No store exists at the path or in the schema given.
        case storeNotFound = "store_not_found"
        /// The store was written by a newer release.
        case storeTooNew = "store_too_new"
        /// The database server cannot be reached.
        case storeUnreachable = "store_unreachable"
        /// The store is not bound to a profile.
        case storeWithoutProfile = "store_without_profile"
        /// The user already has as many identities as the profile allows.
        case tooManyProviders = "too_many_providers"
        /// The user already had this plan's trial.
        case trialAlreadyUsed = "trial_already_used"
        /// The request carries no valid session token or server key.
        case unauthorized = "unauthorized"
        /// A stored value cannot be carried by a backup.
        case unexportableValue = "unexportable_value"
        /// The profile has no collection of that name.
        case unknownCollection = "unknown_collection"
        /// The profile has no prompt context of that name.
        case unknownContext = "unknown_context"
        /// The profile has no meter of that name.
        case unknownMeter = "unknown_meter"
        /// The profile has no plan of that name.
        case unknownPlan = "unknown_plan"
        /// The profile maps no plan to that store product.
        case unknownProduct = "unknown_product"
        /// The profile does not accept that identity provider.
        case unknownProvider = "unknown_provider"
        /// The profile has no prompt trigger of that name.
        case unknownTrigger = "unknown_trigger"
        /// The experiment has no variant of that name.
        case unknownVariant = "unknown_variant"
        /// The profile has no webhook endpoint of that name.
        case unknownWebhook = "unknown_webhook"
        /// A store location is neither a file path nor a PostgreSQL URI.
        case unsupportedStore = "unsupported_store"
        /// A request's body uses a transfer coding the server does not read (anything but plain chunked).
        case unsupportedTransferEncoding = "unsupported_transfer_encoding"
        /// Another account link of the same user is in progress.
        case upgradeInProgress = "upgrade_in_progress"
        /// The input is wrong in a way no narrower code names.
        case usage = "usage"
        /// No prompt is due: the user already has an account.
        case userAuthenticated = "user_authenticated"
        /// A user in the archive already exists in the store.
        case userExists = "user_exists"
        /// No prompt is due: the user is already linked.
        case userLinked = "user_linked"
        /// No user has the id given.
        case userNotFound = "user_not_found"
        /// Another user already has that anonymous username.
        case usernameTaken = "username_taken"
        /// An archive failed verification.
        case verifyFailed = "verify_failed"
        /// The webhook delivery was already delivered; it is not sent again.
        case webhookDelivered = "webhook_delivered"
        /// The webhook outbox has no delivery with that number.
        case webhookNotFound = "webhook_not_found"
        /// A webhook endpoint's secret file cannot be read, or its environment variable is unset or empty.
        case webhookSecretUnavailable = "webhook_secret_unavailable"
        /// Some webhook deliveries could not be made; they stay in the outbox.
        case webhooksUndelivered = "webhooks_undelivered"
        /// No prompt is due: the profile's window already holds its most prompts.
        case windowFull = "window_full"

        /// The code's name.
        public var description: String { rawValue }

        /// The kind of every failure with this code.
        public var kind: FailureKind {
            switch self {
            case .archiveError,
                .assignmentLost,
                .databaseError,
                .internalFailure,
                .noFreeKey,
                .recordsLeftBehind:
                return .internalFailure
            case .needsAccount,
                .recordCapReached:
                return .needsAccount
            case .needsPremium,
                .recordCapNeedsPremium:
                return .needsPremium
            case .meterExhausted:
                return .meterExhausted
            case .cooldown,
                .neverAsk,
                .noEligiblePrompt,
                .userAuthenticated,
                .userLinked,
                .windowFull:
                return .nothingDue
            case .alreadyMigrated,
                .archiveUserMismatch,
                .backupKeyInUse,
                .differentUser,
                .guestAlreadyMoved,
                .idempotencyKeyReused,
                .identityAlreadyExists,
                .importConflict,
                .keyExists,
                .migrationUnfinished,
                .notAGuest,
                .providerAlreadyLinked,
                .recordExists,
                .recordKeyTaken,
                .refreshTokenReused,
                .rowConflict,
                .serverKeyExists,
                .signingKeyInUse,
                .tooManyProviders,
                .trialAlreadyUsed,
                .upgradeInProgress,
                .userExists,
                .usernameTaken,
                .webhookDelivered,
                .purchaseUserMismatch:
                return .conflict
            case .badDuration,
                .badTime,
                .bodyTooLarge,
                .conflictingPlanTerms,
                .destinationUnauthorized,
                .emptyKey,
                .emptyPeriod,
                .emptySubject,
                .endNotAfterNow,
                .idTokenAudienceMismatch,
                .idTokenExpired,
                .idTokenInvalid,
                .idTokenIssuerMismatch,
                .idTokenNonceMismatch,
                .identityProviderNotConfigured,
                .insufficientScope,
                .invalidAmount,
                .invalidAttempts,
                .invalidDevice,
                .invalidEvent,
                .invalidIdempotencyKey,
                .invalidIdentityProvider,
                .invalidJWKS,
                .invalidKeyName,
                .invalidLevel,
                .invalidLimit,
                .invalidPoolSize,
                .invalidSchema,
                .invalidURL,
                .invalidUsername,
                .lengthRequired,
                .malformedRequest,
                .missingSecret,
                .ownerlessKeyWithoutOwner,
                .passphraseRequired,
                .requestIncomplete,
                .requestTimeout,
                .sameStore,
                .sameUser,
                .unauthorized,
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
                .usage,
                .webhookSecretUnavailable,
                .storeEnvironmentRefused:
                return .usage
            case .archiveFormatMismatch,
                .archiveTooNew,
                .archiveTooOld,
                .badBackupKey,
                .badHeader,
                .badManifest,
                .badRow,
                .badSignature,
                .cannotDecrypt,
                .copyMismatch,
                .corruptStore,
                .countOverflow,
                .damagedArchive,
                .duplicateRow,
                .fileTooLarge,
                .foreignRow,
                .guestOwnerMismatch,
                .hostileArchive,
                .inconsistentRows,
                .integrityCheckFailed,
                .invalidEventLog,
                .invalidImportFile,
                .invalidJson,
                .invalidProfile,
                .invalidUtf8,
                .journalMismatch,
                .lineTooLong,
                .malformedLog,
                .manifestMismatch,
                .missingManifest,
                .missingUserRow,
                .notABackup,
                .notAStore,
                .notAnArchive,
                .nulInText,
                .profileMismatch,
                .profileUpgradeRefused,
                .recordNotObject,
                .schemaMigrationFailed,
                .secretTooLong,
                .signingKeySealedElsewhere,
                .storeTooNew,
                .storeWithoutProfile,
                .unexportableValue,
                .verifyFailed,
                .purchaseInvalid,
                .unknownProduct:
                return .badData
            case .archiveNotFound,
                .backupKeyNotFound,
                .signingKeyNotFound,
                .conflictNotFound,
                .experimentNotFound,
                .fileNotFound,
                .grantNotFound,
                .identityNotFound,
                .revenueCatNotConfigured,
                .journalNotFound,
                .noTemplates,
                .notAFile,
                .nothingToResume,
                .planNotFound,
                .profileNotFound,
                .recordNotFound,
                .refreshTokenInvalid,
                .routeNotFound,
                .serverKeyNotFound,
                .sessionNotFound,
                .storeNotFound,
                .userNotFound,
                .webhookNotFound,
                .appStoreNotConfigured:
                return .notFound
            case .cannotCreateBackup,
                .cannotCreateOutput,
                .cannotCreateStore,
                .cannotOpenStore,
                .cannotSpool,
                .destinationRefused,
                .storeExists,
                .storeIsDirectory:
                return .cannotCreate
            case .archiveUnreadable,
                .archiveWriteFailed,
                .diskFull,
                .ioError:
                return .ioError
            case .commitUnknown,
                .destinationUnavailable,
                .migrationInterrupted,
                .poolExhausted,
                .pushIncomplete,
                .rateLimited,
                .serverBusy,
                .storeBusy,
                .storeUnreachable,
                .webhooksUndelivered:
                return .tryAgainLater
            }
        }
    }
}
