#!/usr/bin/env bash
# `make bench`: every benchmark, guestmode side by side with the plain tools
# doing the same work, reported as ratios. Usage: bench/run.sh path/to/guestmode
# BENCH_SCALE scales the SQLite table (bench/table.sh); BENCH_EVENTS and
# BENCH_GUESTS the PostgreSQL side (bench/postgres.sh); BENCH_SERVE_SECONDS,
# BENCH_SERVE_CONNECTIONS and BENCH_SERVE_USERS the server side (bench/serve.sh); METER_USES the
# heavy user's history (bench/meter-history.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
binary=$(realpath "${1:-$here/../.build/release/guestmode}")
status=0
echo "load: $(uptime)"
bash "$here/table.sh" "$binary" || status=1
echo
# The PostgreSQL side needs a server: a throwaway one, removed at exit.
bash "$here/../scripts/with-postgres.sh" bash "$here/postgres.sh" "$binary" || status=1
echo
# A meter's cost against its history: a user with a million uses beside one with one, on both backends.
bash "$here/../scripts/with-postgres.sh" bash "$here/meter-history.sh" "$binary" || status=1
echo
# guestmode serve under wrk, beside Hummingbird's minimal route (built next to the binary) and pgbench.
bash "$here/../scripts/with-postgres.sh" bash "$here/serve.sh" "$binary" "$(dirname "$binary")/ServeFloor" || status=1
exit $status
