import Foundation

/// Who a person says they are, when support looks them up: the identity a provider vouched
/// for, an email address, or the device a guest was created on. An identity is bound to one
/// user at most; an email address may be reported by identities of several users, and a
/// device shared by several guests.
public enum UserLookup: Sendable, Equatable {
    /// The identity `provider` vouches for as `subject`, exactly.
    case identity(provider: String, subject: String)
    /// An email address, ASCII letters in either case: the one an identity was linked with, or
    /// the subject of an `email` identity that carries none.
    case email(String)
    /// The device id guests were created with, exactly.
    case device(String)

    /// `PROVIDER:SUBJECT`, split at the first colon: a subject may hold colons, a provider
    /// never does.
    ///
    /// ```swift
    /// let lookup = try UserLookup.identity(parsing: "apple:001234.abcd")
    /// ```
    public static func identity(parsing text: String) throws -> UserLookup {
        guard let colon = text.firstIndex(of: ":") else {
            throw GuestModeError(
                .usage, "an identity is PROVIDER:SUBJECT, such as apple:001234.abcd; '\(text)' has no ':'")
        }
        let provider = String(text[..<colon])
        let subject = String(text[text.index(after: colon)...])
        guard !provider.isEmpty else {
            throw GuestModeError(.usage, "an identity is PROVIDER:SUBJECT; '\(text)' names no provider")
        }
        guard !subject.isEmpty else {
            throw GuestModeError(.emptySubject, "the identity's subject must not be empty")
        }
        return .identity(provider: provider, subject: subject)
    }

    /// The refusal when no user matches: `user_not_found`, naming what was looked for.
    package var nobody: GuestModeError {
        switch self {
        case let .identity(provider, subject):
            GuestModeError(.userNotFound, "no user holds the \(provider) identity '\(subject)' in this store")
        case let .email(address):
            GuestModeError(.userNotFound, "no user has an identity with the email '\(address)' in this store")
        case let .device(device):
            GuestModeError(.userNotFound, "no user was created on the device '\(device)' in this store")
        }
    }

    fileprivate func check() throws {
        switch self {
        case let .identity(provider, subject):
            try TextRule.check(["the provider": provider, "the identity's subject": subject])
        case let .email(address):
            try TextRule.check(address, what: "the email")
            guard !address.isEmpty else { throw GuestModeError(.usage, "the email to look for must not be empty") }
        case let .device(device):
            try TextRule.check(device, what: "the device")
            guard !device.isEmpty else { throw GuestModeError(.usage, "the device to look for must not be empty") }
        }
    }
}

extension GuestMode {
    /// The users `lookup` names, oldest first (then by id, byte by byte), as `users(matching:now:)`
    /// lists them; empty when none does. Every lookup is answered from an index, however many
    /// users the store holds.
    ///
    /// ```swift
    /// let found = try engine.findUsers(.identity(provider: "apple", subject: "001234.abcd"))
    /// // found.first?.id: the account holding that Apple identity
    /// ```
    public func findUsers(_ lookup: UserLookup) throws -> [UserSummary] {
        try lookup.check()
        return try store.read { transaction in try transaction.userSummaries(lookup) }
    }
}
