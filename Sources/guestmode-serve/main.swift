import GuestModeCommandLine

// `guestmode serve ARGUMENTS` runs this program with the ARGUMENTS (guestmode's ServeLauncher), in
// its place: the HTTP server, and the keys and sessions it answers with, as one command tree whose
// root is `guestmode serve`.
CommandLineMain<ServeCommand>.run(Array(CommandLine.arguments.dropFirst()))
