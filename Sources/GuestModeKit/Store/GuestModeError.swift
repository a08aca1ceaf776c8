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
    public var code: Code
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
            .guestAlreadyMoved,
            .guestOwnerMismatch,
            .hostileArchive,
            .idempotencyKeyReused,
            .identityAlreadyExists,
            .identityNotFound,
            .inconsistentRows,
            .insufficientScope,
            .integrityCheckFailed,
            .internalFailure,
            .invalidAmount,
            .invalidAttempts,
            .invalidDevice,
            .invalidEvent,
            .invalidEventLog,
            .invalidJson,
            .invalidKeyName,
            .invalidLevel,
            .invalidLimit,
            .invalidPoolSize,
            .invalidProfile,
            .invalidSchema,
            .invalidUsername,
            .invalidUtf8,
            .ioError,
            .journalMismatch,
            .journalNotFound,
            .keyExists,
            .lineTooLong,
            .malformedLog,
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
            .routeNotFound,
            .rowConflict,
            .sameStore,
            .sameUser,
            .schemaMigrationFailed,
            .secretTooLong,
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
            .unsupportedStore,
            .upgradeInProgress,
            .usage,
            .userAuthenticated,
            .userExists,
            .userLinked,
            .userNotFound,
            .usernameTaken,
            .verifyFailed,
            .windowFull,
        ]

        public static let alreadyMigrated = Code("already_migrated", .conflict)
        public static let archiveError = Code("archive_error", .internalFailure)
        public static let archiveFormatMismatch = Code("archive_format_mismatch", .badData)
        public static let archiveNotFound = Code("archive_not_found", .notFound)
        public static let archiveTooNew = Code("archive_too_new", .badData)
        public static let archiveTooOld = Code("archive_too_old", .badData)
        public static let archiveUnreadable = Code("archive_unreadable", .ioError)
        public static let archiveWriteFailed = Code("archive_write_failed", .ioError)
        public static let assignmentLost = Code("assignment_lost", .internalFailure)
        public static let backupKeyNotFound = Code("backup_key_not_found", .notFound)
        public static let badBackupKey = Code("bad_backup_key", .badData)
        public static let badDuration = Code("bad_duration", .usage)
        public static let badHeader = Code("bad_header", .badData)
        public static let badManifest = Code("bad_manifest", .badData)
        public static let badRow = Code("bad_row", .badData)
        public static let badSignature = Code("bad_signature", .badData)
        public static let badTime = Code("bad_time", .usage)
        public static let cannotCreateBackup = Code("cannot_create_backup", .cannotCreate)
        public static let cannotCreateOutput = Code("cannot_create_output", .cannotCreate)
        public static let cannotCreateStore = Code("cannot_create_store", .cannotCreate)
        public static let cannotDecrypt = Code("cannot_decrypt", .badData)
        public static let cannotOpenStore = Code("cannot_open_store", .cannotCreate)
        public static let cannotSpool = Code("cannot_spool", .cannotCreate)
        public static let commitUnknown = Code("commit_unknown", .tryAgainLater)
        public static let conflictNotFound = Code("conflict_not_found", .notFound)
        public static let conflictingPlanTerms = Code("conflicting_plan_terms", .usage)
        public static let cooldown = Code("cooldown", .nothingDue)
        public static let copyMismatch = Code("copy_mismatch", .badData)
        public static let corruptStore = Code("corrupt_store", .badData)
        public static let countOverflow = Code("count_overflow", .badData)
        public static let damagedArchive = Code("damaged_archive", .badData)
        public static let databaseError = Code("database_error", .internalFailure)
        public static let destinationUnavailable = Code("destination_unavailable", .tryAgainLater)
        public static let differentUser = Code("different_user", .conflict)
        public static let diskFull = Code("disk_full", .ioError)
        public static let duplicateRow = Code("duplicate_row", .badData)
        public static let emptyKey = Code("empty_key", .usage)
        public static let emptyPeriod = Code("empty_period", .usage)
        public static let emptySubject = Code("empty_subject", .usage)
        public static let endNotAfterNow = Code("end_not_after_now", .usage)
        public static let experimentNotFound = Code("experiment_not_found", .notFound)
        public static let fileNotFound = Code("file_not_found", .notFound)
        public static let fileTooLarge = Code("file_too_large", .badData)
        public static let foreignRow = Code("foreign_row", .badData)
        public static let guestAlreadyMoved = Code("guest_already_moved", .conflict)
        public static let guestOwnerMismatch = Code("guest_owner_mismatch", .badData)
        public static let hostileArchive = Code("hostile_archive", .badData)
        public static let idempotencyKeyReused = Code("idempotency_key_reused", .conflict)
        public static let identityAlreadyExists = Code("identity_already_exists", .conflict)
        public static let identityNotFound = Code("identity_not_found", .notFound)
        public static let inconsistentRows = Code("inconsistent_rows", .badData)
        public static let integrityCheckFailed = Code("integrity_check_failed", .badData)
        public static let internalFailure = Code("internal", .internalFailure)
        public static let invalidAmount = Code("invalid_amount", .usage)
        public static let invalidAttempts = Code("invalid_attempts", .usage)
        public static let invalidDevice = Code("invalid_device", .usage)
        public static let invalidEvent = Code("invalid_event", .usage)
        public static let invalidEventLog = Code("invalid_event_log", .badData)
        public static let invalidJson = Code("invalid_json", .badData)
        public static let invalidLevel = Code("invalid_level", .usage)
        public static let invalidLimit = Code("invalid_limit", .usage)
        public static let invalidPoolSize = Code("invalid_pool_size", .usage)
        public static let invalidProfile = Code("invalid_profile", .badData)
        public static let invalidSchema = Code("invalid_schema", .usage)
        public static let invalidUsername = Code("invalid_username", .usage)
        public static let invalidUtf8 = Code("invalid_utf8", .badData)
        public static let ioError = Code("io_error", .ioError)
        public static let journalMismatch = Code("journal_mismatch", .badData)
        public static let journalNotFound = Code("journal_not_found", .notFound)
        public static let keyExists = Code("key_exists", .conflict)
        public static let lineTooLong = Code("line_too_long", .badData)
        public static let malformedLog = Code("malformed_log", .badData)
        public static let manifestMismatch = Code("manifest_mismatch", .badData)
        public static let migrationInterrupted = Code("migration_interrupted", .tryAgainLater)
        public static let migrationUnfinished = Code("migration_unfinished", .conflict)
        public static let missingManifest = Code("missing_manifest", .badData)
        public static let missingSecret = Code("missing_secret", .usage)
        public static let missingUserRow = Code("missing_user_row", .badData)
        public static let neverAsk = Code("never_ask", .nothingDue)
        public static let noEligiblePrompt = Code("no_eligible_prompt", .nothingDue)
        public static let noFreeKey = Code("no_free_key", .internalFailure)
        public static let noTemplates = Code("no_templates", .notFound)
        public static let notABackup = Code("not_a_backup", .badData)
        public static let notAFile = Code("not_a_file", .notFound)
        public static let notAGuest = Code("not_a_guest", .conflict)
        public static let notAStore = Code("not_a_store", .badData)
        public static let notAnArchive = Code("not_an_archive", .badData)
        public static let nothingToResume = Code("nothing_to_resume", .notFound)
        public static let nulInText = Code("nul_in_text", .badData)
        public static let ownerlessKeyWithoutOwner = Code("ownerless_key_without_owner", .usage)
        public static let passphraseRequired = Code("passphrase_required", .usage)
        public static let planNotFound = Code("plan_not_found", .notFound)
        public static let poolExhausted = Code("pool_exhausted", .tryAgainLater)
        public static let profileMismatch = Code("profile_mismatch", .badData)
        public static let profileNotFound = Code("profile_not_found", .notFound)
        public static let profileUpgradeRefused = Code("profile_upgrade_refused", .badData)
        public static let providerAlreadyLinked = Code("provider_already_linked", .conflict)
        public static let pushIncomplete = Code("push_incomplete", .tryAgainLater)
        public static let recordCapNeedsPremium = Code("record_cap_needs_premium", .needsPremium)
        public static let recordCapReached = Code("record_cap_reached", .needsAccount)
        public static let recordExists = Code("record_exists", .conflict)
        public static let recordKeyTaken = Code("record_key_taken", .conflict)
        public static let recordNotFound = Code("record_not_found", .notFound)
        public static let recordNotObject = Code("record_not_object", .badData)
        public static let recordsLeftBehind = Code("records_left_behind", .internalFailure)
        public static let rowConflict = Code("row_conflict", .conflict)
        public static let sameStore = Code("same_store", .usage)
        public static let sameUser = Code("same_user", .usage)
        public static let schemaMigrationFailed = Code("schema_migration_failed", .badData)
        public static let secretTooLong = Code("secret_too_long", .badData)
        public static let storeBusy = Code("store_busy", .tryAgainLater)
        public static let storeExists = Code("store_exists", .cannotCreate)
        public static let storeIsDirectory = Code("store_is_directory", .cannotCreate)
        public static let storeNotFound = Code("store_not_found", .notFound)
        public static let storeTooNew = Code("store_too_new", .badData)
        public static let storeUnreachable = Code("store_unreachable", .tryAgainLater)
        public static let storeWithoutProfile = Code("store_without_profile", .badData)
        public static let tooManyProviders = Code("too_many_providers", .conflict)
        public static let trialAlreadyUsed = Code("trial_already_used", .conflict)
        public static let unexportableValue = Code("unexportable_value", .badData)
        public static let unknownCollection = Code("unknown_collection", .usage)
        public static let unknownContext = Code("unknown_context", .usage)
        public static let unknownMeter = Code("unknown_meter", .usage)
        public static let unknownPlan = Code("unknown_plan", .usage)
        public static let unknownProvider = Code("unknown_provider", .usage)
        public static let unknownTrigger = Code("unknown_trigger", .usage)
        public static let unknownVariant = Code("unknown_variant", .usage)
        public static let unsupportedStore = Code("unsupported_store", .usage)
        public static let upgradeInProgress = Code("upgrade_in_progress", .conflict)
        public static let usage = Code("usage", .usage)
        public static let userAuthenticated = Code("user_authenticated", .nothingDue)
        public static let userExists = Code("user_exists", .conflict)
        public static let userLinked = Code("user_linked", .nothingDue)
        public static let userNotFound = Code("user_not_found", .notFound)
        public static let usernameTaken = Code("username_taken", .conflict)
        public static let verifyFailed = Code("verify_failed", .badData)
        public static let windowFull = Code("window_full", .nothingDue)
        public static let bodyTooLarge = Code("body_too_large", .usage)
        public static let insufficientScope = Code("insufficient_scope", .usage)
        public static let invalidKeyName = Code("invalid_key_name", .usage)
        public static let meterExhausted = Code("meter_exhausted", .meterExhausted)
        public static let needsAccount = Code("needs_account", .needsAccount)
        public static let needsPremium = Code("needs_premium", .needsPremium)
        public static let refreshTokenInvalid = Code("refresh_token_invalid", .notFound)
        public static let refreshTokenReused = Code("refresh_token_reused", .conflict)
        public static let routeNotFound = Code("route_not_found", .notFound)
        public static let serverKeyExists = Code("server_key_exists", .conflict)
        public static let serverKeyNotFound = Code("server_key_not_found", .notFound)
        public static let unauthorized = Code("unauthorized", .usage)
        public static let rateLimited = Code("rate_limited", .tryAgainLater)
    }
}
