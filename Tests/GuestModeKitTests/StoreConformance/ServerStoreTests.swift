import Foundation
import Synchronization
import Testing

@testable import GuestModeKit

/// What the server keeps, decided by the engine over each backend's rows:
/// server keys, refresh-token rotation and the answers kept for idempotency keys.
@Suite("Server conformance")
struct ServerStoreTests {
    private func engine(_ backend: StoreBackend) throws -> GuestMode {
        let (store, profile) = try backend.makeStore(profile: "voice")
        try makeGuests(["u1", "u2"], in: store, profile: profile)
        return GuestMode(profile: profile, store: store)
    }

    @Test(arguments: StoreBackend.allCases)
    func aServerKeyAuthenticatesUntilRevoked(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let issued = try engine.createServerKey(named: "backend", scope: .userData, now: day(1))
        #expect(issued.secret.hasPrefix("gmk_"))
        #expect(try engine.serverKey(authenticating: issued.secret) == issued.key)
        #expect(try engine.serverKey(authenticating: issued.secret + "0") == nil)
        #expect(try engine.serverKey(authenticating: "backend") == nil)
        expectFailure(.conflict, code: .serverKeyExists) {
            _ = try engine.createServerKey(named: "backend", scope: .admin, now: day(1))
        }
        expectFailure(.usage, code: .invalidKeyName) {
            _ = try engine.createServerKey(named: "two words", scope: .admin, now: day(1))
        }
        let revoked = try engine.revokeServerKey(named: "backend", now: day(2))
        #expect(revoked.revokedAt == day(2))
        #expect(
            try engine.revokeServerKey(named: "backend", now: day(3)).revokedAt == day(2),
            "revoking twice changes nothing")
        #expect(try engine.serverKey(authenticating: issued.secret) == nil)
        #expect(try engine.serverKeys() == [revoked])
        expectFailure(.notFound, code: .serverKeyNotFound) {
            _ = try engine.revokeServerKey(named: "nope", now: day(2))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func signingKeysRotateAndRetire(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let seal = SigningKeySeal(id: "deployment-a", bytes: Array(repeating: 1, count: 32))
        #expect(try engine.signingKeys().isEmpty)
        #expect(try engine.signingKeyRing(seal: seal) == nil, "no key until serve or rotate makes one")
        let (first, created) = try engine.ensureSigningKey(seal: seal, now: day(1))
        #expect(created && first.state == .current && first.algorithm == "ES256" && first.kid.count == 16)
        #expect(try engine.ensureSigningKey(seal: seal, now: day(2)) == (first, false), "one is enough")
        // The same clock reading for both: the order they were made in decides which is current.
        let second = try engine.rotateSigningKey(seal: seal, now: day(1))
        #expect(second.kid != first.kid && second.state == .current)
        #expect(try engine.signingKeys().map(\.state) == [.rotated, .current])
        let ring = try #require(try engine.signingKeyRing(seal: seal))
        #expect(ring.current == second && Set(ring.verifiers.keys) == [first.kid, second.kid])
        #expect(ring.published.map(\.kid) == [first.kid, second.kid])
        #expect(ring.signer.publicKey.x963Representation == ring.verifiers[second.kid]?.x963Representation)

        expectFailure(.conflict, code: .signingKeyInUse) {
            _ = try engine.retireSigningKey(kid: second.kid, now: day(2))
        }
        expectFailure(.notFound, code: .signingKeyNotFound) {
            _ = try engine.retireSigningKey(kid: "nope", now: day(2))
        }
        let retired = try engine.retireSigningKey(kid: first.kid, now: day(2))
        #expect(retired.state == .retired && retired.retiredAt == day(2))
        #expect(
            try engine.retireSigningKey(kid: first.kid, now: day(3)).retiredAt == day(2),
            "retiring twice changes nothing")
        let after = try #require(try engine.signingKeyRing(seal: seal))
        #expect(Array(after.verifiers.keys) == [second.kid] && after.published.map(\.kid) == [second.kid])

        // Another deployment key opens nothing, and may not add a key the servers could not open.
        let other = SigningKeySeal(id: "deployment-b", bytes: Array(repeating: 2, count: 32))
        expectFailure(.badData, code: .signingKeySealedElsewhere) { _ = try engine.signingKeyRing(seal: other) }
        expectFailure(.badData, code: .signingKeySealedElsewhere) {
            _ = try engine.rotateSigningKey(seal: other, now: day(3))
        }
        let sameName = SigningKeySeal(id: "deployment-a", bytes: Array(repeating: 3, count: 32))
        expectFailure(.badData, code: .signingKeySealedElsewhere) { _ = try engine.signingKeyRing(seal: sameName) }
        #expect(try engine.signingKeys().count == 2)
    }

    /// A kid is an argument of 'signing-key retire'; one starting with '-' read as an option there
    /// (one key in 64 would, and a CI run met one). 400 keys would meet one almost surely.
    @Test func noSigningKeyIdStartsWithADash() throws {
        let engine = try engine(.sqlite)
        let seal = SigningKeySeal(id: "deployment-a", bytes: Array(repeating: 1, count: 32))
        var kids: Set<String> = []
        for _ in 0..<400 { kids.insert(try engine.rotateSigningKey(seal: seal, now: day(1)).kid) }
        #expect(kids.count == 400)
        #expect(kids.filter { $0.hasPrefix("-") }.isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func serversStartingTogetherMakeOneSigningKey(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let seal = SigningKeySeal(id: "deployment-a", bytes: Array(repeating: 1, count: 32))
        let made = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            if let (key, _) = try? engine.ensureSigningKey(seal: seal, now: day(1)) {
                made.withLock { $0.append(key.kid) }
            }
        }
        #expect(try engine.signingKeys().count == 1)
        #expect(Set(made.withLock { $0 }).count == 1 && made.withLock { $0.count } == 8)
    }

    @Test(arguments: StoreBackend.allCases)
    func signInBucketsLiveInTheStore(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let limit = SignInLimit(perHour: 3, burst: 3)
        for _ in 0..<3 { #expect(try engine.takeSignIn(from: "192.0.2.1", limit: limit, now: day(1)) == nil) }
        #expect(
            try engine.takeSignIn(from: "192.0.2.1", limit: limit, now: day(1)) == 1200, "3 an hour: one every 20 min")
        #expect(try engine.takeSignIn(from: "192.0.2.2", limit: limit, now: day(1)) == nil, "each address has its own")
        let later = day(1).addingTimeInterval(1200)
        #expect(try engine.takeSignIn(from: "192.0.2.1", limit: limit, now: later) == nil)
        #expect(try engine.takeSignIn(from: "192.0.2.1", limit: limit, now: later) == 1200)
        let stored = try engine.store.read { try $0.signInBucket(address: "192.0.2.2") }
        #expect(stored == SignInBucket(tokens: 2, updatedAt: day(1)))
        #expect(try engine.store.read { try $0.signInBucket(address: "192.0.2.1") }?.updatedAt == later)
        // A new address an hour after the last sign-in from 192.0.2.2 clears its bucket, refilled by now;
        // 192.0.2.1's, touched 20 min later, is not full yet and stays.
        let hourLater = day(1).addingTimeInterval(3600 + 1)
        #expect(try engine.takeSignIn(from: "192.0.2.3", limit: limit, now: hourLater) == nil)
        #expect(try engine.store.read { try $0.signInBucket(address: "192.0.2.2") } == nil)
        #expect(try engine.store.read { try $0.signInBucket(address: "192.0.2.1") } != nil)
        #expect(
            try engine.takeSignIn(from: "192.0.2.2", limit: limit, now: hourLater) == nil, "a forgotten bucket is full")
        let unlimited = SignInLimit(perHour: 0, burst: 0)
        #expect(try engine.takeSignIn(from: "192.0.2.9", limit: unlimited, now: day(1)) == nil)
        #expect(try engine.store.read { try $0.signInBucket(address: "192.0.2.9") } == nil, "no limit writes nothing")
        expectFailure(.badData, code: .nulInText) {
            _ = try engine.takeSignIn(from: "a\u{0}b", limit: limit, now: day(1))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func concurrentSignInsFromANewAddressTakeExactlyTheBurst(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let limit = SignInLimit(perHour: 30, burst: 30)
        let admitted = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 48) { _ in
            if (try? engine.takeSignIn(from: "198.51.100.7", limit: limit, now: day(1))) == .some(nil) {
                admitted.withLock { $0 += 1 }
            }
        }
        #expect(admitted.withLock { $0 } == 30)
        #expect(try engine.store.read { try $0.signInBucket(address: "198.51.100.7") }?.tokens == 0)
    }

    @Test func anAdminKeyCoversUserData() {
        #expect(ServerScope.admin.covers(.userData))
        #expect(ServerScope.admin.covers(.admin))
        #expect(ServerScope.userData.covers(.userData))
        #expect(!ServerScope.userData.covers(.admin))
    }

    @Test(arguments: StoreBackend.allCases)
    func aRefreshTokenRotatesAndItsReuseRevokesTheFamily(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let first = try engine.startSession(for: "u1", now: day(1))
        #expect(first.user.id == "u1")
        let second = try engine.refreshSession(first.refreshToken, now: day(2))
        #expect(second.refreshToken != first.refreshToken)
        #expect(second.user.id == "u1")
        let other = try engine.startSession(for: "u1", now: day(2))
        expectFailure(.conflict, code: .refreshTokenReused) {
            _ = try engine.refreshSession(first.refreshToken, now: day(3))
        }
        expectFailure(.conflict, code: .refreshTokenReused) {
            _ = try engine.refreshSession(second.refreshToken, now: day(3))
        }
        #expect(
            try engine.refreshSession(other.refreshToken, now: day(3)).user.id == "u1",
            "another sign-in is its own family")
        expectFailure(.notFound, code: .refreshTokenInvalid) { _ = try engine.refreshSession("gmr_00", now: day(3)) }
        expectFailure(.notFound, code: .refreshTokenInvalid) { _ = try engine.refreshSession("anything", now: day(3)) }
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.startSession(for: "nobody", now: day(3)) }
    }

    @Test(arguments: StoreBackend.allCases)
    func deletingAUserEndsItsSessions(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let session = try engine.startSession(for: "u2", now: day(1))
        try engine.deleteUser("u2", now: day(2))
        expectFailure(.notFound, code: .refreshTokenInvalid) {
            _ = try engine.refreshSession(session.refreshToken, now: day(2))
        }
    }

    private let request = IdempotentRequest(
        principal: "user:u1", key: "k", fingerprint: Array("POST /v1/users/u1/events\n{}".utf8))

    private func opened(_ engine: GuestMode) throws -> Int {
        try engine.counters(user: "u1")["command_spoken"] ?? 0
    }

    private func trackOpen(_ engine: GuestMode) throws -> KeptAnswer {
        let result = try engine.track(
            TrackedEvent(user: "u1", action: "command_spoken", at: day(1), count: 1, idempotencyKey: nil), now: day(1))
        return KeptAnswer(status: 200, body: "total \(result.total)")
    }

    @Test(arguments: StoreBackend.allCases)
    func theFirstAnswerToAKeyIsKeptWithItsChangeAndReplayed(backend: StoreBackend) throws {
        let engine = try engine(backend)
        var runs = 0
        let answer = { (request: IdempotentRequest) in
            try engine.answerOnce(request, now: day(1)) { scoped in
                runs += 1
                return try trackOpen(scoped)
            } keeping: { _ in
                nil
            }
        }
        let first = try answer(request)
        #expect(first.answer == KeptAnswer(status: 200, body: "total 1") && !first.replayed)
        let again = try answer(request)
        #expect(again.answer == first.answer && again.replayed)
        let afterReplay = try opened(engine)
        #expect(runs == 1 && afterReplay == 1, "a replay does nothing")
        var other = request
        other.principal = "user:u2"
        #expect(try !answer(other).replayed, "keys are per caller")
        other = request
        other.fingerprint = Array("POST /v1/users/u1/events\n{\"count\":2}".utf8)
        expectFailure(.conflict, code: .idempotencyKeyReused) { _ = try answer(other) }
        let afterOther = try opened(engine)
        #expect(runs == 2 && afterOther == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func aCrashBeforeTheAnswerIsKeptUndoesTheChange(backend: StoreBackend) throws {
        struct Crash: Error {}
        let engine = try engine(backend)
        #expect(throws: Crash.self) {
            try engine.answerOnce(request, now: day(1)) { scoped in
                _ = try trackOpen(scoped)
                throw Crash()
            } keeping: { _ in
                KeptAnswer(status: 400, body: "kept")
            }
        }
        #expect(try opened(engine) == 0, "no change without its kept answer")
        #expect(try engine.store.read { try $0.keptResponse(principal: "user:u1", key: "k") } == nil)
        let retried = try engine.answerOnce(request, now: day(1)) {
            try trackOpen($0)
        } keeping: { _ in
            nil
        }
        #expect(retried.answer.body == "total 1" && !retried.replayed)
        let kept = try engine.store.read { try $0.keptResponse(principal: "user:u1", key: "k") }
        #expect(kept?.status == 200 && kept?.body == "total 1", "the kept answer is the one given")
    }

    @Test(arguments: StoreBackend.allCases)
    func aKeptFailureUndoesOnlyTheFailedCall(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let refused = try engine.answerOnce(request, now: day(1)) { scoped in
            _ = try trackOpen(scoped)
            return try scoped.store.write { transaction in
                try transaction.addToCounter(user: "u1", action: "command_spoken", count: 5)
                throw GuestModeError(.usage, "refused")
            }
        } keeping: { error in
            KeptAnswer(status: 409, body: error.message)
        }
        #expect(refused.answer == KeptAnswer(status: 409, body: "refused") && !refused.replayed)
        #expect(try opened(engine) == 1, "the call that succeeded stays, the refused one left nothing")
        let again = try engine.answerOnce(request, now: day(2)) {
            try trackOpen($0)
        } keeping: { _ in
            nil
        }
        #expect(again.answer == refused.answer && again.replayed)

        var next = request
        next.key = "k2"
        expectFailure(.tryAgainLater, code: .storeBusy) {
            _ = try engine.answerOnce(next, now: day(1)) { scoped in
                _ = try trackOpen(scoped)
                throw GuestModeError(.storeBusy, "busy")
            } keeping: { _ in
                nil
            }
        }
        #expect(try opened(engine) == 1, "a failure not kept undoes everything the answer did")
    }

    @Test(arguments: StoreBackend.allCases)
    func aDurableWriteInsideAnAnswerMakesTheWholeAnswerDurable(backend: StoreBackend) throws {
        let engine = try engine(backend)
        var runs = 0
        let given = try engine.answerOnce(request, now: day(1)) { scoped in
            runs += 1
            _ = try trackOpen(scoped)
            try scoped.store.write(durable: true) { transaction in
                try transaction.addToCounter(user: "u1", action: "command_spoken", count: 1)
            }
            return KeptAnswer(status: 200, body: "ok")
        } keeping: { _ in
            nil
        }
        let total = try opened(engine)
        #expect(given.answer.body == "ok" && runs == 2 && total == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func aUsersSessionsAreListedAndRevokedOneOrAll(backend: StoreBackend) throws {
        let engine = try engine(backend)
        #expect(try engine.sessions(of: "u1").isEmpty)
        let phone = try engine.startSession(for: "u1", now: day(1))
        let refreshed = try engine.refreshSession(phone.refreshToken, now: day(2))
        let latest = try engine.refreshSession(refreshed.refreshToken, now: day(3))
        let tablet = try engine.startSession(for: "u1", now: day(4))
        _ = try engine.startSession(for: "u2", now: day(4))
        let listed = try engine.sessions(of: "u1")
        #expect(listed.count == 2 && listed.allSatisfy { $0.userID == "u1" && $0.revokedAt == nil })
        #expect(listed.map(\.createdAt) == [day(1), day(4)], "oldest first")
        #expect(listed.map(\.lastUsedAt) == [day(3), nil] && listed.map(\.refreshes) == [2, 0])
        #expect(
            !listed.contains { $0.id.contains(phone.refreshToken) || phone.refreshToken.contains($0.id) },
            "no token")

        #expect(try engine.revokeSession(family: listed[1].id, user: "u1", now: day(5)) == 1)
        #expect(try engine.revokeSession(family: listed[1].id, user: "u1", now: day(6)) == 0, "revoked already")
        expectFailure(.conflict, code: .refreshTokenReused) {
            _ = try engine.refreshSession(tablet.refreshToken, now: day(6))
        }
        expectFailure(.notFound, code: .sessionNotFound) {
            _ = try engine.revokeSession(family: listed[0].id, user: "u2", now: day(6))
        }
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.sessions(of: "nobody") }
        #expect(try engine.sessions(of: "u1").map(\.revokedAt) == [nil, day(5)])
        #expect(
            try engine.refreshSession(latest.refreshToken, now: day(6)).user.id == "u1", "the other session lives on")
    }
}
