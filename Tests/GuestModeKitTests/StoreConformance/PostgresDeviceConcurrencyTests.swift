import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// `guest new --device` from many connections at once creates one user.
@Suite struct PostgresDeviceConcurrencyTests {
    @Test func eightCreationsForOneDeviceCreateOneUser() throws {
        let racing = PostgresUsersConcurrencyTests()
        let (store, _, connections) = try racing.stores(profile: "voice")
        let results = racing.race { index in
            try connections[index].createUserUnlessDeviceKnown(newUser(device: "phone"), credentials: nil)
        }
        let outcomes = try results.map { try $0.get() }
        #expect(outcomes.filter(\.created).count == 1)
        #expect(Set(outcomes.map(\.user.id)).count == 1)
        #expect(try store.users(state: nil, lastSeenBefore: nil).count == 1)
    }
}
