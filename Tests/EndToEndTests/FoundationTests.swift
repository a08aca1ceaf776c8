import Foundation
import GuestModeCommandLine
import Testing

@Suite("Foundation: init, profiles, store, conventions")
struct FoundationTests {
    @Test(
        "init binds each template and profile show --json prints its numbers",
        arguments: ["subscriptions", "voice", "recipes", "habits"])
    func initAndShow(profile: String) async throws {
        let sandbox = try Sandbox()
        let created = try await sandbox.run("init", "--profile", profile, "--store", "s.sqlite")
        #expect(created.status == 0)
        #expect(created.stdout.contains("created s.sqlite"))
        let shown = try await sandbox.run("--store", "s.sqlite", "profile", "show", "--json")
        #expect(shown.status == 0, "\(shown.stderr)")
        let document = shown.object
        #expect(document["name"] as? String == profile)
        // The profile's own vocabulary (guestmode-profile(5)): tiers keyed by level, maps keyed by name.
        let tiers = document["tiers"] as? [String: [String: Any]] ?? [:]
        #expect(Set(tiers.keys) == ["guest", "account", "premium"])
        func tier(_ level: String) -> [String: Any] { tiers[level] ?? [:] }
        switch profile {
        case "subscriptions":
            #expect((tier("guest")["caps"] as? [String: Any])?["subscriptions"] as? Int == 5)
            #expect(tier("guest")["when_capped"] as? String == "needs-account")
            #expect((tier("account")["caps"] as? [String: Any])?["subscriptions"] as? Int == 5)
            #expect(tier("account")["when_capped"] as? String == "needs-premium")
            #expect((tier("premium")["caps"] as? [String: Any])?["subscriptions"] as? String == "unlimited")
            let plan = (document["plans"] as? [String: [String: Any]])?["premium"]
            #expect((plan?["price"] as? NSNumber)?.doubleValue == 2.99)
        case "voice":
            #expect((tier("guest")["meters"] as? [String: Any])?["api_minutes"] as? Double == 60)
            #expect((tier("account")["meters"] as? [String: Any])?["api_minutes"] as? Double == 60)
            #expect((tier("premium")["meters"] as? [String: Any])?["api_minutes"] as? String == "unlimited")
            let meter = (document["meters"] as? [String: [String: Any]])?["api_minutes"]
            #expect(meter?["reset"] as? String == "never")
            let warnings = (meter?["warnings"] as? [[String: Any]])?.compactMap { $0["percent"] as? Double }
            #expect(warnings == [75, 90])
            let plan = (document["plans"] as? [String: [String: Any]])?["premium"]
            #expect((plan?["price"] as? NSNumber)?.doubleValue == 4.99)
            #expect(plan?["trial"] as? String == "1 month")
            #expect((document["identity"] as? [String: Any])?["max_providers_per_user"] as? Int == 1)
        case "recipes":
            let prompts = document["prompts"] as? [String: Any]
            #expect(prompts?["cooldown"] as? String == "24h")
            let contexts = (prompts?["rules"] as? [[String: Any]])?.compactMap { $0["context"] as? String } ?? []
            #expect(
                Set(contexts) == [
                    "first_recipe_success", "viral_content_created", "reengagement", "daily_limit_reached",
                    "feature_discovery", "share_intent", "challenge_interest", "social_exploration",
                ])
            let first = (prompts?["rules"] as? [[String: Any]])?.first {
                $0["context"] as? String == "first_recipe_success"
            }
            #expect(first?["once"] as? Bool == true)
            #expect((first?["when"] as? [[String: Any]])?.last?["state"] as? String == "anonymous")
            let experiment = (document["experiments"] as? [String: [String: Any]])?["auth_prompts"]
            let variants = (experiment?["variants"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
            #expect(variants == ["control", "aggressive", "delayed", "benefits", "social"])
            let steps = ((document["migration"] as? [String: Any])?["steps"] as? [[String: Any]])?
                .compactMap { $0["name"] as? String }
            #expect(steps == ["profile", "recipes", "photos", "preferences", "cleanup"])
        default:
            let completions = (document["collections"] as? [String: [String: Any]])?["completions"]
            #expect(completions?["unique"] as? [String] == ["habit", "day"])
            #expect(document["guest_owner"] as? String == "")
            #expect((document["backup"] as? [String: Any])?["outbox"] as? Bool == true)
        }
    }

    @Test("init refuses to overwrite a store without --force, and replaces it with --force")
    func initRefusesOverwrite() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let before = try sandbox.snapshot()
        let again = try await sandbox.run("init", "--profile", "subscriptions")
        #expect(again.status == 73)
        #expect(again.stderr.contains("--force"))
        #expect(try sandbox.snapshot() == before)
        let forced = try await sandbox.run("init", "--profile", "subscriptions", "--force")
        #expect(forced.status == 0)
        #expect(try await sandbox.run("profile", "show", "--json").object["name"] as? String == "subscriptions")
    }

    @Test("the store file is created with mode 0600")
    func storeMode() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let attributes = try FileManager.default.attributesOfItem(atPath: sandbox.path("guestmode.sqlite"))
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test("a profile with three mistakes gets three file:line messages and exit 65")
    func threeMistakes() async throws {
        let sandbox = try Sandbox()
        try sandbox.write(
            "bad.yaml",
            """
            name: Bad Name
            version: 1
            tiers:
              guest:
                caps:
                  nothing: 5
              premium:
                capz: 3
            """)
        let result = try await sandbox.run("profile", "validate", "bad.yaml")
        #expect(result.status == 65)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0] == "bad.yaml:1: name 'Bad Name' must use only lowercase letters, digits, '_' and '-'")
        #expect(lines[1].hasPrefix("bad.yaml:6: "))
        #expect(lines[1].contains("unknown collection 'nothing'"))
        #expect(lines[2].contains("bad.yaml:8: unknown key 'capz'"))
        #expect(result.stdout.isEmpty)
    }

    @Test("malformed YAML is located too")
    func malformedYAML() async throws {
        let sandbox = try Sandbox()
        try sandbox.write("broken.yaml", "name: x\nversion: 1\ntiers: [\n  guest\n")
        let result = try await sandbox.run("profile", "validate", "broken.yaml")
        #expect(result.status == 65)
        #expect(result.stderr.contains("broken.yaml:"))
        #expect(result.stderr.contains("malformed YAML"))
    }

    @Test("every template validates")
    func templatesValidate() async throws {
        let sandbox = try Sandbox()
        let list = try await sandbox.run("profile", "list", "--json")
        let names = (list.json as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        #expect(names == ["habits", "recipes", "subscriptions", "voice"])
        for name in names {
            #expect(try await sandbox.run("profile", "validate", name).status == 0)
        }
    }

    @Test("a missing file exits 66, an unknown option 64, both as JSON with --json")
    func exitCodes() async throws {
        let sandbox = try Sandbox()
        let missing = try await sandbox.run("profile", "validate", "nope.yaml")
        #expect(missing.status == 66)
        #expect(missing.stderr.hasPrefix("guestmode: profile file"))
        let unknown = try await sandbox.run("profile", "validate", "x.yaml", "--bogus")
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("--bogus"))
        let missingJSON = try await sandbox.run("--json", "profile", "validate", "nope.yaml")
        #expect(missingJSON.status == 66)
        #expect(missingJSON.errorJSON["code"] as? String == "profile_not_found")
        let unknownJSON = try await sandbox.run("profile", "validate", "--bogus", "--json")
        #expect(unknownJSON.status == 64)
        #expect(unknownJSON.errorJSON["code"] as? String == "usage")
        let noStore = try await sandbox.run("db", "status")
        #expect(noStore.status == 66)
        #expect(noStore.stderr.contains("guestmode init"))
        let badNow = try await sandbox.run("tour", "--now", "yesterday")
        #expect(badNow.status == 64)
    }

    @Test("a store from a future schema version is refused with 65 and left byte-for-byte unchanged")
    func futureSchema() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let sqlite = try ChildProcess(
            "/usr/bin/sqlite3",
            arguments: [
                sandbox.path("guestmode.sqlite"), "INSERT INTO grdb_migrations VALUES ('v99-from-the-future')",
            ])
        #expect(try sqlite.wait().status == 0)
        let before = try sandbox.snapshot()
        for command in [["db", "status"], ["db", "migrate"], ["profile", "show"], ["db", "check"]] {
            let result = try await sandbox.run(arguments: command)
            #expect(result.status == 65, "\(command)")
            #expect(result.stderr.contains("newer guestmode"))
            #expect(result.stderr.contains("v99-from-the-future"))
        }
        #expect(try sandbox.snapshot() == before)
    }

    @Test("a file that is not a store is refused with 65")
    func notAStore() async throws {
        let sandbox = try Sandbox()
        try sandbox.write("junk.sqlite", String(repeating: "not a database ", count: 100))
        let result = try await sandbox.run("--store", "junk.sqlite", "db", "status")
        #expect(result.status == 65)
    }

    @Test("db status, migrate and check on a healthy store")
    func databaseCommands() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let status = try await sandbox.run("db", "status", "--json")
        #expect(status.status == 0)
        let schema = status.object["schema"] as? [String: Any]
        #expect((schema?["pending"] as? [String])?.isEmpty == true)
        #expect((schema?["applied"] as? [String])?.first == "v1-initial")
        #expect(status.object["profile"] as? String == "recipes")
        let migrate = try await sandbox.run("db", "migrate")
        #expect(migrate.status == 0)
        #expect(migrate.stdout.contains("up to date"))
        let check = try await sandbox.run("db", "check", "--json")
        #expect(check.status == 0)
        #expect(check.object["ok"] as? Bool == true)
    }

    @Test("GUESTMODE_STORE and global options before the command name")
    func environmentAndGlobalOrder() async throws {
        let sandbox = try Sandbox()
        sandbox.environment["GUESTMODE_STORE"] = sandbox.path("env.sqlite")
        #expect(try await sandbox.run("init", "--profile", "voice").status == 0)
        #expect(FileManager.default.fileExists(atPath: sandbox.path("env.sqlite")))
        let shown = try await sandbox.run("--json", "profile", "show")
        #expect(shown.object["name"] as? String == "voice")
    }

    @Test("a reader that stops early ends guestmode quietly")
    func brokenPipe() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let lines = (0..<3000).map { #"{"user":"u\#($0)","action":"app_opened"}"# }.joined(separator: "\n")
        #expect(try await sandbox.run("track", "--from", "-", "--create-users", "--quiet", input: lines).status == 0)
        let piped = try await sandbox.shell("\"\(Sandbox.binary.path)\" user list | head -n 2")
        #expect(piped.stdout.split(separator: "\n").count == 2)
        #expect(piped.stderr.isEmpty, "\(piped.stderr.prefix(300))")
    }

    @Test("the tour walks every profile")
    func tour() async throws {
        let sandbox = try Sandbox()
        let result = try await sandbox.run("tour")
        #expect(result.status == 0, "\(result.stderr)")
        for name in ["recipes", "subscriptions", "voice", "habits"] {
            #expect(result.stdout.contains("== \(name)"))
        }
        #expect(!result.stdout.contains("\u{1B}["), "no colour with NO_COLOR")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("guestmode.sqlite")))
        #expect(result.stdout.contains("$ guestmode backup verify --full damaged.gmbackup"))
    }

    @Test("the tour fails loudly when an outcome is not the one narrated")
    func tourFailsLoudly() async throws {
        let sandbox = try Sandbox()
        let broken = try await sandbox.run(
            arguments: ["tour", "subscriptions"],
            environment: ["GUESTMODE_TOUR_BREAK": "backup verify --full damaged.gmbackup"])
        #expect(broken.status == 1)
        #expect(
            broken.stderr.contains(
                "tour: subscriptions: `guestmode backup verify --full damaged.gmbackup` exited 65, but the tour expects 0"
            ),
            "\(broken.stderr)")
        #expect(!broken.stdout.contains("== voice"))
    }

    @Test("the tour's JSON lists every command it ran with its exit status")
    func tourJSON() async throws {
        let sandbox = try Sandbox()
        let result = try await sandbox.run("tour", "voice", "--json")
        #expect(result.status == 0, "\(result.stderr)")
        let steps = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        let gate = try #require(
            steps.first { ($0["command"] as? String) == "guestmode meter check $guest api_minutes 1" })
        #expect(gate["exit_status"] as? Int == 12)
        #expect(steps.allSatisfy { $0["profile"] as? String == "voice" })
    }
}
