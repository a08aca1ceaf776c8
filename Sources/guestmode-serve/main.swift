import GuestModeCommandLine

// `guestmode serve ARGUMENTS` runs this program with the ARGUMENTS (guestmode's ServeLauncher), in
// its place: the HTTP server, and the keys and sessions it answers with, as one command tree whose
// root is `guestmode serve`.
let arguments = Array(CommandLine.arguments.dropFirst())
// `guestmode plan import …` runs here too (guestmode's PlanCommand.Import), with guestmode's own arguments.
if arguments.first == PlanImportOptions.internalCommand {
    CommandLineMain<PlanImportRoot>.run(Array(arguments.dropFirst()))
}
CommandLineMain<ServeCommand>.run(arguments)
