#!/usr/bin/env bash
# Event ingestion throughput: `guestmode track --from` against the sqlite3
# shell loading the same NDJSON log into the same tables (events appended,
# counters summed), side by side in one run. guestmode also validates every
# line first, dedupes idempotency keys and moves last-seen forward.
# Usage: bench/ingest.sh [path/to/guestmode]; BENCH_EVENTS overrides 200000.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
binary=$(realpath "${1:-$root/.build/release/guestmode}")
events=${BENCH_EVENTS:-200000}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GUESTMODE_TEMPLATES="$root/Templates" NO_COLOR=1

awk -v n="$events" 'BEGIN {
    split("app_opened recipe_created recipe_viewed video_generated", actions, " ")
    for (i = 0; i < n; i++)
        printf "{\"user\":\"u%d\",\"action\":\"%s\",\"at\":\"2026-11-01T10:00:00Z\",\"id\":\"e%d\"}\n", i % 1000, actions[i % 4 + 1], i
}' > events.ndjson

"$binary" init --profile recipes --store ours.sqlite --quiet
"$binary" init --profile recipes --store plain.sqlite --quiet

seconds() { local start end; start=$(date +%s.%N); "$@" >/dev/null; end=$(date +%s.%N); echo "$end - $start" | bc -l; }

ours=$(seconds "$binary" --store ours.sqlite track --from events.ndjson --create-users --quiet)
plain=$(seconds sqlite3 plain.sqlite <<'SQL'
CREATE TEMP TABLE raw (line TEXT);
.import events.ndjson raw
BEGIN;
INSERT OR IGNORE INTO users (id, created_at, last_seen_at)
    SELECT DISTINCT line ->> 'user', line ->> 'at', line ->> 'at' FROM raw;
INSERT INTO events (user_id, action, at, count, idempotency_key)
    SELECT line ->> 'user', line ->> 'action', line ->> 'at', 1, line ->> 'id' FROM raw;
INSERT INTO counters (user_id, action, total)
    SELECT line ->> 'user', line ->> 'action', COUNT(*) FROM raw GROUP BY 1, 2;
COMMIT;
SQL
)
same=$(sqlite3 ours.sqlite "SELECT group_concat(user_id || action || total) FROM (SELECT * FROM counters ORDER BY 1, 2)")
theirs=$(sqlite3 plain.sqlite "SELECT group_concat(user_id || action || total) FROM (SELECT * FROM counters ORDER BY 1, 2)")
[ "$same" = "$theirs" ] || { echo "ingest bench: the two stores disagree on counters" >&2; exit 1; }

awk -v n="$events" -v os="$ours" -v ps="$plain" 'BEGIN {
    printf "event ingestion, %d NDJSON lines for 1000 users\n", n
    printf "  %-34s %8.2f s %12.0f events/s\n", "guestmode track --from", os, n / os
    printf "  %-34s %8.2f s %12.0f events/s\n", "sqlite3 .import + INSERT SELECT", ps, n / ps
    printf "  throughput ratio (guestmode / plain): %.2f\n", ps / os
}'
