import Foundation

/// Moves global options written before the command name to after it, where
/// every subcommand's option group reads them.
func reorderGlobalOptions(_ arguments: [String]) -> [String] {
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
