#!/usr/bin/env python3
"""Source rules scripts/check-layout.sh runs that grep cannot state:

- The engine and the archive target never read the wall clock (`Date()`,
  `Date.now`, `timeIntervalSinceNow`): the time is always an argument.
- A string literal in a library target names no command-line command
  ('guestmode db check') and no flag (--store): the library says what went
  wrong, the CLI adds how to fix it with its own commands
  (Sources/GuestModeCommandLine/ErrorHints.swift).
- Every Swift target in Package.swift takes the `strict` settings, which
  make a compiler warning in our own sources an error in the debug build.
- Every public declaration of a library target has a `///` comment: the
  public surface is what an app embedding the engine reads (and what
  `make docs` renders); what only this package's targets share is `package`.

Prints each violation as file:line and exits 1 if there is any."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIBRARIES = ["GuestModeKit", "GuestModeSQLite", "GuestModePostgres", "GuestModeArchive"]
CLOCK_FREE = ["GuestModeKit", "GuestModeArchive"]
# A copy of Templates/*.yaml, whose comments are written for the command line's users.
GENERATED = {"Sources/GuestModeKit/Profile/EmbeddedTemplates.swift"}

CLOCK = re.compile(r"\bDate\(\s*\)|\bDate\.now\b|\bDate\(timeIntervalSinceNow:|\.timeIntervalSinceNow\b")
# A command written as a command, quoted or in parentheses ('guestmode db check', (guestmode profile list)),
# not prose such as "a guestmode backup" or "guestmode backups have"; the commands are those with a man page.
COMMANDS = sorted(
    name[len("guestmode-") : -len(".1")]
    for name in os.listdir(os.path.join(ROOT, "man"))
    if name.startswith("guestmode-") and name.endswith(".1"))
COMMAND = re.compile(r"(^|['\"(`])guestmode (%s)\b" % "|".join(map(re.escape, COMMANDS)))
FLAG = re.compile(r"(^|[\s'\"(`=\[])--[a-z][a-z0-9-]*")
# A public declaration (attributes first allowed), not `public import`.
PUBLIC = re.compile(r"\s*(@\w+(\([^)]*\))?\s+)*(public|open)\s(?!import\b)")


def scan(text):
    """Yields (kind, line, content) for each comment-free code line ("code")
    and for each piece of a string literal ("string"), in a rough Swift
    lexer: //, /* */, "…", \"\"\"…\"\"\" and #"…"# with interpolations."""
    i, line, n = 0, 1, len(text)
    code_start, code_line = 0, 1

    def string_at(i):
        hashes = 0
        while i + hashes < n and text[i + hashes] == "#":
            hashes += 1
        return hashes if i + hashes < n and text[i + hashes] == '"' else -1

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            yield "code", code_line, text[code_start:i]
            end = text.find("\n", i)
            i = n if end < 0 else end
            code_start, code_line = i, line
            continue
        if text.startswith("/*", i):
            yield "code", code_line, text[code_start:i]
            end = text.find("*/", i)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
            code_start, code_line = i, line
            continue
        if c in '"#' and (hashes := string_at(i)) >= 0:
            yield "code", code_line, text[code_start:i]
            i += hashes
            multi = text.startswith('"""', i)
            quote = '"""' if multi else '"'
            close = quote + "#" * hashes
            i += len(quote)
            piece, piece_line = [], line
            while i < n and not text.startswith(close, i):
                if text.startswith("\\" + "#" * hashes + "(", i):
                    # An interpolation is code, up to its closing parenthesis.
                    depth, i = 1, i + 2 + hashes
                    start, start_line = i, line
                    while i < n and depth:
                        depth += {"(": 1, ")": -1}.get(text[i], 0)
                        line += text[i] == "\n"
                        i += 1
                    for kind, inner, content in scan(text[start : i - 1]):
                        yield kind, start_line + inner - 1, content
                    piece.append(" ")
                    continue
                if text.startswith("\\" + "#" * hashes, i):
                    piece.append(text[i : i + 2 + hashes])
                    i += 2 + hashes
                    continue
                if text[i] == "\n":
                    yield "string", piece_line, "".join(piece)
                    piece, piece_line = [], line + 1
                    line += 1
                else:
                    piece.append(text[i])
                i += 1
            yield "string", piece_line, "".join(piece)
            i += len(close)
            code_start, code_line = i, line
            continue
        if c == "\n":
            yield "code", code_line, text[code_start:i]
            line += 1
            code_start, code_line = i + 1, line
        i += 1
    yield "code", code_line, text[code_start:i]


def swift_files(target):
    for base, _, files in os.walk(os.path.join(ROOT, "Sources", target)):
        for name in sorted(files):
            if name.endswith(".swift"):
                path = os.path.join(base, name)
                yield os.path.relpath(path, ROOT), open(path, encoding="utf-8").read()


def undocumented(path, text):
    """A problem for each public declaration whose line above (attributes
    skipped) is not a `///` comment."""
    lines = text.split("\n")
    found = []
    for number, line in enumerate(lines):
        if not PUBLIC.match(line):
            continue
        above = number - 1
        while above >= 0 and re.match(r"\s*@\w+", lines[above]):
            above -= 1
        if above < 0 or not lines[above].strip().startswith("///"):
            found.append(f"{path}:{number + 1}: a public declaration without a `///` comment")
    return found


def main():
    problems = []
    for target in LIBRARIES:
        for path, text in swift_files(target):
            if path in GENERATED:
                continue
            problems += undocumented(path, text)
            for kind, line, content in scan(text):
                if kind == "code" and target in CLOCK_FREE and CLOCK.search(content):
                    problems.append(f"{path}:{line}: reads the wall clock; take `now` from the caller")
                if kind == "string" and COMMAND.search(content):
                    problems.append(f"{path}:{line}: names a guestmode command; add it as a CLI hint instead")
                if kind == "string" and FLAG.search(content):
                    problems.append(f"{path}:{line}: names a command-line flag; add it as a CLI hint instead")
    manifest = open(os.path.join(ROOT, "Package.swift"), encoding="utf-8").read()
    for match in re.finditer(r"\.(target|executableTarget|testTarget)\(\s*name: \"([\w-]+)\"", manifest):
        end = manifest.find("\n        ),", match.end())
        if "swiftSettings: strict" not in manifest[match.end() : end]:
            problems.append(f"Package.swift: target {match.group(2)} lacks `swiftSettings: strict`")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
