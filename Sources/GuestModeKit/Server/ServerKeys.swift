import Crypto
import Foundation

/// What a server key may do. `admin` covers everything `userData` does.
package enum ServerScope: String, Codable, Sendable, CaseIterable {
    /// The deployment's own work: every user's data, and what only operators do.
    case admin
    /// An app backend's work on its users' data.
    case userData = "user-data"

    /// Whether a key of this scope may do what needs `needed`.
    package func covers(_ needed: ServerScope) -> Bool {
        self == .admin || self == needed
    }
}

/// A server key as listed: its secret is never kept, only its SHA-256.
package struct ServerKey: Codable, Sendable, Equatable {
    package var name: String
    package var scope: ServerScope
    package var createdAt: Date
    /// Nil while the key is in force.
    package var revokedAt: Date?

    package init(name: String, scope: ServerScope, createdAt: Date, revokedAt: Date?) {
        self.name = name
        self.scope = scope
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// A key just created, with the one copy of its secret there will ever be.
package struct IssuedServerKey: Sendable {
    package var key: ServerKey
    package var secret: String
}

/// Secrets handed to callers (server keys, refresh tokens): 32 random bytes
/// behind a prefix that says what they are, stored only as their SHA-256.
/// A hash this fast is enough: the secrets are random, not chosen by people.
enum ServerSecret {
    static func make(prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return prefix + SecretHash.hex(bytes)
    }

    static func hash(_ secret: String) -> String {
        hash(bytes: Array(secret.utf8))
    }

    static func hash(bytes: [UInt8]) -> String {
        SecretHash.hex(Array(SHA256.hash(data: bytes)))
    }
}

extension GuestMode {
    package static let serverKeyPrefix = "gmk_"

    /// Creates a server key; the secret in the result is shown once and
    /// kept nowhere.
    package func createServerKey(named name: String, scope: ServerScope, now: Date) throws -> IssuedServerKey {
        try Self.requireValidKeyName(name)
        let secret = ServerSecret.make(prefix: Self.serverKeyPrefix)
        let key = ServerKey(name: name, scope: scope, createdAt: now, revokedAt: nil)
        try store.write { transaction in
            guard try transaction.serverKey(named: name) == nil else {
                throw GuestModeError(.serverKeyExists, "a server key named '\(name)' exists already")
            }
            try transaction.insertServerKey(key, secretHash: ServerSecret.hash(secret))
        }
        return IssuedServerKey(key: key, secret: secret)
    }

    /// Every server key, revoked ones included, ordered by name.
    package func serverKeys() throws -> [ServerKey] {
        try store.read { transaction in try transaction.serverKeys() }
    }

    /// Revokes a key: it authenticates nothing from `now` on. Revoking a
    /// revoked key changes nothing.
    package func revokeServerKey(named name: String, now: Date) throws -> ServerKey {
        try TextRule.check(name, what: "the key name")
        return try store.write { transaction in
            guard var key = try transaction.serverKey(named: name) else {
                throw GuestModeError(.serverKeyNotFound, "no server key named '\(name)'")
            }
            guard key.revokedAt == nil else { return key }
            try transaction.markServerKeyRevoked(named: name, at: now)
            key.revokedAt = now
            return key
        }
    }

    /// The key in force whose secret this is, or nil (unknown or revoked).
    package func serverKey(authenticating secret: String) throws -> ServerKey? {
        guard secret.hasPrefix(Self.serverKeyPrefix) else { return nil }
        let key = try store.read { transaction in try transaction.serverKey(secretHash: ServerSecret.hash(secret)) }
        return key?.revokedAt == nil ? key : nil
    }

    /// Runs `body` in the store transaction that authenticates `secret`, with
    /// an engine whose every call is part of it: a request costs one
    /// transaction, not one for its key and one for its answer, and a key
    /// revoked before the transaction began authenticates nothing in it. Nil,
    /// without running `body`, when no key in force has this secret.
    /// `writing` says whether `body` writes; a read that turns out to write is
    /// run again as a write (and a write that asks for a durable commit, in one).
    ///
    /// ```swift
    /// let status = try engine.asServerKey(secret, writing: false) { key, engine in
    ///     try engine.checkMeter(user: "u1", meter: "minutes", amount: 1, now: now)
    /// }
    /// ```
    package func asServerKey<T>(
        _ secret: String, writing: Bool, _ body: (ServerKey, GuestMode) throws -> T
    ) throws -> T? {
        guard secret.hasPrefix(Self.serverKeyPrefix) else { return nil }
        let hash = ServerSecret.hash(secret)
        var writes: TransactionScope.Writes = writing ? .direct : .refused
        var durable = false
        while true {
            let misses = TransactionScope.Misses()
            let scope = (writes: writes, durable: durable)
            func attempt(_ transaction: any StoreTransaction) throws -> T? {
                // A backend may run the transaction again from the start: so is what it saw.
                misses.clear()
                guard let key = try transaction.serverKey(secretHash: hash), key.revokedAt == nil else { return nil }
                let engine = over(
                    TransactionScope(
                        base: store, transaction: transaction, isDurable: scope.durable, writes: scope.writes,
                        misses: misses))
                let value = try body(key, engine)
                // The answer caught what its transaction could not give: everything again, as it needs.
                if let retry = misses.retry { throw retry }
                return value
            }
            do {
                if writes == .refused { return try store.read { try attempt($0) } }
                return try store.write(durable: durable) { try attempt($0) }
            } catch is TransactionScope.NeedsSavepoints where writes == .direct {
                writes = .savepoints
            } catch {
                if misses.write && writes == .refused {
                    writes = .direct
                } else if misses.durable && !durable {
                    durable = true
                } else {
                    throw error
                }
            }
        }
    }

    static func requireValidKeyName(_ name: String) throws {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard allowed, (1...64).contains(name.utf8.count) else {
            throw GuestModeError(
                .invalidKeyName, "the key name '\(name)' must be 1 to 64 letters, digits, '-', '_' or '.'")
        }
    }
}
