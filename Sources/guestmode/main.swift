import GuestModeCommandLine

let arguments = Array(CommandLine.arguments.dropFirst())
// `guestmode serve …` is guestmode-serve's, which carries the HTTP server: this binary does not, so
// that every other command starts without loading it (bench/results.md, "Start-up").
// A shell asking for completions (`---completion serve -- …`) is answered here, by asking guestmode-serve.
if arguments.first != "---completion", let serving = ServeLauncher.serveArguments(arguments) {
    ServeLauncher.exec(serving, isJSON: arguments.contains("--json"))
}
CommandLineMain<GuestmodeCommand>.run(arguments, quick: GuestmodeCommand.quickCommands)
