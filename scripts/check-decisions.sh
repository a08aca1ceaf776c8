#!/usr/bin/env bash
# Lists every place a backend still takes a decision: reads the profile or
# calls an engine policy (a backend holds SQL, row decoding, pooling and
# retries only; the engine decides). Fails while any is left. The events and
# reports areas have not moved to the transaction seam yet, so `make test`
# does not run this; `make check-decisions` does.
set -euo pipefail
cd "$(dirname "$0")/.."
# The profile and the engine's policies: caps, plans, meters, merges, adoption, purges, the outbox's retries.
policies='profile\.|: Profile\b|\b(MergePolicy|MergeResolution|PurgePolicy|OutboxRetryPolicy|RecordConflictPolicy|PromptPolicy|IdentityPolicy|MigrationPolicy|BackupPolicy)\b|\.(collectionLimit|admits|exactAllowance|periodStart|warningsReached|adoptedKey|isCandidate|nextAttempt|isHeld|keptBothKeys|settling|resolution|planStatuses)\(|\.tier\(for:'
decisions=$(grep -rnE --include='*.swift' "$policies" Sources/GuestModeSQLite Sources/GuestModePostgres | grep -vE '^[^:]+:[0-9]+:[[:space:]]*///?' || true)
if [ -n "$decisions" ]; then
    echo "A backend takes a decision (the profile or an engine policy in GuestModeSQLite or GuestModePostgres); move it into GuestModeKit:" >&2
    echo "$decisions" >&2
    exit 1
fi
echo "decisions: none in the backends"
