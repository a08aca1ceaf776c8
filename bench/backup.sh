#!/usr/bin/env bash
# Backup export throughput and peak memory: guestmode against the plain tools
# (sqlite3 -json piped into zstd) exporting the same user's rows, side by side
# in one run. Usage: bench/backup.sh [path/to/guestmode]
# BENCH_RECORDS overrides the number of records (default 1000000).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
binary=$(realpath "${1:-$root/.build/release/guestmode}")
records=${BENCH_RECORDS:-1000000}
memory_limit_mb=200

for tool in sqlite3 zstd /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "backup bench: $tool is missing (make deps installs it)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GUESTMODE_TEMPLATES="$root/Templates" GUESTMODE_STORE="$work/store.sqlite" NO_COLOR=1

"$binary" init --profile habits --quiet >/dev/null
sqlite3 store.sqlite <<SQL
INSERT INTO users (id, created_at, last_seen_at) VALUES ('bench', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $records)
INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
SELECT 'bench', 'completions', printf('c%07d', i),
       json_object('habit', 'h' || (i % 20), 'day', date('2026-01-01', '+' || (i % 365) || ' days'), 'note', 'completed ' || i),
       strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || i || ' seconds'),
       strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || i || ' seconds')
FROM n;
SQL

# Runs a command under GNU time; prints "seconds peak_kb".
measure() {
    /usr/bin/time -v "$@" 2> time.log >/dev/null
    awk -F': ' '
        /Elapsed \(wall clock\)/ { n = split($2, part, ":"); seconds = 0; for (i = 1; i <= n; i++) seconds = seconds * 60 + part[i] }
        /Maximum resident set size/ { peak = $2 }
        END { printf "%.3f %d\n", seconds, peak }' time.log
}

read -r ours_seconds ours_kb < <(measure "$binary" backup export bench --out bench.gmbackup)
read -r plain_seconds plain_kb < <(measure sh -c \
    "sqlite3 -json store.sqlite \"SELECT * FROM records WHERE owner_id = 'bench' ORDER BY rowid\" | zstd -q -3 -o plain.json.zst")
"$binary" backup verify bench.gmbackup --quiet

ours_bytes=$(stat -c %s bench.gmbackup)
plain_bytes=$(stat -c %s plain.json.zst)
awk -v records="$records" -v os="$ours_seconds" -v ps="$plain_seconds" -v ok="$ours_kb" -v pk="$plain_kb" \
    -v ob="$ours_bytes" -v pb="$plain_bytes" -v limit="$memory_limit_mb" 'BEGIN {
    printf "backup export, one user with %d records\n", records
    printf "  %-28s %8.2f s %12.0f rows/s %8.1f MB peak %10d bytes\n", "guestmode backup export", os, records / (os > 0 ? os : 0.001), ok / 1024, ob
    printf "  %-28s %8.2f s %12.0f rows/s %8.1f MB peak %10d bytes\n", "sqlite3 -json | zstd", ps, records / (ps > 0 ? ps : 0.001), pk / 1024, pb
    printf "  throughput ratio (guestmode / plain): %.2f\n", (ps > 0 ? ps : 0.001) / (os > 0 ? os : 0.001)
    printf "  peak memory: %.1f MB against a limit of %d MB: %s\n", ok / 1024, limit, (ok / 1024 < limit ? "ok" : "OVER")
    exit (ok / 1024 < limit ? 0 : 1)
}'
