import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct GuestmodeCommand: ParsableCommand {
    static var configuration: CommandConfiguration { CompletionScriptCheck.configuration(declaredConfiguration) }

    private static let declaredConfiguration = CommandConfiguration(
        commandName: "guestmode",
        abstract: "Guest-first apps from the command line: guests, caps, meters, prompts, migrations and backups.",
        discussion: """
            A store (one SQLite file) is bound to a profile that declares an app's collections, actions, \
            tiers, meters, plans and prompts. Start with 'guestmode tour', then \
            'guestmode init --profile NAME'. Global options may come before or after the command name. \
            Exit status: 0 done, 10 needs an account, 11 needs premium, 12 meter exhausted, 13 nothing due, \
            14 conflict, 64 usage, 65 bad data, 66 not found, 73 cannot create, 74 I/O error, 75 try again later. \
            See guestmode(1).
            """,
        version: GuestModeVersion.current,
        subcommands: [
            InitCommand.self, ProfileCommand.self, DatabaseCommand.self,
            GuestCommand.self, UserCommand.self, LinkCommand.self, UnlinkCommand.self,
            TrackCommand.self, CountersCommand.self, RecordCommand.self, LimitCommand.self, MeterCommand.self,
            PlanCommand.self,
            MigrateCommand.self, MergeCommand.self, BackupCommand.self, WebhookCommand.self,
            PromptCommand.self, ExperimentCommand.self, ReportCommand.self, ReplayCommand.self,
            ServeLauncher.self, TourCommand.self,
        ]
    )

    @OptionGroup(title: "Global options (accepted by every command, before or after its name)")
    var global: GlobalOptions

    /// The commands whose plain lines are parsed without ArgumentParser's reflection: those a script runs
    /// once per user, where start-up is most of the cost (`QuickCommand`).
    static let quickCommands = [
        GuestCommand.New.quick, LinkCommand.quick, UnlinkCommand.quick, UserCommand.Show.quick,
        CountersCommand.quick, LimitCommand.quick, TrackCommand.quick, MeterCommand.Use.quick,
        MeterCommand.Check.quick, MeterCommand.Status.quick, PromptCommand.Next.quick, PromptCommand.Record.quick,
        RecordCommand.Get.quick, RecordCommand.Put.quick, RecordCommand.Delete.quick,
    ]
}

/// The command line's refusals worded for this binary's commands.
typealias UsageErrors = CommandLineUsage<GuestmodeCommand>

/// The shared progress line (GuestModeCommandLine's), not Foundation's type of the same name.
typealias Progress = GuestModeCommandLine.Progress
