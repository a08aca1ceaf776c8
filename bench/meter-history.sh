#!/usr/bin/env bash
# A meter's cost against the length of its history: `meter check` and `meter use` for a user with
# METER_USES (default 1,000,000) uses in the period beside the same command for a user with one, on
# SQLite (callgrind instructions, the whole process) and, when GUESTMODE_TEST_POSTGRES names a server
# (scripts/with-postgres.sh), on PostgreSQL (median wall time of 5 runs: the work is the server's).
# Then the same for two users holding a meter grant given before all their uses, so each use drew on
# it (the grant draws a meter with grants reads).
# Usage: bench/meter-history.sh path/to/guestmode
set -euo pipefail
binary=$(realpath "${1:?usage: bench/meter-history.sh path/to/guestmode}")
uses=${METER_USES:-1000000}
for tool in sqlite3 valgrind awk strip; do
    command -v "$tool" >/dev/null || { echo "meter-history: $tool is missing (make deps)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GUESTMODE_NOW=2026-11-15T10:00:00Z
strip --strip-debug -o guestmode-stripped "$binary"

instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/Collected :/ { print $NF }'
}
median_ms() {
    for _ in 1 2 3 4 5; do
        s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(((e - s) / 1000))
    done | sort -n | awk 'NR == 3 { printf "%.1f", $1 / 1000 }'
}
# The heavy user's uses: tiny amounts, all in the current month, so every use is still allowed.
seed_sql() {
    echo "INSERT INTO meter_usage (user_id, meter, amount, at) SELECT '$1', 'api_minutes', 0.00001, '2026-11-0' || (1 + i % 9) || 'T08:00:00.000Z' FROM $2;"
}
# Two users holding a grant of 5 minutes given before their uses (at the start of the month).
grant_users() {
    for user in "$@"; do
        GUESTMODE_NOW=2026-11-01T00:00:00Z "$binary" meter grant "$user" api_minutes 5 >/dev/null
    done
}
row() { awk -v w="$1" -v h="$2" -v l="$3" -v u="$4" 'BEGIN { printf "%-46s %12s %12s %7.3fx  (%s)\n", w, h, l, h / l, u }'; }

echo "meter history: $uses uses against 1, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-46s %12s %12s %8s\n" "" "1 M uses" "1 use" "ratio"

"$binary" init --profile voice >/dev/null
heavy=$("$binary" guest new --json | awk -F'"' '/"user_id"/ { print $4 }')
light=$("$binary" guest new --json | awk -F'"' '/"user_id"/ { print $4 }')
sqlite3 guestmode.sqlite "$(seed_sql "$heavy" "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $uses) SELECT i FROM n)")"
"$binary" meter use "$light" api_minutes 0.00001 >/dev/null
row "SQLite meter check" "$(instructions ./guestmode-stripped meter check "$heavy" api_minutes 1)" \
    "$(instructions ./guestmode-stripped meter check "$light" api_minutes 1)" "instructions"
row "SQLite meter use" "$(instructions ./guestmode-stripped meter use "$heavy" api_minutes 0.5)" \
    "$(instructions ./guestmode-stripped meter use "$light" api_minutes 0.5)" "instructions"
"$binary" db check >/dev/null
heavy=$("$binary" guest new --json | awk -F'"' '/"user_id"/ { print $4 }')
light=$("$binary" guest new --json | awk -F'"' '/"user_id"/ { print $4 }')
grant_users "$heavy" "$light"
sqlite3 guestmode.sqlite "$(seed_sql "$heavy" "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $uses) SELECT i FROM n)")"
# The first use after the seed finds no kept draws (the seed's insert deleted them) and rebuilds them.
"$binary" meter use "$heavy" api_minutes 0.00001 >/dev/null
"$binary" meter use "$light" api_minutes 0.00001 >/dev/null
row "SQLite meter check, with a grant" "$(instructions ./guestmode-stripped meter check "$heavy" api_minutes 1)" \
    "$(instructions ./guestmode-stripped meter check "$light" api_minutes 1)" "instructions"
row "SQLite meter use, with a grant" "$(instructions ./guestmode-stripped meter use "$heavy" api_minutes 0.5)" \
    "$(instructions ./guestmode-stripped meter use "$light" api_minutes 0.5)" "instructions"
"$binary" db check >/dev/null

if [ -n "${GUESTMODE_TEST_POSTGRES:-}" ]; then
    export GUESTMODE_STORE=$GUESTMODE_TEST_POSTGRES GUESTMODE_SCHEMA=meter_history_$$
    "$binary" init --profile voice >/dev/null
    heavy=$("$binary" guest new --json | awk -F'"' '/"user_id"/ { print $4 }')
    light=$("$binary" guest new --json | awk -F'"' '/"user_id"/ { print $4 }')
    psql -q -v ON_ERROR_STOP=1 -d "$GUESTMODE_STORE" -c "SET search_path TO $GUESTMODE_SCHEMA" \
        -c "$(seed_sql "$heavy" "generate_series(1, $uses) AS i")"
    "$binary" meter use "$light" api_minutes 0.00001 >/dev/null
    row "PostgreSQL meter check" "$(median_ms "$binary" meter check "$heavy" api_minutes 1)" \
        "$(median_ms "$binary" meter check "$light" api_minutes 1)" "ms, median of 5"
    row "PostgreSQL meter use" "$(median_ms "$binary" meter use "$heavy" api_minutes 0.01)" \
        "$(median_ms "$binary" meter use "$light" api_minutes 0.01)" "ms, median of 5"
    "$binary" db check >/dev/null
    heavy=$("$binary" guest new --json | awk -F'"' '/"user_id"/ { print $4 }')
    light=$("$binary" guest new --json | awk -F'"' '/"user_id"/ { print $4 }')
    grant_users "$heavy" "$light"
    psql -q -v ON_ERROR_STOP=1 -d "$GUESTMODE_STORE" -c "SET search_path TO $GUESTMODE_SCHEMA" \
        -c "$(seed_sql "$heavy" "generate_series(1, $uses) AS i")"
    "$binary" meter use "$heavy" api_minutes 0.00001 >/dev/null
    "$binary" meter use "$light" api_minutes 0.00001 >/dev/null
    row "PostgreSQL meter check, with a grant" "$(median_ms "$binary" meter check "$heavy" api_minutes 1)" \
        "$(median_ms "$binary" meter check "$light" api_minutes 1)" "ms, median of 5"
    row "PostgreSQL meter use, with a grant" "$(median_ms "$binary" meter use "$heavy" api_minutes 0.01)" \
        "$(median_ms "$binary" meter use "$light" api_minutes 0.01)" "ms, median of 5"
    "$binary" db check >/dev/null
    psql -q -d "$GUESTMODE_STORE" -c "SET client_min_messages TO warning" -c "DROP SCHEMA $GUESTMODE_SCHEMA CASCADE"
fi
