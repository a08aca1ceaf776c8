import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite struct MergeResolutionPolicyTests {
    let older = RecordVersion(data: #"{"v":"old"}"#, updatedAt: day(1))
    let newer = RecordVersion(data: #"{"v":"new"}"#, updatedAt: day(2))

    @Test("keep-guest and keep-account ignore times and collection rules", arguments: MergeConflictRule.allCases)
    func fixedPolicies(rule: MergeConflictRule) {
        #expect(MergePolicy.keepGuest.resolution(guest: older, account: newer, rule: rule) == .keptGuest)
        #expect(MergePolicy.keepAccount.resolution(guest: newer, account: older, rule: rule) == .keptAccount)
    }

    @Test func unionKeepsBothWhereTheCollectionAllows() {
        #expect(MergePolicy.union.resolution(guest: newer, account: older, rule: .keepBoth) == .keptBoth)
        #expect(MergePolicy.union.resolution(guest: older, account: newer, rule: .keepBoth) == .keptBoth)
    }

    @Test func unionElseNewestWinsAndATieGoesToTheAccount() {
        #expect(MergePolicy.union.resolution(guest: newer, account: older, rule: .newestWins) == .keptGuest)
        #expect(MergePolicy.union.resolution(guest: older, account: newer, rule: .newestWins) == .keptAccount)
        #expect(MergePolicy.union.resolution(guest: older, account: older, rule: .newestWins) == .keptAccount)
    }

    @Test func survivorsAndArchive() {
        #expect(RecordConflict.Resolution.keptGuest.survivingSides == [.guest])
        #expect(RecordConflict.Resolution.keptGuest.archivedSide == .account)
        #expect(RecordConflict.Resolution.keptAccount.survivingSides == [.account])
        #expect(RecordConflict.Resolution.keptAccount.archivedSide == .guest)
        #expect(RecordConflict.Resolution.keptBoth.survivingSides == [.account, .guest])
        #expect(RecordConflict.Resolution.keptBoth.archivedSide == nil)
    }

    @Test("a settled conflict carries the loser's data, or the guest's new key when both stay")
    func settling() {
        let guest = RecordVersion(data: "G", updatedAt: day(2))
        let account = RecordVersion(data: "A", updatedAt: day(1))
        var askedForKey = false
        let keepGuest = RecordConflict.settling(
            collection: "c", key: "k", guest: guest, account: account, policy: .keepGuest, rule: .keepBoth,
            freeKey: {
                askedForKey = true; return "unused"
            })
        #expect(keepGuest.archivedData == "A" && keepGuest.guestKeyAfter == nil && !askedForKey)
        #expect(keepGuest.guestUpdatedAt == day(2) && keepGuest.accountUpdatedAt == day(1))
        let keepAccount = RecordConflict.settling(
            collection: "c", key: "k", guest: guest, account: account, policy: .keepAccount, rule: .newestWins,
            freeKey: { "unused" })
        #expect(keepAccount.resolution == .keptAccount && keepAccount.archivedData == "G")
        let both = RecordConflict.settling(
            collection: "c", key: "k", guest: guest, account: account, policy: .union, rule: .keepBoth,
            freeKey: { "k~guest" })
        #expect(both.resolution == .keptBoth && both.guestKeyAfter == "k~guest" && both.archivedData == nil)
    }

    @Test func keptBothKeysAreTriedInOrder() {
        #expect(
            Array(RecordConflict.keptBothKeys(for: "pasta").prefix(3)) == [
                "pasta~guest", "pasta~guest2", "pasta~guest3",
            ])
    }

    @Test("only a guest moves, and never into itself")
    func whoCanMove() throws {
        let now = day(1)
        let guest = User(
            id: "g", device: nil, state: .anonymous, promptState: "active", createdAt: now, lastSeenAt: now,
            linkedAt: nil)
        var account = guest
        account.id = "a"
        account.state = .linked
        try guest.checkCanMove(into: account)
        #expect { try guest.checkCanMove(into: guest) } throws: { ($0 as? GuestModeError)?.code == .sameUser }
        #expect { try account.checkCanMove(into: guest) } throws: { ($0 as? GuestModeError)?.code == .notAGuest }
    }
}

@Suite struct AdoptPolicyTests {
    @Test("keys of collections with unique fields get the user as owner segment; others stay")
    func adoptedKeys() throws {
        let habits = try ProfileLoader.parse(try template("habits"), file: "habits.yaml")
        #expect(habits.guestOwner == "")
        #expect(habits.adoptedKey("/h1/2026-10-01", collection: "completions", user: "u1") == "u1/h1/2026-10-01")
        #expect(habits.adoptedKey("/2026-10-01", collection: "awards", user: "u1") == "u1/2026-10-01")
        #expect(habits.adoptedKey("h1", collection: "habits", user: "u1") == "h1", "no unique fields: key kept")
        #expect(
            habits.adoptedKey("h1/x", collection: "completions", user: "u1") == "h1/x", "not owned by the guest owner")
        #expect(habits.adoptedKey("/x", collection: "unknown", user: "u1") == "/x")
    }

    @Test func aNamedGuestOwnerIsRewrittenToo() throws {
        var habits = try ProfileLoader.parse(try template("habits"), file: "habits.yaml")
        habits.guestOwner = "anon"
        #expect(habits.adoptedKey("anon/h1/d", collection: "completions", user: "u1") == "u1/h1/d")
        #expect(habits.adoptedKey("/h1/d", collection: "completions", user: "u1") == "/h1/d")
    }
}
