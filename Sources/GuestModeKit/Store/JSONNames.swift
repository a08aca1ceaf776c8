import Foundation

// The JSON names of the engine's types that the conventions of `JSONDocument` would get wrong: an id
// says whose it is (`user_id`, `event_id`), a user taking part in a move says which side
// (`source_user_id`, `guest_user_id`). The compiler checks each against its type, so renaming a type or
// a property here cannot silently change a document.

extension User: JSONNamed {
    package static let jsonNames = ["id": "user_id"]
}

extension UserSummary: JSONNamed {
    package static let jsonNames = ["id": "user_id"]
}

/// `serve session list`: a session's id says it names a family of refresh tokens.
extension SessionFamily: JSONNamed {
    package static let jsonNames = ["id": "family_id"]
}

extension PurgeCandidate: JSONNamed {
    package static let jsonNames = ["id": "user_id"]
}

/// `user show`: the user itself, an object holding its `user_id`.
extension UserDetails: JSONNamed {
    package static let jsonNames = ["user": "user"]
}

extension MergeReport: JSONNamed {
    package static let jsonNames = ["guest": "guest_user_id", "account": "account_user_id"]
}

extension MigrationJournal: JSONNamed {
    package static let jsonNames = ["id": "journal_id", "source": "source_user_id", "target": "target_user_id"]
}

extension MigrationPlan: JSONNamed {
    package static let jsonNames = ["source": "source_user_id", "target": "target_user_id"]
}

/// `track --from`: `applied` counts lines; whether they were committed is `committed`.
extension IngestReport: JSONNamed {
    package static let jsonNames = ["isApplied": "committed"]
}

extension StoredRecord: JSONNamed {
    package static let jsonNames = ["owner": "user_id"]
}

extension LoggedEvent: JSONNamed {
    package static let jsonNames = ["id": "event_id"]
}

extension ArchivedConflict: JSONNamed {
    package static let jsonNames = ["id": "conflict_id"]
}

extension RestoredConflict: JSONNamed {
    package static let jsonNames = ["id": "conflict_id"]
}

extension MeterGrant: JSONNamed {
    package static let jsonNames = ["id": "grant_id"]
}
