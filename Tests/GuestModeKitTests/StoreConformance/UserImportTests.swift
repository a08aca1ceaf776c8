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

    /// A Firebase export of `accounts` (id, Google subject or nil), one account a line after the first.
    private func export(_ accounts: [(id: String, google: String?)]) throws -> URL {
        let lines = accounts.map { id, google in
            let identity = google.map { #","providerUserInfo":[{"providerId":"google.com","rawId":"\#($0)"}]"# } ?? ""
            return #"{"localId":"\#(id)","createdAt":"1000"\#(identity)}"#
        }
        return try exportFile("{\"users\": [\n" + lines.joined(separator: ",\n") + "\n]}\n")
    }

    /// An account may list thousands of identities: the refusal names each provider once, with its count.
    @Test func tooManyIdentitiesAreCountedByProviderNotListed() throws {
        let engine = try engine(.sqlite)
        let identities =
            (0..<2_000).map { #"{"providerId":"google.com","rawId":"g\#($0)"}"# }
            + [#"{"providerId":"apple.com","rawId":"a1"}"#]
        let file = try exportFile(
            "{\"users\": [\n" + #"{"localId":"many","createdAt":"1000","providerUserInfo":["#
                + identities.joined(separator: ",") + "]}\n]}\n")
        do {
            _ = try engine.importUsers(from: file, label: "users.json", format: .firebase, now: now)
            Issue.record("imported an account with 2,001 identities")
        } catch let error as GuestModeError {
            #expect(error.code == .invalidImportFile)
            #expect(
                error.message
                    == "users.json:2: account 'many' has 2001 identities (2000 google, apple); this profile allows 1 per user (identity.max_providers_per_user); nothing was imported",
                "\(error.message)")
        }
    }

    /// Accounts are read and written a chunk at a time; an account sees every account before it in the file as
    /// if each were stored on its own: in its chunk, in the chunk before, or in the store.
    @Test(arguments: StoreBackend.allCases)
    func anAccountSeesTheAccountsBeforeItInTheFile(backend: StoreBackend) throws {
        let engine = try engine(backend)
        var accounts: [(id: String, google: String?)] = (0..<1_200).map { ("u\($0)", $0 % 3 == 0 ? "g\($0)" : nil) }
        accounts.insert(("u1", nil), at: 2)  // the same account again at once: unchanged
        accounts.insert(("u3", "g3"), at: 1_150)  // and a chunk later
        accounts.insert(("late", "g6"), at: 1_160)  // u6's identity, a chunk later
        accounts.insert(("twin", "g1197"), at: accounts.count)  // u1197's, in the same chunk
        accounts.insert(("u4", "g-other"), at: 10)  // u4 again, with other data
        var named: [String] = []
        do {
            _ = try engine.importUsers(
                from: try export(accounts), label: "users.json", format: .firebase, now: now,
                problem: { named.append($0) })
            Issue.record("imported over three conflicts")
        } catch let error as GuestModeError {
            #expect(error.code == .importConflict)
            #expect(
                error.message.hasPrefix(
                    "users.json:12: user 'u4' is already in the store with other data (anonymous, no identity)"),
                "\(error.message)")
            #expect(error.message.hasSuffix("(and 2 more); nothing was imported"), "\(error.message)")
        }
        #expect(
            named == [
                "users.json:1163: the google identity of account 'late' already belongs to user 'u6'",
                "users.json:1206: the google identity of account 'twin' already belongs to user 'u1197'",
            ])
        #expect(try engine.users(matching: UserFilter(state: nil, inactive: nil), now: now).isEmpty)

        let kept = accounts.filter { !["late", "twin"].contains($0.id) && !($0.id == "u4" && $0.google != nil) }
        let report = try engine.importUsers(from: try export(kept), format: .firebase, now: now)
        #expect(report.accounts == 1_202 && report.usersCreated == 1_200 && report.unchanged == 2)
        #expect(report.linked == 400 && report.identities == 400 && report.anonymous == 800)
        #expect(try engine.users(matching: UserFilter(state: nil, inactive: nil), now: now).count == 1_200)
        #expect(try engine.details(user: "u999", now: now).identities.map(\.subject) == ["g999"])
        let again = try engine.importUsers(from: try export(kept), format: .firebase, now: now)
        #expect(again.usersCreated == 0 && again.unchanged == 1_202)
    }

    /// The many-row questions and inserts an import asks of a chunk answer as their one-row forms do, with
    /// texts that need quoting in an array and a missing device, email and link time as nothing.
    @Test(arguments: StoreBackend.allCases)
    func theManyRowFormsAnswerAsTheOneRowForms(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let odd = #"a "quoted", {braced} \ NULL"#
        let users = [
            User(
                id: odd, device: nil, state: .anonymous, promptState: "anonymous", createdAt: now, lastSeenAt: now,
                linkedAt: nil),
            User(
                id: "NULL", device: "d,1", state: .linked, promptState: "authenticated", createdAt: now,
                lastSeenAt: now, linkedAt: now),
        ]
        let google = Identity(provider: "google", subject: odd, email: nil, linkedAt: now)
        let apple = Identity(provider: "apple", subject: "NULL", email: "a@example.com", linkedAt: now)
        let taken = try engine.store.write { transaction in
            try transaction.insertUsers(users)
            _ = try transaction.insertIdentity(apple, of: "NULL")
            return try transaction.insertIdentities([(google, "NULL"), (apple, odd)])
        }
        #expect(taken == [apple.key], "an identity already bound is not bound again")
        try engine.store.write { transaction in
            let found = try transaction.users([odd, "NULL", "nobody", odd], locking: true)
            #expect(found == [odd: users[0], "NULL": users[1]])
            #expect(try transaction.users([], locking: false).isEmpty)
            #expect(
                try transaction.identityOwners([google.key, apple.key, IdentityKey(provider: "apple", subject: odd)])
                    == [google.key: "NULL", apple.key: "NULL"])
            let held = try transaction.identities(ofUsers: [odd, "NULL", "nobody"])
            #expect(held.keys.sorted() == ["NULL"])
            #expect(held["NULL"] == (try transaction.identities(of: "NULL")))
        }
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
