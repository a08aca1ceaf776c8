import Foundation
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
        #expect(try engine.revokeServerKey(named: "backend", now: day(3)).revokedAt == day(2), "revoking twice changes nothing")
        #expect(try engine.serverKey(authenticating: issued.secret) == nil)
        #expect(try engine.serverKeys() == [revoked])
        expectFailure(.notFound, code: .serverKeyNotFound) { _ = try engine.revokeServerKey(named: "nope", now: day(2)) }
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
        expectFailure(.conflict, code: .refreshTokenReused) { _ = try engine.refreshSession(first.refreshToken, now: day(3)) }
        expectFailure(.conflict, code: .refreshTokenReused) { _ = try engine.refreshSession(second.refreshToken, now: day(3)) }
        #expect(try engine.refreshSession(other.refreshToken, now: day(3)).user.id == "u1", "another sign-in is its own family")
        expectFailure(.notFound, code: .refreshTokenInvalid) { _ = try engine.refreshSession("gmr_00", now: day(3)) }
        expectFailure(.notFound, code: .refreshTokenInvalid) { _ = try engine.refreshSession("anything", now: day(3)) }
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.startSession(for: "nobody", now: day(3)) }
    }

    @Test(arguments: StoreBackend.allCases)
    func deletingAUserEndsItsSessions(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let session = try engine.startSession(for: "u2", now: day(1))
        try engine.deleteUser("u2")
        expectFailure(.notFound, code: .refreshTokenInvalid) { _ = try engine.refreshSession(session.refreshToken, now: day(2)) }
    }

    @Test(arguments: StoreBackend.allCases)
    func theFirstAnswerToAKeyStands(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let request = Array("POST /v1/users/u1/events\n{}".utf8)
        #expect(try engine.keptResponse(principal: "user:u1", key: "k", request: request) == nil)
        let kept = try engine.keepResponse(
            principal: "user:u1", key: "k", request: request, status: 200, body: "first", now: day(1))
        #expect(kept.body == "first")
        let raced = try engine.keepResponse(
            principal: "user:u1", key: "k", request: request, status: 200, body: "second", now: day(1))
        #expect(raced.body == "first", "a concurrent answer to the same key gives way to the one kept")
        #expect(try engine.keptResponse(principal: "user:u1", key: "k", request: request)?.body == "first")
        #expect(try engine.keptResponse(principal: "user:u2", key: "k", request: request) == nil, "keys are per caller")
        expectFailure(.conflict, code: .idempotencyKeyReused) {
            _ = try engine.keptResponse(principal: "user:u1", key: "k", request: Array("other".utf8))
        }
        expectFailure(.conflict, code: .idempotencyKeyReused) {
            _ = try engine.keepResponse(
                principal: "user:u1", key: "k", request: Array("other".utf8), status: 200, body: "x", now: day(1))
        }
    }
}
