#!/usr/bin/env bash
# Fails when SQL, GRDB or libpq shows up outside the backend targets, or a C
# library outside its one binding file (the engine holds no SQL and knows no
# database or C library); when a backend takes a decision (reads the profile
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
[ "$status" = 0 ] && echo "layout: no SQL outside the backends, no decision in them, no database, C library, CLI or platform-only import in the engine, no refusal worded outside it;" \
    "no wall clock in the engine or archives, no CLI command or flag in a library string, every public declaration documented, warnings are errors"
exit "$status"
