// Written by scripts/error-codes.py from the server's catalogue (GuestModeError.Code); do not edit.

/// The `code` of a failure the server answers (`{"error":{"code","message"}}`), one case per code
/// of the catalogue in guestmode(1), EXIT STATUS, Error codes; a code this client does not know yet
/// (a newer server) is `.unknown` with its text.
public enum ErrorCode: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// `already_migrated`
    case alreadyMigrated
    /// `app_store_not_configured`
    case appStoreNotConfigured
    /// `archive_error`
    case archiveError
    /// `archive_format_mismatch`
    case archiveFormatMismatch
    /// `archive_not_found`
    case archiveNotFound
    /// `archive_too_new`
    case archiveTooNew
    /// `archive_too_old`
    case archiveTooOld
    /// `archive_unreadable`
    case archiveUnreadable
    /// `archive_user_mismatch`
    case archiveUserMismatch
    /// `archive_write_failed`
    case archiveWriteFailed
    /// `assignment_lost`
    case assignmentLost
    /// `backup_key_in_use`
    case backupKeyInUse
    /// `backup_key_not_found`
    case backupKeyNotFound
    /// `bad_backup_key`
    case badBackupKey
    /// `bad_duration`
    case badDuration
    /// `bad_header`
    case badHeader
    /// `bad_manifest`
    case badManifest
    /// `bad_row`
    case badRow
    /// `bad_signature`
    case badSignature
    /// `bad_time`
    case badTime
    /// `body_too_large`
    case bodyTooLarge
    /// `cannot_create_backup`
    case cannotCreateBackup
    /// `cannot_create_output`
    case cannotCreateOutput
    /// `cannot_create_store`
    case cannotCreateStore
    /// `cannot_decrypt`
    case cannotDecrypt
    /// `cannot_open_store`
    case cannotOpenStore
    /// `cannot_spool`
    case cannotSpool
    /// `commit_unknown`
    case commitUnknown
    /// `conflict_not_found`
    case conflictNotFound
    /// `conflicting_plan_terms`
    case conflictingPlanTerms
    /// `cooldown`
    case cooldown
    /// `copy_mismatch`
    case copyMismatch
    /// `corrupt_store`
    case corruptStore
    /// `count_overflow`
    case countOverflow
    /// `damaged_archive`
    case damagedArchive
    /// `database_error`
    case databaseError
    /// `destination_refused`
    case destinationRefused
    /// `destination_unauthorized`
    case destinationUnauthorized
    /// `destination_unavailable`
    case destinationUnavailable
    /// `different_user`
    case differentUser
    /// `disk_full`
    case diskFull
    /// `duplicate_row`
    case duplicateRow
    /// `empty_key`
    case emptyKey
    /// `empty_period`
    case emptyPeriod
    /// `empty_subject`
    case emptySubject
    /// `end_not_after_now`
    case endNotAfterNow
    /// `experiment_not_found`
    case experimentNotFound
    /// `file_not_found`
    case fileNotFound
    /// `file_too_large`
    case fileTooLarge
    /// `foreign_row`
    case foreignRow
    /// `grant_not_found`
    case grantNotFound
    /// `guest_already_moved`
    case guestAlreadyMoved
    /// `guest_owner_mismatch`
    case guestOwnerMismatch
    /// `hostile_archive`
    case hostileArchive
    /// `id_token_audience_mismatch`
    case idTokenAudienceMismatch
    /// `id_token_expired`
    case idTokenExpired
    /// `id_token_invalid`
    case idTokenInvalid
    /// `id_token_issuer_mismatch`
    case idTokenIssuerMismatch
    /// `id_token_nonce_mismatch`
    case idTokenNonceMismatch
    /// `idempotency_key_reused`
    case idempotencyKeyReused
    /// `identity_already_exists`
    case identityAlreadyExists
    /// `identity_not_found`
    case identityNotFound
    /// `identity_provider_not_configured`
    case identityProviderNotConfigured
    /// `import_conflict`
    case importConflict
    /// `inconsistent_rows`
    case inconsistentRows
    /// `insufficient_scope`
    case insufficientScope
    /// `integrity_check_failed`
    case integrityCheckFailed
    /// `internal`
    case internalFailure
    /// `invalid_amount`
    case invalidAmount
    /// `invalid_attempts`
    case invalidAttempts
    /// `invalid_device`
    case invalidDevice
    /// `invalid_event`
    case invalidEvent
    /// `invalid_event_log`
    case invalidEventLog
    /// `invalid_idempotency_key`
    case invalidIdempotencyKey
    /// `invalid_identity_provider`
    case invalidIdentityProvider
    /// `invalid_import_file`
    case invalidImportFile
    /// `invalid_json`
    case invalidJson
    /// `invalid_jwks`
    case invalidJWKS
    /// `invalid_key_name`
    case invalidKeyName
    /// `invalid_level`
    case invalidLevel
    /// `invalid_limit`
    case invalidLimit
    /// `invalid_pool_size`
    case invalidPoolSize
    /// `invalid_profile`
    case invalidProfile
    /// `invalid_schema`
    case invalidSchema
    /// `invalid_url`
    case invalidURL
    /// `invalid_username`
    case invalidUsername
    /// `invalid_utf8`
    case invalidUtf8
    /// `io_error`
    case ioError
    /// `journal_mismatch`
    case journalMismatch
    /// `journal_not_found`
    case journalNotFound
    /// `key_exists`
    case keyExists
    /// `length_required`
    case lengthRequired
    /// `line_too_long`
    case lineTooLong
    /// `malformed_log`
    case malformedLog
    /// `malformed_request`
    case malformedRequest
    /// `manifest_mismatch`
    case manifestMismatch
    /// `meter_exhausted`
    case meterExhausted
    /// `migration_interrupted`
    case migrationInterrupted
    /// `migration_unfinished`
    case migrationUnfinished
    /// `missing_manifest`
    case missingManifest
    /// `missing_secret`
    case missingSecret
    /// `missing_user_row`
    case missingUserRow
    /// `needs_account`
    case needsAccount
    /// `needs_premium`
    case needsPremium
    /// `never_ask`
    case neverAsk
    /// `no_eligible_prompt`
    case noEligiblePrompt
    /// `no_free_key`
    case noFreeKey
    /// `no_templates`
    case noTemplates
    /// `not_a_backup`
    case notABackup
    /// `not_a_file`
    case notAFile
    /// `not_a_guest`
    case notAGuest
    /// `not_a_store`
    case notAStore
    /// `not_an_archive`
    case notAnArchive
    /// `nothing_to_resume`
    case nothingToResume
    /// `nul_in_text`
    case nulInText
    /// `ownerless_key_without_owner`
    case ownerlessKeyWithoutOwner
    /// `passphrase_required`
    case passphraseRequired
    /// `plan_not_found`
    case planNotFound
    /// `pool_exhausted`
    case poolExhausted
    /// `profile_mismatch`
    case profileMismatch
    /// `profile_not_found`
    case profileNotFound
    /// `profile_upgrade_refused`
    case profileUpgradeRefused
    /// `provider_already_linked`
    case providerAlreadyLinked
    /// `purchase_invalid`
    case purchaseInvalid
    /// `purchase_user_mismatch`
    case purchaseUserMismatch
    /// `push_incomplete`
    case pushIncomplete
    /// `rate_limited`
    case rateLimited
    /// `record_cap_needs_premium`
    case recordCapNeedsPremium
    /// `record_cap_reached`
    case recordCapReached
    /// `record_exists`
    case recordExists
    /// `record_key_taken`
    case recordKeyTaken
    /// `record_not_found`
    case recordNotFound
    /// `record_not_object`
    case recordNotObject
    /// `records_left_behind`
    case recordsLeftBehind
    /// `refresh_token_invalid`
    case refreshTokenInvalid
    /// `refresh_token_reused`
    case refreshTokenReused
    /// `request_incomplete`
    case requestIncomplete
    /// `request_timeout`
    case requestTimeout
    /// `revenuecat_not_configured`
    case revenueCatNotConfigured
    /// `route_not_found`
    case routeNotFound
    /// `row_conflict`
    case rowConflict
    /// `same_store`
    case sameStore
    /// `same_user`
    case sameUser
    /// `schema_migration_failed`
    case schemaMigrationFailed
    /// `secret_too_long`
    case secretTooLong
    /// `server_busy`
    case serverBusy
    /// `server_key_exists`
    case serverKeyExists
    /// `server_key_not_found`
    case serverKeyNotFound
    /// `session_not_found`
    case sessionNotFound
    /// `signing_key_in_use`
    case signingKeyInUse
    /// `signing_key_not_found`
    case signingKeyNotFound
    /// `signing_key_sealed_elsewhere`
    case signingKeySealedElsewhere
    /// `store_busy`
    case storeBusy
    /// `store_environment_refused`
    case storeEnvironmentRefused
    /// `store_exists`
    case storeExists
    /// `store_is_directory`
    case storeIsDirectory
    /// `store_not_found`
    case storeNotFound
    /// `store_too_new`
    case storeTooNew
    /// `store_unreachable`
    case storeUnreachable
    /// `store_without_profile`
    case storeWithoutProfile
    /// `too_many_providers`
    case tooManyProviders
    /// `trial_already_used`
    case trialAlreadyUsed
    /// `unauthorized`
    case unauthorized
    /// `unexportable_value`
    case unexportableValue
    /// `unknown_collection`
    case unknownCollection
    /// `unknown_context`
    case unknownContext
    /// `unknown_meter`
    case unknownMeter
    /// `unknown_plan`
    case unknownPlan
    /// `unknown_product`
    case unknownProduct
    /// `unknown_provider`
    case unknownProvider
    /// `unknown_trigger`
    case unknownTrigger
    /// `unknown_variant`
    case unknownVariant
    /// `unknown_webhook`
    case unknownWebhook
    /// `unsupported_store`
    case unsupportedStore
    /// `unsupported_transfer_encoding`
    case unsupportedTransferEncoding
    /// `upgrade_in_progress`
    case upgradeInProgress
    /// `usage`
    case usage
    /// `user_authenticated`
    case userAuthenticated
    /// `user_exists`
    case userExists
    /// `user_linked`
    case userLinked
    /// `user_not_found`
    case userNotFound
    /// `username_taken`
    case usernameTaken
    /// `verify_failed`
    case verifyFailed
    /// `webhook_delivered`
    case webhookDelivered
    /// `webhook_not_found`
    case webhookNotFound
    /// `webhook_secret_unavailable`
    case webhookSecretUnavailable
    /// `webhooks_undelivered`
    case webhooksUndelivered
    /// `window_full`
    case windowFull
    /// A code this version of the client does not know.
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "already_migrated": self = .alreadyMigrated
        case "app_store_not_configured": self = .appStoreNotConfigured
        case "archive_error": self = .archiveError
        case "archive_format_mismatch": self = .archiveFormatMismatch
        case "archive_not_found": self = .archiveNotFound
        case "archive_too_new": self = .archiveTooNew
        case "archive_too_old": self = .archiveTooOld
        case "archive_unreadable": self = .archiveUnreadable
        case "archive_user_mismatch": self = .archiveUserMismatch
        case "archive_write_failed": self = .archiveWriteFailed
        case "assignment_lost": self = .assignmentLost
        case "backup_key_in_use": self = .backupKeyInUse
        case "backup_key_not_found": self = .backupKeyNotFound
        case "bad_backup_key": self = .badBackupKey
        case "bad_duration": self = .badDuration
        case "bad_header": self = .badHeader
        case "bad_manifest": self = .badManifest
        case "bad_row": self = .badRow
        case "bad_signature": self = .badSignature
        case "bad_time": self = .badTime
        case "body_too_large": self = .bodyTooLarge
        case "cannot_create_backup": self = .cannotCreateBackup
        case "cannot_create_output": self = .cannotCreateOutput
        case "cannot_create_store": self = .cannotCreateStore
        case "cannot_decrypt": self = .cannotDecrypt
        case "cannot_open_store": self = .cannotOpenStore
        case "cannot_spool": self = .cannotSpool
        case "commit_unknown": self = .commitUnknown
        case "conflict_not_found": self = .conflictNotFound
        case "conflicting_plan_terms": self = .conflictingPlanTerms
        case "cooldown": self = .cooldown
        case "copy_mismatch": self = .copyMismatch
        case "corrupt_store": self = .corruptStore
        case "count_overflow": self = .countOverflow
        case "damaged_archive": self = .damagedArchive
        case "database_error": self = .databaseError
        case "destination_refused": self = .destinationRefused
        case "destination_unauthorized": self = .destinationUnauthorized
        case "destination_unavailable": self = .destinationUnavailable
        case "different_user": self = .differentUser
        case "disk_full": self = .diskFull
        case "duplicate_row": self = .duplicateRow
        case "empty_key": self = .emptyKey
        case "empty_period": self = .emptyPeriod
        case "empty_subject": self = .emptySubject
        case "end_not_after_now": self = .endNotAfterNow
        case "experiment_not_found": self = .experimentNotFound
        case "file_not_found": self = .fileNotFound
        case "file_too_large": self = .fileTooLarge
        case "foreign_row": self = .foreignRow
        case "grant_not_found": self = .grantNotFound
        case "guest_already_moved": self = .guestAlreadyMoved
        case "guest_owner_mismatch": self = .guestOwnerMismatch
        case "hostile_archive": self = .hostileArchive
        case "id_token_audience_mismatch": self = .idTokenAudienceMismatch
        case "id_token_expired": self = .idTokenExpired
        case "id_token_invalid": self = .idTokenInvalid
        case "id_token_issuer_mismatch": self = .idTokenIssuerMismatch
        case "id_token_nonce_mismatch": self = .idTokenNonceMismatch
        case "idempotency_key_reused": self = .idempotencyKeyReused
        case "identity_already_exists": self = .identityAlreadyExists
        case "identity_not_found": self = .identityNotFound
        case "identity_provider_not_configured": self = .identityProviderNotConfigured
        case "import_conflict": self = .importConflict
        case "inconsistent_rows": self = .inconsistentRows
        case "insufficient_scope": self = .insufficientScope
        case "integrity_check_failed": self = .integrityCheckFailed
        case "internal": self = .internalFailure
        case "invalid_amount": self = .invalidAmount
        case "invalid_attempts": self = .invalidAttempts
        case "invalid_device": self = .invalidDevice
        case "invalid_event": self = .invalidEvent
        case "invalid_event_log": self = .invalidEventLog
        case "invalid_idempotency_key": self = .invalidIdempotencyKey
        case "invalid_identity_provider": self = .invalidIdentityProvider
        case "invalid_import_file": self = .invalidImportFile
        case "invalid_json": self = .invalidJson
        case "invalid_jwks": self = .invalidJWKS
        case "invalid_key_name": self = .invalidKeyName
        case "invalid_level": self = .invalidLevel
        case "invalid_limit": self = .invalidLimit
        case "invalid_pool_size": self = .invalidPoolSize
        case "invalid_profile": self = .invalidProfile
        case "invalid_schema": self = .invalidSchema
        case "invalid_url": self = .invalidURL
        case "invalid_username": self = .invalidUsername
        case "invalid_utf8": self = .invalidUtf8
        case "io_error": self = .ioError
        case "journal_mismatch": self = .journalMismatch
        case "journal_not_found": self = .journalNotFound
        case "key_exists": self = .keyExists
        case "length_required": self = .lengthRequired
        case "line_too_long": self = .lineTooLong
        case "malformed_log": self = .malformedLog
        case "malformed_request": self = .malformedRequest
        case "manifest_mismatch": self = .manifestMismatch
        case "meter_exhausted": self = .meterExhausted
        case "migration_interrupted": self = .migrationInterrupted
        case "migration_unfinished": self = .migrationUnfinished
        case "missing_manifest": self = .missingManifest
        case "missing_secret": self = .missingSecret
        case "missing_user_row": self = .missingUserRow
        case "needs_account": self = .needsAccount
        case "needs_premium": self = .needsPremium
        case "never_ask": self = .neverAsk
        case "no_eligible_prompt": self = .noEligiblePrompt
        case "no_free_key": self = .noFreeKey
        case "no_templates": self = .noTemplates
        case "not_a_backup": self = .notABackup
        case "not_a_file": self = .notAFile
        case "not_a_guest": self = .notAGuest
        case "not_a_store": self = .notAStore
        case "not_an_archive": self = .notAnArchive
        case "nothing_to_resume": self = .nothingToResume
        case "nul_in_text": self = .nulInText
        case "ownerless_key_without_owner": self = .ownerlessKeyWithoutOwner
        case "passphrase_required": self = .passphraseRequired
        case "plan_not_found": self = .planNotFound
        case "pool_exhausted": self = .poolExhausted
        case "profile_mismatch": self = .profileMismatch
        case "profile_not_found": self = .profileNotFound
        case "profile_upgrade_refused": self = .profileUpgradeRefused
        case "provider_already_linked": self = .providerAlreadyLinked
        case "purchase_invalid": self = .purchaseInvalid
        case "purchase_user_mismatch": self = .purchaseUserMismatch
        case "push_incomplete": self = .pushIncomplete
        case "rate_limited": self = .rateLimited
        case "record_cap_needs_premium": self = .recordCapNeedsPremium
        case "record_cap_reached": self = .recordCapReached
        case "record_exists": self = .recordExists
        case "record_key_taken": self = .recordKeyTaken
        case "record_not_found": self = .recordNotFound
        case "record_not_object": self = .recordNotObject
        case "records_left_behind": self = .recordsLeftBehind
        case "refresh_token_invalid": self = .refreshTokenInvalid
        case "refresh_token_reused": self = .refreshTokenReused
        case "request_incomplete": self = .requestIncomplete
        case "request_timeout": self = .requestTimeout
        case "revenuecat_not_configured": self = .revenueCatNotConfigured
        case "route_not_found": self = .routeNotFound
        case "row_conflict": self = .rowConflict
        case "same_store": self = .sameStore
        case "same_user": self = .sameUser
        case "schema_migration_failed": self = .schemaMigrationFailed
        case "secret_too_long": self = .secretTooLong
        case "server_busy": self = .serverBusy
        case "server_key_exists": self = .serverKeyExists
        case "server_key_not_found": self = .serverKeyNotFound
        case "session_not_found": self = .sessionNotFound
        case "signing_key_in_use": self = .signingKeyInUse
        case "signing_key_not_found": self = .signingKeyNotFound
        case "signing_key_sealed_elsewhere": self = .signingKeySealedElsewhere
        case "store_busy": self = .storeBusy
        case "store_environment_refused": self = .storeEnvironmentRefused
        case "store_exists": self = .storeExists
        case "store_is_directory": self = .storeIsDirectory
        case "store_not_found": self = .storeNotFound
        case "store_too_new": self = .storeTooNew
        case "store_unreachable": self = .storeUnreachable
        case "store_without_profile": self = .storeWithoutProfile
        case "too_many_providers": self = .tooManyProviders
        case "trial_already_used": self = .trialAlreadyUsed
        case "unauthorized": self = .unauthorized
        case "unexportable_value": self = .unexportableValue
        case "unknown_collection": self = .unknownCollection
        case "unknown_context": self = .unknownContext
        case "unknown_meter": self = .unknownMeter
        case "unknown_plan": self = .unknownPlan
        case "unknown_product": self = .unknownProduct
        case "unknown_provider": self = .unknownProvider
        case "unknown_trigger": self = .unknownTrigger
        case "unknown_variant": self = .unknownVariant
        case "unknown_webhook": self = .unknownWebhook
        case "unsupported_store": self = .unsupportedStore
        case "unsupported_transfer_encoding": self = .unsupportedTransferEncoding
        case "upgrade_in_progress": self = .upgradeInProgress
        case "usage": self = .usage
        case "user_authenticated": self = .userAuthenticated
        case "user_exists": self = .userExists
        case "user_linked": self = .userLinked
        case "user_not_found": self = .userNotFound
        case "username_taken": self = .usernameTaken
        case "verify_failed": self = .verifyFailed
        case "webhook_delivered": self = .webhookDelivered
        case "webhook_not_found": self = .webhookNotFound
        case "webhook_secret_unavailable": self = .webhookSecretUnavailable
        case "webhooks_undelivered": self = .webhooksUndelivered
        case "window_full": self = .windowFull
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .alreadyMigrated: "already_migrated"
        case .appStoreNotConfigured: "app_store_not_configured"
        case .archiveError: "archive_error"
        case .archiveFormatMismatch: "archive_format_mismatch"
        case .archiveNotFound: "archive_not_found"
        case .archiveTooNew: "archive_too_new"
        case .archiveTooOld: "archive_too_old"
        case .archiveUnreadable: "archive_unreadable"
        case .archiveUserMismatch: "archive_user_mismatch"
        case .archiveWriteFailed: "archive_write_failed"
        case .assignmentLost: "assignment_lost"
        case .backupKeyInUse: "backup_key_in_use"
        case .backupKeyNotFound: "backup_key_not_found"
        case .badBackupKey: "bad_backup_key"
        case .badDuration: "bad_duration"
        case .badHeader: "bad_header"
        case .badManifest: "bad_manifest"
        case .badRow: "bad_row"
        case .badSignature: "bad_signature"
        case .badTime: "bad_time"
        case .bodyTooLarge: "body_too_large"
        case .cannotCreateBackup: "cannot_create_backup"
        case .cannotCreateOutput: "cannot_create_output"
        case .cannotCreateStore: "cannot_create_store"
        case .cannotDecrypt: "cannot_decrypt"
        case .cannotOpenStore: "cannot_open_store"
        case .cannotSpool: "cannot_spool"
        case .commitUnknown: "commit_unknown"
        case .conflictNotFound: "conflict_not_found"
        case .conflictingPlanTerms: "conflicting_plan_terms"
        case .cooldown: "cooldown"
        case .copyMismatch: "copy_mismatch"
        case .corruptStore: "corrupt_store"
        case .countOverflow: "count_overflow"
        case .damagedArchive: "damaged_archive"
        case .databaseError: "database_error"
        case .destinationRefused: "destination_refused"
        case .destinationUnauthorized: "destination_unauthorized"
        case .destinationUnavailable: "destination_unavailable"
        case .differentUser: "different_user"
        case .diskFull: "disk_full"
        case .duplicateRow: "duplicate_row"
        case .emptyKey: "empty_key"
        case .emptyPeriod: "empty_period"
        case .emptySubject: "empty_subject"
        case .endNotAfterNow: "end_not_after_now"
        case .experimentNotFound: "experiment_not_found"
        case .fileNotFound: "file_not_found"
        case .fileTooLarge: "file_too_large"
        case .foreignRow: "foreign_row"
        case .grantNotFound: "grant_not_found"
        case .guestAlreadyMoved: "guest_already_moved"
        case .guestOwnerMismatch: "guest_owner_mismatch"
        case .hostileArchive: "hostile_archive"
        case .idTokenAudienceMismatch: "id_token_audience_mismatch"
        case .idTokenExpired: "id_token_expired"
        case .idTokenInvalid: "id_token_invalid"
        case .idTokenIssuerMismatch: "id_token_issuer_mismatch"
        case .idTokenNonceMismatch: "id_token_nonce_mismatch"
        case .idempotencyKeyReused: "idempotency_key_reused"
        case .identityAlreadyExists: "identity_already_exists"
        case .identityNotFound: "identity_not_found"
        case .identityProviderNotConfigured: "identity_provider_not_configured"
        case .importConflict: "import_conflict"
        case .inconsistentRows: "inconsistent_rows"
        case .insufficientScope: "insufficient_scope"
        case .integrityCheckFailed: "integrity_check_failed"
        case .internalFailure: "internal"
        case .invalidAmount: "invalid_amount"
        case .invalidAttempts: "invalid_attempts"
        case .invalidDevice: "invalid_device"
        case .invalidEvent: "invalid_event"
        case .invalidEventLog: "invalid_event_log"
        case .invalidIdempotencyKey: "invalid_idempotency_key"
        case .invalidIdentityProvider: "invalid_identity_provider"
        case .invalidImportFile: "invalid_import_file"
        case .invalidJson: "invalid_json"
        case .invalidJWKS: "invalid_jwks"
        case .invalidKeyName: "invalid_key_name"
        case .invalidLevel: "invalid_level"
        case .invalidLimit: "invalid_limit"
        case .invalidPoolSize: "invalid_pool_size"
        case .invalidProfile: "invalid_profile"
        case .invalidSchema: "invalid_schema"
        case .invalidURL: "invalid_url"
        case .invalidUsername: "invalid_username"
        case .invalidUtf8: "invalid_utf8"
        case .ioError: "io_error"
        case .journalMismatch: "journal_mismatch"
        case .journalNotFound: "journal_not_found"
        case .keyExists: "key_exists"
        case .lengthRequired: "length_required"
        case .lineTooLong: "line_too_long"
        case .malformedLog: "malformed_log"
        case .malformedRequest: "malformed_request"
        case .manifestMismatch: "manifest_mismatch"
        case .meterExhausted: "meter_exhausted"
        case .migrationInterrupted: "migration_interrupted"
        case .migrationUnfinished: "migration_unfinished"
        case .missingManifest: "missing_manifest"
        case .missingSecret: "missing_secret"
        case .missingUserRow: "missing_user_row"
        case .needsAccount: "needs_account"
        case .needsPremium: "needs_premium"
        case .neverAsk: "never_ask"
        case .noEligiblePrompt: "no_eligible_prompt"
        case .noFreeKey: "no_free_key"
        case .noTemplates: "no_templates"
        case .notABackup: "not_a_backup"
        case .notAFile: "not_a_file"
        case .notAGuest: "not_a_guest"
        case .notAStore: "not_a_store"
        case .notAnArchive: "not_an_archive"
        case .nothingToResume: "nothing_to_resume"
        case .nulInText: "nul_in_text"
        case .ownerlessKeyWithoutOwner: "ownerless_key_without_owner"
        case .passphraseRequired: "passphrase_required"
        case .planNotFound: "plan_not_found"
        case .poolExhausted: "pool_exhausted"
        case .profileMismatch: "profile_mismatch"
        case .profileNotFound: "profile_not_found"
        case .profileUpgradeRefused: "profile_upgrade_refused"
        case .providerAlreadyLinked: "provider_already_linked"
        case .purchaseInvalid: "purchase_invalid"
        case .purchaseUserMismatch: "purchase_user_mismatch"
        case .pushIncomplete: "push_incomplete"
        case .rateLimited: "rate_limited"
        case .recordCapNeedsPremium: "record_cap_needs_premium"
        case .recordCapReached: "record_cap_reached"
        case .recordExists: "record_exists"
        case .recordKeyTaken: "record_key_taken"
        case .recordNotFound: "record_not_found"
        case .recordNotObject: "record_not_object"
        case .recordsLeftBehind: "records_left_behind"
        case .refreshTokenInvalid: "refresh_token_invalid"
        case .refreshTokenReused: "refresh_token_reused"
        case .requestIncomplete: "request_incomplete"
        case .requestTimeout: "request_timeout"
        case .revenueCatNotConfigured: "revenuecat_not_configured"
        case .routeNotFound: "route_not_found"
        case .rowConflict: "row_conflict"
        case .sameStore: "same_store"
        case .sameUser: "same_user"
        case .schemaMigrationFailed: "schema_migration_failed"
        case .secretTooLong: "secret_too_long"
        case .serverBusy: "server_busy"
        case .serverKeyExists: "server_key_exists"
        case .serverKeyNotFound: "server_key_not_found"
        case .sessionNotFound: "session_not_found"
        case .signingKeyInUse: "signing_key_in_use"
        case .signingKeyNotFound: "signing_key_not_found"
        case .signingKeySealedElsewhere: "signing_key_sealed_elsewhere"
        case .storeBusy: "store_busy"
        case .storeEnvironmentRefused: "store_environment_refused"
        case .storeExists: "store_exists"
        case .storeIsDirectory: "store_is_directory"
        case .storeNotFound: "store_not_found"
        case .storeTooNew: "store_too_new"
        case .storeUnreachable: "store_unreachable"
        case .storeWithoutProfile: "store_without_profile"
        case .tooManyProviders: "too_many_providers"
        case .trialAlreadyUsed: "trial_already_used"
        case .unauthorized: "unauthorized"
        case .unexportableValue: "unexportable_value"
        case .unknownCollection: "unknown_collection"
        case .unknownContext: "unknown_context"
        case .unknownMeter: "unknown_meter"
        case .unknownPlan: "unknown_plan"
        case .unknownProduct: "unknown_product"
        case .unknownProvider: "unknown_provider"
        case .unknownTrigger: "unknown_trigger"
        case .unknownVariant: "unknown_variant"
        case .unknownWebhook: "unknown_webhook"
        case .unsupportedStore: "unsupported_store"
        case .unsupportedTransferEncoding: "unsupported_transfer_encoding"
        case .upgradeInProgress: "upgrade_in_progress"
        case .usage: "usage"
        case .userAuthenticated: "user_authenticated"
        case .userExists: "user_exists"
        case .userLinked: "user_linked"
        case .userNotFound: "user_not_found"
        case .usernameTaken: "username_taken"
        case .verifyFailed: "verify_failed"
        case .webhookDelivered: "webhook_delivered"
        case .webhookNotFound: "webhook_not_found"
        case .webhookSecretUnavailable: "webhook_secret_unavailable"
        case .webhooksUndelivered: "webhooks_undelivered"
        case .windowFull: "window_full"
        case .unknown(let raw): raw
        }
    }

    public var description: String { rawValue }
}
