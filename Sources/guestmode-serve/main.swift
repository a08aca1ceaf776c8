import GuestModeCommandLine

// `guestmode serve ARGUMENTS` runs this program with the ARGUMENTS (guestmode's ServeLauncher), in
// its place: the HTTP server, and the keys and sessions it answers with, as one command tree whose
// root is `guestmode serve`.
let arguments = Array(CommandLine.arguments.dropFirst())
// `guestmode plan import …` runs here too (guestmode's PlanCommand.Import), with guestmode's own arguments.
if arguments.first == PlanImportOptions.internalCommand {
    CommandLineMain<PlanImportRoot>.run(Array(arguments.dropFirst()))
}
// A shell completing `guestmode serve …` asks here (guestmode's ServeLauncher): the words typed after
// `serve`, the one being completed last; the candidates come back one a line.
if arguments.first == internalCompletionsArgument {
    ShellCompletions<ServeCommand>.answer(Array(arguments.dropFirst()))
}
CommandLineMain<ServeCommand>.run(arguments)
