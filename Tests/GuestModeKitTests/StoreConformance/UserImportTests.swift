import Foundation
import Testing

@testable import GuestModeKit

/// The export firebase-tools writes (`Fixtures/firebase/auth-export.json`):
/// an anonymous account, an Apple and a Google account, an email and
/// password account and a phone account, each pretty-printed as
/// `JSON.stringify(account, null, 2)` does, as `auth:export` writes them.
private func firebaseExport() throws -> URL {
    try #require(
        Bundle.module.url(
            forResource: "auth-export", withExtension: "json", subdirectory: "Fixtures/firebase"))
}

/// A scratch file holding `text`.
private func exportFile(_ text: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID().uuidString).json")
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url
}

private let now = Timestamp.parse("2026-11-20T00:00:00Z")!

@Suite struct FirebaseExportReaderTests {
    private func accounts(in url: URL) throws -> [ImportedAccount] {
        var accounts: [ImportedAccount] = []
        try FirebaseExportReader(url: url, label: "export.json").forEachAccount { line, object in
            accounts.append(try ImportedAccount(firebase: object, line: line))
        }
        return accounts
    }

    @Test func readsEveryAccountOfAnAuthExportWithTheLineItStartsOn() throws {
        let accounts = try accounts(in: try firebaseExport())
        #expect(accounts.map(\.line) == [2, 7, 24, 42, 52])
        #expect(accounts.map(\.id).first == "QmFub255bW91czEyMzQ1Njc4OTAx")
        #expect(accounts[0].identities.isEmpty, "no provider, email or phone: anonymous")
        #expect(accounts[0].createdAt == Timestamp.parse("2025-10-30T12:00:00Z"))
        #expect(accounts[0].lastSeenAt == Timestamp.parse("2025-10-31T12:00:00Z"))
        #expect(
            accounts[1].identities.map { "\($0.provider) \($0.subject) \($0.email ?? "")" } == [
                "apple 001234.5d9c0a1b2c3d.0912 ana@privaterelay.appleid.com"
            ])
        #expect(
            accounts[2].identities.map(\.provider) == ["google"], "a Google account's email is not a second identity")
        #expect(accounts[3].identities.map { "\($0.provider) \($0.subject)" } == ["email cy@example.com"])
        #expect(accounts[3].hasPasswordHash && !accounts[2].hasPasswordHash)
        #expect(accounts[4].identities.map { "\($0.provider) \($0.subject)" } == ["phone +15555550123"])
    }

    @Test func acceptsAnEmptyExportAndNumbersForTimes() throws {
        #expect(try accounts(in: try exportFile("{\"users\": [\n]}")).isEmpty)
        let numeric = try accounts(in: try exportFile(#"{"users":[{"localId":"a","createdAt":1761825600000}]}"#))
        #expect(numeric.map(\.createdAt) == [Timestamp.parse("2025-10-30T12:00:00Z")])
        #expect(numeric.map(\.lastSeenAt) == numeric.map(\.createdAt), "no lastSignedInAt: last seen when created")
    }

    @Test(arguments: [
        ("", "ends before"),
        ("[]", "does not start with '{'"),
        ("{\"accounts\": []}", "unexpected key 'accounts'"),
        ("{\"users\": {}}", "is not an array"),
        ("{\"users\": [1]}", "not a JSON object"),
        ("{\"users\": [{\"localId\": \"a\", \"createdAt\": \"1\"}", "ends before"),
        ("{\"users\": []} x", "text after the end"),
        ("{\"users\": [{\"localId\": \"a\", \"createdAt\": \"1\"}]}\n{", "text after the end"),
    ])
    func refusesAFileThatIsNotAnExport(text: String, reason: String) throws {
        do {
            _ = try accounts(in: try exportFile(text))
            Issue.record("accepted \(text.debugDescription)")
        } catch let error as GuestModeError {
            #expect(error.code == .invalidImportFile)
            #expect(error.message.contains(reason), "\(error.message)")
            #expect(error.message.hasPrefix("export.json:"), "\(error.message)")
        }
    }

    @Test(arguments: [
        (#"{"createdAt":"1"}"#, "no 'localId'"),
        (#"{"localId":"a"}"#, "no 'createdAt'"),
        (#"{"localId":"a","createdAt":"yesterday"}"#, "not a number of milliseconds"),
        (#"{"localId":"a","createdAt":"-5"}"#, "not a number of milliseconds"),
        (#"{"localId":"a","createdAt":"1","providerUserInfo":[{"providerId":"oidc.corp","rawId":"x"}]}"#, "oidc.corp"),
        (#"{"localId":"a","createdAt":"1","providerUserInfo":[{"providerId":"google.com"}]}"#, "without 'rawId'"),
        (#"{"localId":7,"createdAt":"1"}"#, "'localId' is not a string"),
        (#"{"localId":"a","localId":"b","createdAt":"1"}"#, "not valid JSON"),
    ])
    func refusesAnAccountItCannotRead(account: String, reason: String) throws {
        do {
            _ = try accounts(in: try exportFile("{\"users\": [\(account)]}"))
            Issue.record("accepted \(account)")
        } catch let error as GuestModeError {
            #expect(error.code == .invalidImportFile)
            #expect(error.message.contains(reason), "\(error.message)")
        }
    }

    @Test func anAccountLongerThanTheLimitIsRefusedWithoutReadingItWhole() throws {
        let long = String(repeating: "x", count: FirebaseExportReader.maximumAccountLength)
        do {
            _ = try accounts(in: try exportFile("{\"users\": [\n{\"localId\": \"\(long)\"}]}"))
            Issue.record("accepted an account of more than a megabyte")
        } catch let error as GuestModeError {
            #expect(error.message.hasPrefix("export.json:2: the account is longer than"), "\(error.message)")
        }
    }
}

@Suite("user import on every backend")
struct UserImportTests {
    /// An engine whose profile accepts every provider of the fixture.
    private func engine(_ backend: StoreBackend) throws -> GuestMode {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        let text = try template("subscriptions").replacingOccurrences(
            of: "providers: [apple, google, email]", with: "providers: [apple, google, email, phone]")
        return GuestMode(profile: try ProfileLoader.parse(text, file: "subscriptions.yaml"), store: store)
    }

    @Test(arguments: StoreBackend.allCases)
    func importsAFirebaseExportKeepingIdsAndARerunChangesNothing(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let dryRun = try engine.importUsers(from: try firebaseExport(), format: .firebase, dryRun: true, now: now)
        #expect(dryRun.usersCreated == 5 && dryRun.isDryRun)
        #expect(
            try engine.users(matching: UserFilter(state: nil, inactive: nil), now: now).isEmpty,
            "a dry run writes nothing")

        let report = try engine.importUsers(from: try firebaseExport(), format: .firebase, now: now)
        #expect(report.accounts == 5 && report.usersCreated == 5 && report.unchanged == 0)
        #expect(report.anonymous == 1 && report.linked == 4 && report.identities == 4)
        #expect(report.passwordHashesSkipped == 1)

        let guest = try engine.details(user: "QmFub255bW91czEyMzQ1Njc4OTAx", now: now)
        #expect(guest.user.state == .anonymous && guest.identities.isEmpty && guest.tier == .guest)
        #expect(guest.user.createdAt == Timestamp.parse("2025-10-30T12:00:00Z"))
        let apple = try engine.details(user: "YXBwbGVVc2VyMTIzNDU2Nzg5MDEy", now: now)
        #expect(apple.user.state == .linked && apple.user.promptState == "authenticated")
        #expect(apple.identities.map(\.subject) == ["001234.5d9c0a1b2c3d.0912"])
        #expect(!apple.hasAnonymousCredentials)

        let again = try engine.importUsers(from: try firebaseExport(), format: .firebase, now: now)
        #expect(again.usersCreated == 0 && again.unchanged == 5)
    }

    @Test(arguments: StoreBackend.allCases)
    func aUserWithOtherDataOrATakenIdentityIsAConflictAndNothingIsImported(backend: StoreBackend) throws {
        let engine = try engine(backend)
        // The Apple account's id is already an anonymous guest here.
        try engine.store.write { transaction in
            try transaction.insertUser(
                User(
                    id: "YXBwbGVVc2VyMTIzNDU2Nzg5MDEy", device: nil, state: .anonymous, promptState: "anonymous",
                    createdAt: now, lastSeenAt: now, linkedAt: nil))
        }
        var named: [String] = []
        expectFailure(.conflict, code: .importConflict) {
            _ = try engine.importUsers(
                from: try firebaseExport(), label: "users.json", format: .firebase, now: now,
                problem: { named.append($0) })
        }
        #expect(named.isEmpty, "the only problem is the error itself")
        #expect(try engine.users(matching: UserFilter(state: nil, inactive: nil), now: now).count == 1)

        // The Google identity belongs to someone else.
        let other = try engine.createGuest(device: nil, now: now)
        _ = try engine.link(user: other.id, provider: "google", subject: "109876543210987654321", email: nil, now: now)
        do {
            _ = try engine.importUsers(
                from: try firebaseExport(), label: "users.json", format: .firebase, now: now,
                problem: { named.append($0) })
            Issue.record("imported over a conflict")
        } catch let error as GuestModeError {
            #expect(error.code == .importConflict)
            #expect(
                error.message.hasPrefix("users.json:7: user 'YXBwbGVVc2VyMTIzNDU2Nzg5MDEy' is already in the store"))
            #expect(error.message.hasSuffix("(and 1 more); nothing was imported"), "\(error.message)")
        }
        #expect(named.count == 1 && named[0].hasPrefix("users.json:24: the google identity"), "\(named)")
        #expect(try engine.users(matching: UserFilter(state: nil, inactive: nil), now: now).count == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func accountsTheProfileCannotHoldAreRefused(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        do {
            _ = try engine.importUsers(from: try firebaseExport(), label: "users.json", format: .firebase, now: now)
            Issue.record("imported a phone identity the profile does not accept")
        } catch let error as GuestModeError {
            #expect(error.code == .invalidImportFile)
            #expect(
                error.message.contains("users.json:52: account 'cGhvbmVVc2VyMTIzNDU2Nzg5MDEy' has a phone identity"))
        }
        let twoProviders = try exportFile(
            #"{"users": [{"localId":"a","createdAt":"1","email":"a@example.com","passwordHash":"aGFzaA==","providerUserInfo":[{"providerId":"google.com","rawId":"g"}]}]}"#
        )
        expectFailure(.badData, code: .invalidImportFile) {
            _ = try engine.importUsers(from: twoProviders, format: .firebase, now: now)
        }
        let future = try exportFile(#"{"users": [{"localId":"a","createdAt":"4102444800000"}]}"#)
        expectFailure(.badData, code: .invalidImportFile) {
            _ = try engine.importUsers(from: future, format: .firebase, now: now)
        }
        #expect(try engine.users(matching: UserFilter(state: nil, inactive: nil), now: now).isEmpty)
    }
}
