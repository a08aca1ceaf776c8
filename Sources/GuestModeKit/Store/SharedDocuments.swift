import Foundation

// Documents the command line prints with --json and the server answers
// with, defined once so both spell them alike (`JSONDocument`).

/// `guest new`: the user and whether this call created it.
package struct GuestDocument: Encodable {
    package var user: User
    package var created: Bool

    package init(user: User, created: Bool) {
        self.user = user
        self.created = created
    }

    enum CodingKeys: String, CodingKey {
        case userID, new, device, state, promptState, createdAt, lastSeenAt, linkedAt
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(user.id, forKey: .userID)
        try container.encode(created, forKey: .new)
        try container.encode(user.device, forKey: .device)
        try container.encode(user.state, forKey: .state)
        try container.encode(user.promptState, forKey: .promptState)
        try container.encode(user.createdAt, forKey: .createdAt)
        try container.encode(user.lastSeenAt, forKey: .lastSeenAt)
        try container.encode(user.linkedAt, forKey: .linkedAt)
    }
}

/// `link` and `unlink`: one kind of document (guestmode-link(1), JSON OUTPUT).
package struct IdentityChange: Encodable {
    package var userID: String
    /// `link` or `unlink`.
    package var action: String
    package var provider: String
    /// The subject linked; null for unlink.
    package var subject: String?
    /// False when nothing changed (the identity was already linked to this user).
    package var changed: Bool
    /// The user's state afterwards: `anonymous` or `linked`.
    package var state: UserState
    package var removedAnonymousCredentials: Bool

    package init(
        userID: String, action: String, provider: String, subject: String?, changed: Bool, state: UserState,
        removedAnonymousCredentials: Bool
    ) {
        self.userID = userID
        self.action = action
        self.provider = provider
        self.subject = subject
        self.changed = changed
        self.state = state
        self.removedAnonymousCredentials = removedAnonymousCredentials
    }
}

/// `record delete`.
package struct RecordDeletion: Encodable {
    package var userID: String
    package var collection: String
    package var key: String
    package var deleted = true

    package init(userID: String, collection: String, key: String) {
        self.userID = userID
        self.collection = collection
        self.key = key
    }
}
