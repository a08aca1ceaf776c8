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
        let (store, profile, connections) = try racing.stores(profile: "voice")
        let results = racing.race { index in
            try GuestMode(profile: profile, store: connections[index]).createOrFindGuest(device: "phone", now: day(1))
        }
        let outcomes = try results.map { try $0.get() }
        #expect(outcomes.filter(\.isNew).count == 1)
        #expect(Set(outcomes.map(\.user.id)).count == 1)
        #expect(try GuestMode(profile: profile, store: store).users(matching: UserFilter(), now: day(1)).count == 1)
    }
}
