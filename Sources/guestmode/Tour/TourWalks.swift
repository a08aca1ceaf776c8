import Foundation
import GuestModeCommandLine
import GuestModeKit

/// What the tour shows for each built-in profile: the journey its app lives
/// through, with what is particular to it. A profile of another name gets the
/// short common walk. Every line is a real command; its promised exit status
/// and output are checked.
enum TourWalks {
    static func walk(_ profile: Profile, on tour: TourRunner) throws {
        switch profile.name {
        case "subscriptions": try subscriptions(tour)
        case "voice": try voice(tour)
        case "recipes": try recipes(tour)
        case "habits": try habits(tour)
        default: try common(profile, tour)
        }
    }

    /// Caps: a guest keeps 5 subscriptions, a free account 5, premium any
    /// number; the identity stays the same user id throughout.
    private static func subscriptions(_ tour: TourRunner) throws {
        try tour.run(
            "guestmode init --profile subscriptions", showing: ["subscriptions v1"],
            note: "a store bound to the profile (mode 0600) and its deployment backup key")
        try tour.run(
            "guestmode guest new --device phone-1", capture: "guest",
            note: "an anonymous user, no account needed; the id is stable for life")
        try tour.run(
            "guestmode record put $guest subscriptions netflix --data '{\"price\": 15.49}'", showing: ["1/5"],
            note: "records are JSON documents in the profile's collections")
        try tour.runEach(
            "guestmode record put $guest subscriptions sub-$n --data '{}'", variable: "n", over: ["2", "3", "4", "5"],
            showing: ["5/5"], note: "the guest tier keeps 5 subscriptions")
        try tour.run(
            "guestmode record put $guest subscriptions sub-6 --data '{}'", exit: 10, showing: ["needs-account"],
            note: "the 6th is refused with exit 10 and nothing is stored: time to ask for an account")
        try tour.run(
            "guestmode prompt next $guest",
            showing: ["guest_cap_reached", "Create a free account — save your 5 subscriptions"],
            note:
                "the refusal raised the profile's trigger: the very next prompt asks for an account, no tracking needed"
        )
        try tour.run(
            "guestmode limit $guest subscriptions", exit: 10, showing: ["5", "needs-account"],
            note: "the app can ask before it tries")
        try tour.run(
            "guestmode link $guest --provider apple --subject 001234.abcd", showing: ["linked apple to $guest"],
            note: "the guest becomes an account in place: same id, same data")
        try tour.run(
            "guestmode user events $guest --action account_upgrade_succeeded", showing: ["provider=apple"],
            note: "the event log keeps every upgrade, started, succeeded or failed, with its provider")
        try tour.run(
            "guestmode user find --identity apple:001234.abcd", showing: ["$guest"],
            note: "support finds the person by who they are, from an index, not by an id they never saw")
        try tour.run(
            "guestmode record put $guest subscriptions sub-6 --data '{}'", exit: 11, showing: ["needs-premium"],
            note: "a free account keeps 5 too: exit 11 asks for premium")
        try tour.run(
            "guestmode prompt next $guest", showing: ["account_cap_reached", "Upgrade to premium"],
            note: "for an account the same wall offers premium instead")
        try tour.run(
            "guestmode plan grant $guest premium", showing: ["premium active"],
            note: "an entitlement, with its own clock")
        try tour.run(
            "guestmode record put $guest subscriptions sub-6 --data '{}'", showing: ["no cap on subscriptions"],
            note: "premium lifts the cap")
        try tour.write(
            "subscriptions.ndjson",
            [
                #"{"user_id": "$guest", "collection": "subscriptions", "key": "disney", "data": {"price": 8.99}}"#,
                #"{"user_id": "$guest", "collection": "subscriptions", "key": "spotify", "data": {"price": 11.99}}"#,
            ], note: "records exported from the app's old backend")
        try tour.run(
            "guestmode record load subscriptions.ndjson", showing: ["2 added"],
            note: "bulk NDJSON: every line checked as a single put, caps per user, all or nothing")
        try tour.run(
            "guestmode guest new --device tablet", capture: "tablet",
            note: "the same person starts as a guest on a second device")
        try tour.run(
            "guestmode record put $tablet subscriptions netflix --data '{\"price\": 17.99}'",
            note: "with a different price for the same key")
        try tour.run(
            "guestmode link $tablet --provider apple --subject 001234.abcd", exit: 14,
            showing: ["already linked to another user"],
            note: "that identity already belongs to an account: exit 14, and the guest keeps everything")
        try tour.run(
            "guestmode merge $tablet --into $guest --policy keep-account --dry-run", showing: ["netflix"],
            note: "the plan: one conflicting key, settled for the account; nothing changes yet")
        try tour.run(
            "guestmode merge $tablet --into $guest --policy keep-account", showing: ["netflix"],
            note: "one transaction: the guest's data moves in, the losing record is archived, the guest is gone")
        try tour.run(
            "guestmode merge conflicts list $guest", showing: ["netflix", "17.99"],
            note: "the archived loser, kept with its data")
        try tour.run(
            "guestmode merge conflicts restore 1 --key netflix-tablet", showing: ["netflix-tablet"],
            note: "brought back under a new key; the winning record is not touched")
        try backup(tour, user: "$guest", profile: "subscriptions")
    }

    /// Meters: 60 free API minutes per guest for life, warnings at 75 % and
    /// 90 %, the gate before a paid call, a trial of premium, a referral
    /// bonus granted on top.
    private static func voice(_ tour: TourRunner) throws {
        try tour.run("guestmode init --profile voice", showing: ["voice v1"], note: "a metered profile")
        try tour.run("guestmode guest new", capture: "guest", note: "a guest with 60 free API minutes")
        try tour.run(
            "guestmode meter use $guest api_minutes 45", showing: ["45/60", "75%"],
            note: "a warning fires once when usage passes 75 %")
        try tour.run(
            "guestmode prompt next $guest",
            showing: ["minutes_running_low", "You have used 45 of your 60 free minutes"],
            note: "a rule over the meter itself; the copy is filled from the user's state")
        try tour.run(
            "guestmode meter use $guest api_minutes 9", showing: ["54/60", "90%"],
            note: "and a critical one at 90 %")
        try tour.run(
            "guestmode prompt next $guest",
            showing: ["minutes_almost_gone", "You have 6 of your 60 free minutes left"],
            note: "the 90 % prompt takes over")
        try tour.run(
            "guestmode meter use $guest api_minutes 6", showing: ["60/60"], note: "the last free minutes")
        try tour.run(
            "guestmode meter check $guest api_minutes 1", exit: 12, showing: ["exhausted"],
            note: "the gate before a paid call: exit 12 means do not make it")
        try tour.run(
            "guestmode prompt next $guest", showing: ["minutes_paywall", "4.99 USD a month"],
            note: "the paywall, with its trial")
        try tour.run(
            "guestmode plan grant $guest premium --trial 1M", exit: 64, showing: ["P1M", "1 month"],
            note: "months or minutes? an ambiguous duration is refused, and the one trial is not used up")
        try tour.run(
            "guestmode plan grant $guest premium --trial P1M", showing: ["premium", "trial"],
            note: "a trial of one calendar month (ISO 8601; '1 month' says the same)")
        try tour.run(
            "guestmode meter check $guest api_minutes 10", showing: ["unlimited"],
            note: "premium minutes are unlimited during the trial")
        try tour.run(
            "guestmode --now \(tour.time(32, .days)) meter check $guest api_minutes 1", exit: 12,
            showing: ["exhausted"], note: "a month later the trial has ended and the free allowance is spent")
        try tour.run("guestmode guest new", capture: "caller", note: "another guest, on a long call")
        try tour.run(
            "guestmode meter use $caller api_minutes 54", showing: ["54/60"], note: "6 minutes left")
        try tour.run(
            "guestmode meter use $caller api_minutes 7", exit: 12, showing: ["refused 7"],
            note: "by default a use that does not fit is refused whole")
        try tour.run(
            "guestmode meter use $caller api_minutes 7 --overage allow", exit: 12, showing: ["61/60", "exhausted"],
            note: "but the call already happened: recorded in full, and exit 12 says the allowance is now used up")
        try tour.run("guestmode guest new", capture: "friend", note: "a guest who came through a referral")
        try tour.run(
            "guestmode meter grant $friend api_minutes 30 --expires 30d --reason referral --id referral-1",
            showing: ["granted", "0/90", "30 granted"],
            note: "a referral bonus: 30 minutes on top of the free 60; what is left lapses in 30 days")
        try tour.run(
            "guestmode meter use $friend api_minutes 20", showing: ["20/90", "70 left"],
            note: "usage draws on the grant first: the free 60 are untouched")
        try tour.run(
            "guestmode meter grant $friend api_minutes 60 --expires 30d --reason referral --id referral-1", exit: 14,
            showing: ["referral-1"], note: "the same key with another grant is refused, and nothing is written")
        try tour.run(
            "guestmode --now \(tour.time(31, .days)) meter check $friend api_minutes 60",
            showing: ["allowed", "20/80", "60 left"],
            note: "a month on, the grant's last 10 minutes have lapsed; the free 60 remain")
        try tour.run(
            "guestmode report usage", showing: ["api_minutes"], note: "metered usage and grants per meter")
    }

    /// Prompts and experiments: which sign-in prompt, when, and measured.
    private static func recipes(_ tour: TourRunner) throws {
        try tour.run(
            "guestmode init --profile recipes", showing: ["recipes v1"],
            note: "a profile with prompt rules and an experiment")
        try tour.run("guestmode guest new", capture: "guest", note: "a guest")
        try tour.run(
            "guestmode experiment assign $guest auth_prompts --variant benefits", showing: ["benefits"],
            note: "variants are GrowthBook's hash v2 of the id; here one is chosen so the walk is the same every time")
        try tour.run(
            "guestmode track $guest recipe_created --id first-recipe", showing: ["recipe_created"],
            note: "an event; its id makes a retried report count once")
        try tour.run(
            "guestmode track $guest recipe_created --id first-recipe", showing: ["recipe_created"],
            note: "the same id again: the counter does not move")
        try tour.run(
            "guestmode prompt next $guest", showing: ["first_recipe_success"],
            note: "the rule \"first recipe created, still anonymous\" holds: show this prompt now")
        try tour.run(
            "guestmode prompt record $guest first_recipe_success shown", note: "the app showed it")
        try tour.run(
            "guestmode prompt next $guest", exit: 13, note: "exit 13: nothing is due, the cooldown keeps it quiet")
        try tour.run(
            "guestmode prompt record $guest first_recipe_success never", note: "the user said never ask again")
        try tour.run(
            "guestmode --now \(tour.time(30, .days)) prompt next $guest", exit: 13,
            note: "a month later: still nothing, never means never")
        try tour.run(
            "guestmode --now \(tour.time(30, .days)) prompt next $guest --explain", exit: 13,
            showing: ["first_recipe_success", "never"],
            note: "why: each rule's verdict, and the rule that decided")
        try tour.run(
            "guestmode --now \(tour.time(30, .days)) prompt reset $guest", showing: ["$guest"],
            note: "the user asked to hear from the app again: never is undone, and the reset is an event")
        try tour.write(
            "events.ndjson",
            [
                #"{"user":"$guest","action":"recipe_viewed","at":"\#(tour.time(1, .days))"}"#,
                #"{"user":"cook-2","action":"recipe_created","at":"\#(tour.time(1, .days))","id":"c2-1"}"#,
                #"{"user":"cook-2","action":"recipe_created","at":"\#(tour.time(1, .days))","id":"c2-1"}"#,
            ], note: "an event log from the app")
        try tour.run(
            "guestmode track --from events.ndjson --create-users", showing: ["3"],
            note: "bulk ingestion, all or nothing; unknown users become guests; the repeated id counts once")
        try tour.run(
            "guestmode report funnel", showing: ["GUESTS"], note: "the sign-in funnel, computed in SQL")
        try tour.run(
            "guestmode report prompts", showing: ["first_recipe_success"], note: "each prompt: shown, never, completed")
        try tour.run(
            "guestmode report experiments", showing: ["benefits"],
            note: "conversion per variant with a confidence interval")
        try tour.run(
            "guestmode replay events.ndjson",
            note: "the prompt policy run over a log before it ships; the store is not touched")
    }

    /// Continuous backup and stale guests: every change queues a backup, old
    /// guests are purged safely, a guest moves into an account step by step.
    private static func habits(_ tour: TourRunner) throws {
        try tour.run(
            "guestmode init --profile habits", showing: ["habits v1"], note: "a profile with the backup outbox on")
        try tour.run(
            "guestmode record put-ownerless habits read --data '{\"name\": \"Read 10 pages\"}'",
            showing: ["ownerless habits/read"],
            note: "the app wrote data before any user existed: it belongs to no one yet")
        try tour.runEach(
            "guestmode --now \(tour.time(-120, .days)) guest new", variable: "n", over: ["1", "2", "3"],
            note: "three guests who tried the app four months ago and left")
        try tour.run("guestmode guest new", capture: "guest", note: "a guest using the app today")
        try tour.run(
            "guestmode record put $guest habits walk --data '{\"name\": \"Walk 20 minutes\"}'",
            showing: ["habits/walk"], note: "a change, so a backup of this user is queued")
        try tour.run(
            "guestmode migrate adopt $guest", showing: ["adopted 1"], note: "the first user adopts the ownerless data")
        try tour.run(
            "guestmode record put-ownerless habits stretch --data '{}'", showing: ["ownerless habits/stretch"],
            note: "offline, the app fell back to writing ownerless data")
        try tour.run(
            "guestmode migrate adopt $guest", showing: ["adopted 1"], note: "adopting again takes only what is new")
        try tour.run(
            "guestmode migrate adopt $guest", showing: ["nothing changed"], note: "and a third run changes nothing")
        try tour.run(
            "guestmode backup queue", showing: ["$guest"], note: "the outbox: one entry per user with changes")
        try tour.run(
            "guestmode backup push --to backups", exit: 75, showing: ["stay queued"],
            note: "the destination is not there yet: exit 75, nothing lost, the entry waits with backoff")
        try tour.makeDirectory("backups", note: "the destination appears")
        try tour.run(
            "guestmode backup push --to backups --retry-now", showing: ["$guest"],
            note: "each queued user exported, verified and written atomically, then taken off the queue")
        try tour.run(
            "guestmode user purge --inactive 90d --dry-run", showing: ["3"],
            note: "stale guests with no data and no plan; dry run first")
        try tour.run(
            "guestmode user purge --inactive 90d --yes", showing: ["3"], note: "gone, in one transaction")
        try tour.run("guestmode guest new", capture: "account", note: "an account made on another device")
        try tour.run(
            "guestmode link $account --provider email --subject ana@example.com", showing: ["linked email"],
            note: "")
        try tour.run(
            "guestmode migrate $guest --to $account --dry-run", showing: ["habits"],
            note: "the plan: the profile's migration steps and the rows each moves")
        try tour.run(
            "guestmode migrate $guest --to $account", showing: ["$account"],
            note: "a backup first, then journaled steps; --resume finishes one cut short")
        try tour.run(
            "guestmode record list $account habits", showing: ["walk", "read", "stretch"],
            note: "the account has the guest's habits, adopted ones included")
        try tour.run(
            "guestmode report migrations", showing: ["guest-to-account", "100.0%"],
            note: "migrations and merges: completed, failed, resumed, the success rate and the failures by step")
        try tour.run("guestmode db check", showing: ["ok"], note: "the store's integrity and invariants")
    }

    private static func common(_ profile: Profile, _ tour: TourRunner) throws {
        try tour.run(
            "guestmode init --profile \(profile.name)", showing: [profile.name], note: "a store bound to the profile")
        try tour.run("guestmode guest new", capture: "guest", note: "a guest")
        if let action = profile.actions.first {
            try tour.run("guestmode track $guest \(action)", note: "an event the profile declares")
        }
        try tour.run("guestmode user show $guest", showing: ["anonymous"], note: "the guest's state")
        try backup(tour, user: "$guest", profile: profile.name)
    }

    /// A user's backup: exported, verified, damaged on purpose and refused,
    /// restored into another store that shares the deployment key.
    private static func backup(_ tour: TourRunner, user: String, profile: String) throws {
        try tour.run(
            "guestmode backup export \(user) --out user.gmbackup", showing: ["user.gmbackup"],
            note: "tar + zstd with a signed manifest of SHA-256s, mode 0600, written to a temporary file and renamed")
        try tour.run(
            "guestmode backup verify --full user.gmbackup", showing: ["ok"], note: "every entry matches the manifest")
        try tour.damage("user.gmbackup", into: "damaged.gmbackup", note: "one byte flipped in a copy")
        try tour.run(
            "guestmode backup verify --full damaged.gmbackup", exit: 65, note: "the damage is found: exit 65")
        try tour.run(
            "guestmode --store restored.sqlite init --profile \(profile)", note: "another store")
        try tour.run(
            "guestmode backup key export --out deployment.key", note: "the deployment key that signed the archive")
        try tour.run(
            "guestmode --store restored.sqlite backup key import deployment.key --force",
            note: "so the other store trusts what this one signed")
        try tour.run(
            "guestmode --store restored.sqlite backup import user.gmbackup", showing: ["1"],
            note: "restored in one transaction: all or nothing")
    }
}
