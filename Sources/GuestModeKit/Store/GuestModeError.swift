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
public struct GuestModeError: Error, CustomStringConvertible, Sendable, Equatable {
    public var kind: FailureKind
    public var code: Code
    public var message: String

    public init(_ kind: FailureKind, code: Code, _ message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func notFound(_ message: String, code: Code) -> GuestModeError {
        GuestModeError(.notFound, code: code, message)
    }

    public static func badData(_ message: String, code: Code) -> GuestModeError {
        GuestModeError(.badData, code: code, message)
    }

    public static func usage(_ message: String, code: Code) -> GuestModeError {
        GuestModeError(.usage, code: code, message)
    }

    public static func conflict(_ message: String, code: Code) -> GuestModeError {
        GuestModeError(.conflict, code: code, message)
    }
}

extension GuestModeError {
    /// A stable snake_case identifier scripts can switch on (`--json` prints
    /// it as `error.code`); the catalogue is listed in guestmode(1). Codes
    /// are compared as values, never as strings.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) { self.rawValue = rawValue }
        init(_ rawValue: String) { self.rawValue = rawValue }

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
            .profileMismatch,
            .profileNotFound,
            .profileUpgradeRefused,
            .providerAlreadyLinked,
            .pushIncomplete,
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

        public static let alreadyMigrated = Code("already_migrated")
        public static let archiveError = Code("archive_error")
        public static let archiveFormatMismatch = Code("archive_format_mismatch")
        public static let archiveNotFound = Code("archive_not_found")
        public static let archiveTooNew = Code("archive_too_new")
        public static let archiveTooOld = Code("archive_too_old")
        public static let archiveUnreadable = Code("archive_unreadable")
        public static let archiveWriteFailed = Code("archive_write_failed")
        public static let assignmentLost = Code("assignment_lost")
        public static let backupKeyNotFound = Code("backup_key_not_found")
        public static let diskFull = Code("disk_full")
        public static let notAFile = Code("not_a_file")
        public static let badBackupKey = Code("bad_backup_key")
        public static let badDuration = Code("bad_duration")
        public static let badHeader = Code("bad_header")
        public static let badManifest = Code("bad_manifest")
        public static let badRow = Code("bad_row")
        public static let badSignature = Code("bad_signature")
        public static let badTime = Code("bad_time")
        public static let cannotCreateBackup = Code("cannot_create_backup")
        public static let cannotCreateOutput = Code("cannot_create_output")
        public static let cannotCreateStore = Code("cannot_create_store")
        public static let cannotDecrypt = Code("cannot_decrypt")
        public static let cannotOpenStore = Code("cannot_open_store")
        public static let cannotSpool = Code("cannot_spool")
        public static let commitUnknown = Code("commit_unknown")
        public static let conflictNotFound = Code("conflict_not_found")
        public static let conflictingPlanTerms = Code("conflicting_plan_terms")
        public static let cooldown = Code("cooldown")
        public static let copyMismatch = Code("copy_mismatch")
        public static let corruptStore = Code("corrupt_store")
        public static let countOverflow = Code("count_overflow")
        public static let damagedArchive = Code("damaged_archive")
        public static let databaseError = Code("database_error")
        public static let destinationUnavailable = Code("destination_unavailable")
        public static let differentUser = Code("different_user")
        public static let duplicateRow = Code("duplicate_row")
        public static let emptyKey = Code("empty_key")
        public static let emptyPeriod = Code("empty_period")
        public static let emptySubject = Code("empty_subject")
        public static let endNotAfterNow = Code("end_not_after_now")
        public static let experimentNotFound = Code("experiment_not_found")
        public static let fileNotFound = Code("file_not_found")
        public static let foreignRow = Code("foreign_row")
        public static let guestAlreadyMoved = Code("guest_already_moved")
        public static let guestOwnerMismatch = Code("guest_owner_mismatch")
        public static let hostileArchive = Code("hostile_archive")
        public static let idempotencyKeyReused = Code("idempotency_key_reused")
        public static let identityAlreadyExists = Code("identity_already_exists")
        public static let identityNotFound = Code("identity_not_found")
        public static let inconsistentRows = Code("inconsistent_rows")
        public static let integrityCheckFailed = Code("integrity_check_failed")
        public static let internalFailure = Code("internal")
        public static let invalidAmount = Code("invalid_amount")
        public static let invalidAttempts = Code("invalid_attempts")
        public static let invalidDevice = Code("invalid_device")
        public static let invalidEvent = Code("invalid_event")
        public static let invalidEventLog = Code("invalid_event_log")
        public static let invalidJson = Code("invalid_json")
        public static let invalidLevel = Code("invalid_level")
        public static let invalidLimit = Code("invalid_limit")
        public static let invalidProfile = Code("invalid_profile")
        public static let invalidSchema = Code("invalid_schema")
        public static let invalidUsername = Code("invalid_username")
        public static let invalidUtf8 = Code("invalid_utf8")
        public static let ioError = Code("io_error")
        public static let journalMismatch = Code("journal_mismatch")
        public static let journalNotFound = Code("journal_not_found")
        public static let keyExists = Code("key_exists")
        public static let lineTooLong = Code("line_too_long")
        public static let malformedLog = Code("malformed_log")
        public static let manifestMismatch = Code("manifest_mismatch")
        public static let migrationInterrupted = Code("migration_interrupted")
        public static let migrationUnfinished = Code("migration_unfinished")
        public static let missingManifest = Code("missing_manifest")
        public static let missingSecret = Code("missing_secret")
        public static let missingUserRow = Code("missing_user_row")
        public static let neverAsk = Code("never_ask")
        public static let noEligiblePrompt = Code("no_eligible_prompt")
        public static let noFreeKey = Code("no_free_key")
        public static let noTemplates = Code("no_templates")
        public static let notABackup = Code("not_a_backup")
        public static let notAGuest = Code("not_a_guest")
        public static let notAStore = Code("not_a_store")
        public static let notAnArchive = Code("not_an_archive")
        public static let nothingToResume = Code("nothing_to_resume")
        public static let nulInText = Code("nul_in_text")
        public static let ownerlessKeyWithoutOwner = Code("ownerless_key_without_owner")
        public static let passphraseRequired = Code("passphrase_required")
        public static let planNotFound = Code("plan_not_found")
        public static let profileMismatch = Code("profile_mismatch")
        public static let profileNotFound = Code("profile_not_found")
        public static let profileUpgradeRefused = Code("profile_upgrade_refused")
        public static let providerAlreadyLinked = Code("provider_already_linked")
        public static let pushIncomplete = Code("push_incomplete")
        public static let recordCapReached = Code("record_cap_reached")
        public static let recordExists = Code("record_exists")
        public static let recordKeyTaken = Code("record_key_taken")
        public static let recordNotFound = Code("record_not_found")
        public static let recordNotObject = Code("record_not_object")
        public static let recordsLeftBehind = Code("records_left_behind")
        public static let rowConflict = Code("row_conflict")
        public static let sameStore = Code("same_store")
        public static let sameUser = Code("same_user")
        public static let schemaMigrationFailed = Code("schema_migration_failed")
        public static let storeBusy = Code("store_busy")
        public static let storeExists = Code("store_exists")
        public static let storeIsDirectory = Code("store_is_directory")
        public static let storeNotFound = Code("store_not_found")
        public static let storeTooNew = Code("store_too_new")
        public static let storeUnreachable = Code("store_unreachable")
        public static let storeWithoutProfile = Code("store_without_profile")
        public static let tooManyProviders = Code("too_many_providers")
        public static let trialAlreadyUsed = Code("trial_already_used")
        public static let unexportableValue = Code("unexportable_value")
        public static let unknownCollection = Code("unknown_collection")
        public static let unknownContext = Code("unknown_context")
        public static let unknownMeter = Code("unknown_meter")
        public static let unknownPlan = Code("unknown_plan")
        public static let unknownProvider = Code("unknown_provider")
        public static let unknownTrigger = Code("unknown_trigger")
        public static let unknownVariant = Code("unknown_variant")
        public static let unsupportedStore = Code("unsupported_store")
        public static let upgradeInProgress = Code("upgrade_in_progress")
        public static let usage = Code("usage")
        public static let userAuthenticated = Code("user_authenticated")
        public static let userExists = Code("user_exists")
        public static let userLinked = Code("user_linked")
        public static let userNotFound = Code("user_not_found")
        public static let usernameTaken = Code("username_taken")
        public static let verifyFailed = Code("verify_failed")
        public static let windowFull = Code("window_full")
        public static let serverKeyExists = Code("server_key_exists")
        public static let serverKeyNotFound = Code("server_key_not_found")
        public static let invalidKeyName = Code("invalid_key_name")
        public static let refreshTokenInvalid = Code("refresh_token_invalid")
        public static let refreshTokenReused = Code("refresh_token_reused")
        public static let unauthorized = Code("unauthorized")
        public static let insufficientScope = Code("insufficient_scope")
        public static let bodyTooLarge = Code("body_too_large")
        public static let routeNotFound = Code("route_not_found")
        public static let needsAccount = Code("needs_account")
        public static let needsPremium = Code("needs_premium")
        public static let meterExhausted = Code("meter_exhausted")
    }
}
