#!/usr/bin/env bash
# The server side of `make bench`: wrk against `guestmode serve` on SQLite and on PostgreSQL, with the two
# anchors measured in the same run:
#   - floor:   Hummingbird's own minimal route (Sources/ServeFloor) on the same framework and machine, the
#              request rate any Hummingbird service is bounded by;
#   - pgbench: the SQL transaction `meter use` runs (bench/plain/meter-use.pgbench, copied from the
#              server's statement log), run by pgbench on the same PostgreSQL server.
# Workloads, each BENCH_SERVE_SECONDS (default 20) at BENCH_SERVE_CONNECTIONS (default 64), over
# BENCH_SERVE_USERS premium voice users (default 256) picked at random per request:
#   meter check  GET  /v1/users/U/meters/api_minutes/check?amount=1
#   meter use    POST /v1/users/U/meters/api_minutes/use   a new id on every request
#   record put   PUT  /v1/users/U/records/commands/K       a new key on every request
#   prompt next  GET  /v1/users/U/prompts/next
#   record get   GET  /v1/users/U/records/commands/seed   one record each user has (put before the run)
# Each row: requests per second, p50 and p99 latency, non-2xx answers and socket errors, and the server's
# peak resident memory (VmHWM) over the whole backend's run. Needs a server: run it inside
# scripts/with-postgres.sh. Usage: bench/serve.sh [guestmode] [ServeFloor]. It exits 1 when any request got
# an answer other than 2xx; `make test` runs it for a second per workload, so it cannot rot.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
binary=$(realpath "${1:-$root/.build/release/guestmode}")
floor=$(realpath "${2:-$root/.build/release/ServeFloor}")
seconds=${BENCH_SERVE_SECONDS:-20}
connections=${BENCH_SERVE_CONNECTIONS:-64}
users=${BENCH_SERVE_USERS:-256}
: "${GUESTMODE_TEST_POSTGRES:?serve bench: no PostgreSQL server; run it as scripts/with-postgres.sh bench/serve.sh}"
for tool in wrk pgbench psql curl; do
    command -v "$tool" >/dev/null || { echo "serve bench: $tool is missing (make deps installs it)" >&2; exit 1; }
done

work=$(mktemp -d)
server=""
stop_server() {
    if [ -n "$server" ]; then
        kill -TERM "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
        server=""
    fi
}
trap 'stop_server; rm -rf "$work"' EXIT
cd "$work"
export GUESTMODE_TEMPLATES="$root/Templates" NO_COLOR=1 GUESTMODE_BACKUP_KEY_FILE="$work/deployment.key"
export BENCH_USERS=$users BENCH_LUA_DIR="$root/bench/plain"
schema=bench_serve
plain=bench_serve_plain
failed=0

# Starts a server (a command line) in the background and waits for its "listening on URL" line.
start_server() {
    "$@" >server.out 2>server.err &
    server=$!
    for _ in $(seq 300); do
        grep -q '^listening on ' server.out 2>/dev/null && break
        kill -0 "$server" 2>/dev/null || { cat server.err >&2; echo "serve bench: the server did not start" >&2; exit 1; }
        sleep 0.1
    done
    base=$(sed -n 's/^listening on //p' server.out | head -n 1)
}

# The server's peak resident memory so far, in MB.
peak_mb() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$server/status"; }

# One wrk run; prints "requests/s p50_ms p99_ms non_2xx errors".
run_wrk() {
    local script=$1 url=$2
    wrk -t 2 -c "$connections" -d "${seconds}s" --latency -s "$root/bench/plain/$script" "$url" >wrk.out 2>&1 \
        || { cat wrk.out >&2; exit 1; }
    awk '
        function ms(value) {
            if (value ~ /us$/) return value / 1000
            if (value ~ /ms$/) return value + 0
            if (value ~ /s$/) return value * 1000
            return value
        }
        /^Requests\/sec:/ { rate = $2 }
        $1 == "50.000%" || $1 == "50%" { p50 = ms($2) }
        $1 == "99.000%" || $1 == "99%" { p99 = ms($2) }
        /Non-2xx or 3xx responses:/ { non2xx = $NF }
        /Socket errors:/ { errors = $4 + $6 + $8 + $10; gsub(/,/, "", errors) }
        END { printf "%.0f %.2f %.2f %d %d\n", rate, p50, p99, non2xx, errors }
    ' wrk.out
}

row() {
    printf '| %-28s | %9s | %7s | %7s | %7s | %8s |\n' "$@"
}

# Users bench-user-1 … bench-user-N, each premium (unlimited minutes): created by one ingest, then granted.
seed() {
    local -a store=("$@")
    awk -v n="$users" 'BEGIN { for (i = 1; i <= n; i++)
        printf "{\"user\":\"bench-user-%d\",\"action\":\"app_opened\",\"at\":\"2026-11-01T08:00:00Z\"}\n", i }' >users.ndjson
    "$binary" "${store[@]}" track --from users.ndjson --create-users --quiet
    for i in $(seq "$users"); do
        "$binary" "${store[@]}" --now 2026-11-01T09:00:00Z plan grant "bench-user-$i" premium --quiet >/dev/null
    done
}

# The five workloads against one backend's server; one table row each.
measure_backend() {
    local name=$1
    shift
    local -a store=("$@")
    key=$("$binary" "${store[@]}" serve key create "bench-$name-$$" --scope user-data --quiet)
    export BENCH_AUTHORIZATION="Bearer $key"
    # For curl, from a file: a secret on a command line shows in ps.
    printf 'Authorization: Bearer %s\n' "$key" >authorization.header
    # wrk is one client address with BENCH_SERVE_CONNECTIONS connections: the per-address limits, there to
    # keep one client from holding the server, would measure themselves instead of the server.
    start_server "$binary" "${store[@]}" serve --listen 127.0.0.1:0 --connections-per-address 0 \
        --requests-per-address 0
    # The record `record get` reads, one per user, put through the server (a command per user would take longer).
    for i in $(seq "$users"); do
        curl -sSf -o /dev/null -X PUT -H @authorization.header -H "Content-Type: application/json" \
            --data '{"phrase": "lights on", "seconds": 2}' "$base/v1/users/bench-user-$i/records/commands/seed"
    done
    for workload in "meter check:meter-check.lua" "meter use:meter-use.lua" "record put:record-put.lua" \
        "prompt next:prompt-next.lua" "record get:record-get.lua"; do
        read -r rate p50 p99 non2xx errors < <(run_wrk "${workload#*:}" "$base")
        if [ "$non2xx" != 0 ] || [ "$errors" != 0 ]; then
            echo "serve bench: $name ${workload%%:*}: $non2xx non-2xx answers, $errors socket errors" >&2
            failed=1
        fi
        row "$name ${workload%%:*}" "$rate" "$p50" "$p99" "$non2xx/$errors" "$(peak_mb)"
    done
    stop_server
}

echo "serve: wrk -t 2 -c $connections -d ${seconds}s, $users premium voice users, on $(nproc) cores"
row "work" "req/s" "p50 ms" "p99 ms" "bad" "peak MB"
row "----------------------------" "---------" "-------" "-------" "-------" "--------"

start_server "$floor"
read -r rate p50 p99 non2xx errors < <(run_wrk floor.lua "$base")
row "floor: Hummingbird route" "$rate" "$p50" "$p99" "$non2xx/$errors" "$(peak_mb)"
stop_server

"$binary" --store serve.sqlite init --profile voice --quiet >/dev/null
seed --store serve.sqlite
measure_backend sqlite --store serve.sqlite

for name in "$schema" "$plain"; do
    psql -X -q -c "DROP SCHEMA IF EXISTS $name CASCADE" 2>/dev/null
    "$binary" --store "$GUESTMODE_TEST_POSTGRES" --schema "$name" init --profile voice --quiet >/dev/null
    seed --store "$GUESTMODE_TEST_POSTGRES" --schema "$name"
done
measure_backend postgres --store "$GUESTMODE_TEST_POSTGRES" --schema "$schema"

# The anchor for writes on PostgreSQL: the same transaction, as many clients, as long.
PGOPTIONS="-c search_path=$plain" pgbench -n -M prepared -c "$connections" -j 2 -T "$seconds" -D users="$users" \
    -f "$root/bench/plain/meter-use.pgbench" >pgbench.out 2>&1 || { cat pgbench.out >&2; exit 1; }
tps=$(awk '/^tps = / { printf "%.0f", $3 }' pgbench.out)
latency=$(awk '/^latency average = / { print $4 }' pgbench.out)
row "pgbench: meter use SQL" "$tps" "-" "-" "avg $latency" "-"
for name in "$schema" "$plain"; do psql -X -q -c "DROP SCHEMA $name CASCADE" 2>/dev/null; done
# A benchmark whose requests failed measured nothing: say so with the exit status (make test runs it small).
exit "$failed"
