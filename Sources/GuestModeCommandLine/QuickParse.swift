import ArgumentParser

/// The plain command lines of the commands a shell script runs once per user (`counters U`, `meter check U
/// M 1`, `track U A`), parsed without ArgumentParser. ArgumentParser finds a command's arguments by `Mirror`
/// over its property wrappers, five to seven times a run, and that reflection was two thirds of such a
/// command's start-up (bench/results.md, "Start-up: the plain command lines parsed without reflection").
///
/// A `QuickCommand` declares one command's words, operands and options beside its ArgumentParser
/// declaration, and builds the command value ArgumentParser would, every property set, defaults included:
/// a property wrapper ArgumentParser has not filled traps when it is read. ``parse(_:among:)`` takes only a line it
/// understands entirely, and declines (returns nil) everything else: help, `--version`, an option it does
/// not know, a repeated option, a value beginning with `-` where ArgumentParser might read it otherwise, a
/// value its type refuses, a command that does not validate. A declined line goes to ArgumentParser, which
/// parses it, or refuses it with its own message, as it always did. QuickParseTests holds every accepted
/// line to ArgumentParser's parse of it, over generated lines.
///
/// ```swift
/// static let quick = QuickCommand(path: ["counters"], operands: 1...1, options: ["--format": .value]) { line in
///     var command = CountersCommand()
///     command.global = line.global
///     command.listing = try ListingOptions(line)
///     command.user = line.operands[0]
///     return command
/// }
/// ```
package struct QuickCommand: Sendable {
    /// How an option is written.
    package enum Option: Sendable {
        /// A flag: its name alone.
        case flag
        /// A value after the name (`--id K`, `--id=K`); a next word beginning with `-` is declined.
        case value
        /// A value after the name, whatever it begins with (ArgumentParser's `.unconditional`: `--count -1`).
        case unconditionalValue
    }

    /// The command's names from the root (`["meter", "check"]`).
    package let path: [String]
    /// How many operands the command takes.
    package let operands: ClosedRange<Int>
    /// The command's own options by long name (`--id`), the global options not among them.
    package let options: [String: Option]
    /// The command as ArgumentParser would make it from `line`; throws ``Decline`` when it would not.
    package let make: @Sendable (QuickLine) throws -> any ParsableCommand

    package init(
        path: [String], operands: ClosedRange<Int>, options: [String: Option] = [:],
        make: @escaping @Sendable (QuickLine) throws -> any ParsableCommand
    ) {
        self.path = path
        self.operands = operands
        self.options = options
        self.make = make
    }

    /// A line the quick parse leaves to ArgumentParser.
    package struct Decline: Error {
        package init() {}
    }

    /// The global options (`GlobalOptions`), each with how it is written.
    static let globalOptions: [String: Option] = [
        "--store": .value, "--schema": .value, "--now": .unconditionalValue,
        "--json": .flag, "--quiet": .flag, "--verbose": .flag,
    ]

    /// The short spellings of global flags.
    static let shortFlags: [String: String] = ["-q": "--quiet", "-v": "--verbose"]

    /// The command `arguments` name, made as ArgumentParser would make it, or nil when the line is not one
    /// of `commands`' plain lines (then ArgumentParser parses it).
    package static func parse(_ arguments: [String], among commands: [QuickCommand]) -> (any ParsableCommand)? {
        var names: [String] = []
        var command: QuickCommand?
        var operands: [String] = []
        var given: [String: String] = [:]
        var flags: Set<String> = []
        var position = 0
        while position < arguments.count {
            let argument = arguments[position]
            position += 1
            if !argument.hasPrefix("-") {
                if command != nil {
                    operands.append(argument)
                    continue
                }
                names.append(argument)
                let candidates = commands.filter { $0.path.starts(with: names) }
                guard !candidates.isEmpty else { return nil }
                command = candidates.first { $0.path == names }
                continue
            }
            // `-`, `--`, `-h`, grouped short flags (`-qv`), a negative number: ArgumentParser's to read.
            let name: String
            var inline: String?
            if let long = shortFlags[argument] {
                name = long
            } else {
                guard argument.hasPrefix("--"), argument.count > 2 else { return nil }
                if let equals = argument.firstIndex(of: "=") {
                    name = String(argument[..<equals])
                    inline = String(argument[argument.index(after: equals)...])
                    guard inline?.isEmpty == false else { return nil }
                } else {
                    name = argument
                }
            }
            // A repeated option is refused, or its values collected, by the full parse.
            guard given[name] == nil, !flags.contains(name) else { return nil }
            // A command's own option before the command's names is left to ArgumentParser.
            guard let kind = globalOptions[name] ?? command?.options[name] else { return nil }
            switch kind {
            case .flag:
                guard inline == nil else { return nil }
                flags.insert(name)
            case .value, .unconditionalValue:
                if let inline {
                    given[name] = inline
                } else {
                    guard position < arguments.count else { return nil }
                    let next = arguments[position]
                    if kind == .value && next.hasPrefix("-") { return nil }
                    given[name] = next
                    position += 1
                }
            }
        }
        guard let command, command.operands.contains(operands.count) else { return nil }
        var global = GlobalOptions()
        global.store = given.removeValue(forKey: "--store")
        global.schema = given.removeValue(forKey: "--schema")
        global.now = given.removeValue(forKey: "--now")
        global.json = flags.remove("--json") != nil
        global.quiet = flags.remove("--quiet") != nil
        global.verbose = flags.remove("--verbose") != nil
        let line = QuickLine(global: global, operands: operands, values: given, flags: flags)
        do {
            var made = try command.make(line)
            try made.validate()
            return made
        } catch {
            return nil
        }
    }
}

/// A command line the quick parse has read: the global options, the operands after the command's names, and
/// the command's own options.
package struct QuickLine {
    package let global: GlobalOptions
    package let operands: [String]
    let values: [String: String]
    let flags: Set<String>

    /// The option's value as ArgumentParser converts it, nil when it is not given; throws
    /// ``QuickCommand/Decline`` when the type refuses the text (ArgumentParser then words the refusal).
    package func value<Value: ExpressibleByArgument>(
        _ name: String, as type: Value.Type = Value.self
    ) throws
        -> Value?
    {
        guard let text = values[name] else { return nil }
        guard let value = Value(argument: text) else { throw QuickCommand.Decline() }
        return value
    }

    /// Whether the flag is given.
    package func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The operand at `index` as ArgumentParser converts it; throws ``QuickCommand/Decline`` when the type
    /// refuses the text.
    package func operand<Value: ExpressibleByArgument>(_ index: Int, as type: Value.Type = Value.self) throws -> Value {
        guard let value = Value(argument: operands[index]) else { throw QuickCommand.Decline() }
        return value
    }

    /// A required option's value as ArgumentParser converts it; throws ``QuickCommand/Decline`` when it is
    /// missing or refused (ArgumentParser then words the refusal).
    package func required<Value: ExpressibleByArgument>(
        _ name: String, as type: Value.Type = Value.self
    ) throws
        -> Value
    {
        guard let value = try value(name, as: type) else { throw QuickCommand.Decline() }
        return value
    }
}
