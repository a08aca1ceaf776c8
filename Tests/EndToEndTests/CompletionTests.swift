import Foundation
import Testing

/// The completion scripts `make install` installs, run by bash as it runs them on a TAB: the script
/// is sourced, the line typed so far is put in COMP_WORDS, and what the completion function leaves in
/// COMPREPLY is what the shell offers.
@Suite("Shell completion")
struct CompletionTests {
    private static let simulatedTab = #"""
        source "$1"
        COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}
        read -r -a COMP_WORDS <<< "$COMP_LINE"
        if [[ "$COMP_LINE" == *" " ]]; then COMP_WORDS+=(""); fi
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        _guestmode "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\n' "${COMPREPLY[@]}"
        """#

    private func offered(after line: String, in sandbox: Sandbox) async throws -> Set<String> {
        let result = try await sandbox.shell(
            "PATH='\(Sandbox.binary.deletingLastPathComponent().path)':\"$PATH\" bash tab.sh guestmode.bash '\(line)'")
        #expect(result.status == 0, "\(line): \(result.stderr)")
        return Set(result.stdout.split(separator: "\n").map(String.init))
    }

    @Test("guestmode's bash completion offers guestmode-serve's subcommands and options after 'serve'")
    func serveIsCompletedFromTheServersOwnTree() async throws {
        let sandbox = try Sandbox()
        let script = try await sandbox.run("--generate-completion-script", "bash")
        #expect(script.status == 0)
        try Data(script.stdout.utf8).write(to: sandbox.directory.appendingPathComponent("guestmode.bash"))
        try Data(Self.simulatedTab.utf8).write(to: sandbox.directory.appendingPathComponent("tab.sh"))

        #expect(try await offered(after: "guestmode cou", in: sandbox) == ["counters"])
        #expect(try await offered(after: "guestmode serve ", in: sandbox) == ["help", "key", "session", "signing-key"])
        #expect(try await offered(after: "guestmode serve --li", in: sandbox) == ["--listen"])
        #expect(try await offered(after: "guestmode serve --listen ", in: sandbox).isEmpty, "a value is the user's")
        #expect(try await offered(after: "guestmode serve --listen 127.0.0.1:8080 k", in: sandbox) == ["key"])
        #expect(
            try await offered(after: "guestmode --store s.sqlite serve signing-key r", in: sandbox) == [
                "retire", "rotate",
            ])
        #expect(try await offered(after: "guestmode serve key create --sc", in: sandbox).contains("--scope"))
    }
}
