#!/usr/bin/env bash
# Fails when SQL, GRDB or libpq shows up outside the backend targets, or a C
# library (SQLite, libpq, libarchive, libcurl) is called outside its one
# binding file (the engine holds no SQL and knows no database or C
# library); when a backend takes a decision (reads the profile
# or calls an engine policy: a backend holds SQL, row decoding, pooling and
# retries only); when the engine or the archive target reads the
# wall clock; when a library string names a command or a flag; when a target
# does not turn compiler warnings into errors (scripts/check-sources.py).
# Run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
backends='^Sources/GuestModeSQLite/|^Sources/GuestModePostgres/'
# `sql:` arguments and statements opening a string literal: "SELECT …", """ then INSERT …
sql=$(grep -rnE --include='*.swift' '(^|[^A-Za-z])sql:|"(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA) |^[[:space:]]*(SELECT|INSERT INTO|UPDATE [a-z_]+ SET|DELETE FROM) ' Sources \
    | grep -vE "$backends" || true)
if [ -n "$sql" ]; then
    echo "SQL outside the backend targets (move it into GuestModeSQLite or GuestModePostgres):" >&2
    echo "$sql" >&2
    status=1
fi
imports=$(grep -rnE --include='*.swift' '^(@preconcurrency |internal |public |@_implementationOnly )*import (GRDB|CLibPQ|CArchive|ArgumentParser)\b' Sources/GuestModeKit || true)
if [ -n "$imports" ]; then
    echo "The engine imports a database, C library or the argument parser:" >&2
    echo "$imports" >&2
    status=1
fi
# The engine is what an iPhone app embeds (Package.swift's platforms): only what every Apple platform and
# Linux have, so no libc module but under `#if canImport`, and no package beyond its three.
portable=$(grep -rnE --include='*.swift' '^(@preconcurrency |internal |public |package |@_implementationOnly )*import ' Sources/GuestModeKit \
    | grep -vE 'import (Foundation|Dispatch|Synchronization|Crypto|_CryptoExtras|Yams)$' || true)
if [ -n "$portable" ]; then
    echo "The engine imports what an Apple platform or Linux lacks (GuestModeKit: Foundation, Crypto, Yams only):" >&2
    echo "$portable" >&2
    status=1
fi
# Each C library is called from one Swift file, which turns its errors into Swift errors and frees its
# handles (the brief's "C bindings"); every other file uses that file's Swift API. C headers (shim.h) aside.
for binding in 'sqlite3_:Sources/GuestModeSQLite/Store/SQLiteCAPI.swift' \
    'PQ[a-z]*\(:Sources/GuestModePostgres/Connection/PostgresConnection.swift' \
    'archive_[a-z_]*\(:Sources/GuestModeArchive/Archive/ArchiveIO.swift' \
    'curl_[a-z_]*\(:Sources/GuestModeRemote/HTTPTransport.swift'; do
    pattern=${binding%%:*}
    file=${binding#*:}
    calls=$(grep -rnE --include='*.swift' "(^|[^A-Za-z0-9_])$pattern" Sources | grep -v "^$file:" || true)
    if [ -n "$calls" ]; then
        echo "A C library called outside its one binding file (move the call into $file, use its Swift API):" >&2
        echo "$calls" >&2
        status=1
    fi
done
# A refusal (a cap, a meter) is a value the engine words once; the front ends throw or answer it.
refusals=$(grep -rnE --include='*.swift' 'is at its cap|nothing was (recorded|stored)|not enough left:' Sources \
    | grep -v '^Sources/GuestModeKit/' || true)
if [ -n "$refusals" ]; then
    echo "A refusal worded outside the engine (build it in GuestModeKit's Refusal, answer refusal.failure):" >&2
    echo "$refusals" >&2
    status=1
fi
# ArgumentParser's unstable help dump is no run-time interface (UsageErrors reads the commands themselves).
dump=$(grep -rn --include='*.swift' 'experimental-dump-help' Sources || true)
if [ -n "$dump" ]; then
    echo "The command line calls --experimental-dump-help at run time:" >&2
    echo "$dump" >&2
    status=1
fi
# A GET is safe (RFC 9110 9.2.1): no GET route may reach an engine call that writes. The engine's
# writers are found, not listed: a function of GuestModeKit writes when its body opens a write on the
# store or calls (by name and argument labels) a function that writes. A GET handler (`.get(… use: h)`)
# may neither call such a function on the engine nor answer through `services.idempotent`. The old
# `GET …/meters/:meter/check` failed it: `checkMeter` called `raisePromptTriggers`, a `store.write`.
unsafe=$(python3 - <<'EOF'
import glob, re

def body_at(text, start):
    """The text from the `{` at or after `start` to its matching `}`."""
    open_at = text.index("{", start)
    depth = 0
    for index in range(open_at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[open_at:index + 1]
    return text[open_at:]

def top_level_labels(text, open_at):
    """The argument labels of the call or declaration whose `(` is at `open_at`."""
    depth, labels, token = 0, [], ""
    for char in text[open_at:]:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                break
        if depth == 1 and char == ":" and token:
            labels.append(token.split()[0] if token.split() else token)
        if depth == 1 and (char.isalnum() or char == "_" or char == " "):
            token = token + char if not (char == " " and not token) else token
        elif depth == 1:
            token = ""
    return labels

declaration = re.compile(r"\bfunc\s+(\w+)\s*(<[^>]*>)?\s*\(")
writes = re.compile(r"\bstore\.(write|rehearse|bindProfile|saveProfileCache|applyPendingMigrations|importBackupRows|replaceOwnTableRows)\b|\banswerOnce\(")
functions = []  # (name, labels, body)
for path in glob.glob("Sources/GuestModeKit/**/*.swift", recursive=True):
    text = open(path).read()
    for match in declaration.finditer(text):
        labels = [label for label in top_level_labels(text, match.end() - 1) if label != "_"]
        signature_end = text.find("{", match.end())
        if signature_end < 0 or "\n}" in text[match.end():signature_end]:
            continue  # a protocol requirement: no body
        functions.append((match.group(1), labels, body_at(text, match.end())))

def call_labels(text, open_at):
    return [label for label in top_level_labels(text, open_at)]

def callees(body, names):
    for match in re.finditer(r"(?<![\w.])(?:self\.|engine\.)?(\w+)\(", body):
        if match.group(1) in names:
            yield match.group(1), call_labels(body, match.end() - 1)

def matches(call, function):
    (name, labels), (declared, declared_labels, _) = call, function
    return name == declared and set(labels) <= set(declared_labels)

names = {function[0] for function in functions}
writing = [bool(writes.search(function[2])) for function in functions]
changed = True
while changed:
    changed = False
    for index, function in enumerate(functions):
        if writing[index]:
            continue
        for call in callees(function[2], names):
            if any(writing[other] and matches(call, functions[other]) for other in range(len(functions))):
                writing[index] = changed = True
                break

# Sticky enrolment: a prompt decision stores the user's first experiment assignment, as GrowthBook's
# SDKs do; the hash gives the same variant every time, so a repeated GET answers the same.
enrolling = {"explainPrompt"}
handlers = []
for path in glob.glob("Sources/GuestModeServer/**/*.swift", recursive=True):
    text = open(path).read()
    for match in re.finditer(r"\.get\((?:\"[^\"]*\",\s*)?use:\s*(?:\w+\([^)]*\)\.)?(\w+)\)", text):
        handlers.append(match.group(1))
for path in glob.glob("Sources/GuestModeServer/**/*.swift", recursive=True):
    text = open(path).read()
    for match in re.finditer(r"func\s+(\w+)\(_ request: Request", text):
        if match.group(1) not in handlers:
            continue
        body = body_at(text, match.end())
        line = text[:match.start()].count("\n") + 1
        if "services.idempotent(" in body:
            print(f"{path}:{line}: GET handler {match.group(1)} answers through services.idempotent (a write)")
        for call in re.finditer(r"\bengine\.(\w+)\(", body):
            labels = call_labels(body, call.end() - 1)
            if call.group(1) in enrolling:
                continue
            if any(writing[i] and matches((call.group(1), labels), functions[i]) for i in range(len(functions))):
                print(f"{path}:{line}: GET handler {match.group(1)} calls engine.{call.group(1)}({''.join(l + ':' for l in labels)}), which writes")
EOF
)
if [ -n "$unsafe" ]; then
    echo "A GET route writes (make the engine call a pure read, or the route a POST):" >&2
    echo "$unsafe" >&2
    status=1
fi
# The profile and the engine's policies: caps, plans, meters, merges, adoption, purges, the outbox's retries.
policies='profile\.[a-z]|: Profile\b|\b(MergePolicy|MergeResolution|PurgePolicy|OutboxRetryPolicy|RecordConflictPolicy|PromptPolicy|IdentityPolicy|MigrationPolicy|BackupPolicy|ReportPolicy)\b|\.(collectionLimit|admits|exactAllowance|periodStart|warningsReached|adoptedKey|isCandidate|nextAttempt|isHeld|keptBothKeys|settling|resolution|planStatuses|median|average)\(|\.tier\(for:'
decisions=$(grep -rnE --include='*.swift' "$policies" Sources/GuestModeSQLite Sources/GuestModePostgres \
    | grep -vE '^[^:]+:[0-9]+:[[:space:]]*///?|"[^"]*profile\.yaml' || true)
if [ -n "$decisions" ]; then
    echo "A backend takes a decision (the profile or an engine policy in GuestModeSQLite or GuestModePostgres); move it into GuestModeKit:" >&2
    echo "$decisions" >&2
    status=1
fi
if ! python3 scripts/check-sources.py; then
    echo "(the rules are in scripts/check-sources.py)" >&2
    status=1
fi
[ "$status" = 0 ] && echo "layout: no SQL outside the backends, no decision in them, no database, C library, CLI or platform-only import in the engine, each C library called from its one binding file, no refusal worded outside it, no GET route that writes;" \
    "no wall clock in the engine or archives, no CLI command or flag in a library string, every public declaration documented, warnings are errors"
exit "$status"
