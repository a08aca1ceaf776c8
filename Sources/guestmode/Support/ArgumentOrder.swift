import Foundation

/// Moves global options written before the command name to after it, where
/// every subcommand's option group reads them, and keeps values that begin
/// with a minus sign (`--now -1h`, `meter use U api_minutes -5`) values
/// rather than unknown options (see `protectSignedValues`).
func reorderGlobalOptions(_ arguments: [String]) -> [String] {
    protectSignedValues(movingGlobalOptions(arguments))
}

/// Options whose value may begin with a minus sign: relative times and
/// numbers, which their commands then accept or refuse with a clear message.
let optionsTakingSignedValues: Set<String> = [
    "--now", "--since", "--until", "--count", "--limit", "--amount", "--inactive", "--inactive-days", "--trial",
]

/// ArgumentParser reads `-5` as a short option and reports a missing value
/// or an unknown option. A value that looks like a negative number or a
/// negative duration is kept a value: after an option that takes one it is
/// joined to it (`--now=-1h`); anywhere else it is a positional argument,
/// moved behind a `--` (after any positional arguments already there), so the
/// command can say what it expects ("the amount must be positive").
func protectSignedValues(_ arguments: [String]) -> [String] {
    func looksSigned(_ argument: String, afterOption: Bool) -> Bool {
        let characters = Array(argument)
        guard characters.count >= 2, characters[0] == "-" else { return false }
        if characters[1].isASCII && characters[1].isNumber { return true }
        return afterOption && (characters[1] == "P" || characters[1] == "p")
    }
    var result: [String] = []
    var negatives: [String] = []
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        if argument == "--" { break }
        if let option = result.last, optionsTakingSignedValues.contains(option),
            looksSigned(argument, afterOption: true)
        {
            result[result.count - 1] = option + "=" + argument
        } else if looksSigned(argument, afterOption: false) {
            negatives.append(argument)
        } else {
            result.append(argument)
        }
        index += 1
    }
    guard !negatives.isEmpty else { return result + arguments[index...] }
    let rest = index < arguments.count ? Array(arguments[(index + 1)...]) : []
    return result + ["--"] + negatives + rest
}

func movingGlobalOptions(_ arguments: [String]) -> [String] {
    var leading: [String] = []
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
        guard GlobalOptions.names.contains(name) else { break }
        leading.append(argument)
        if GlobalOptions.namesTakingValues.contains(argument), index + 1 < arguments.count {
            leading.append(arguments[index + 1])
            index += 1
        }
        index += 1
    }
    guard !leading.isEmpty, index < arguments.count else { return arguments }
    var rest = Array(arguments[index...])
    let terminator = rest.firstIndex(of: "--") ?? rest.count
    rest.insert(contentsOf: leading, at: terminator)
    return rest
}
