#!/usr/bin/env bash
# `user find` at FIND_USERS users (default 1,000,000) on SQLite and PostgreSQL, beside sqlite3 and psql doing
# the same lookup, in minutes rather than make scale's hours: the users are written by SQL into stores
# `guestmode init` made (one in ten, g1, g11, …, with an Apple identity carrying an upper-case email and a
# device of its own), then each lookup runs 5 times (median wall time, peak memory) and once under callgrind,
# on that store and on one of 2 users: equal instructions mean the lookup read an index, not the users.
# Ends with the query plans at that size, PostgreSQL's unforced. Figures in bench/scale.md.
# Usage: scripts/with-postgres.sh bench/find.sh [path/to/guestmode]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(realpath "${1:-$root/.build/release/guestmode}")
n=${FIND_USERS:-1000000}
: "${GUESTMODE_TEST_POSTGRES:?find: no PostgreSQL server; run it as scripts/with-postgres.sh bench/find.sh}"
uri=$GUESTMODE_TEST_POSTGRES
for tool in sqlite3 psql valgrind /usr/bin/time strip; do
    command -v "$tool" >/dev/null || { echo "find: $tool is missing (make deps installs it)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/guestmode-find.XXXXXX")
trap 'for size in big alone; do psql -X -q -c "DROP SCHEMA IF EXISTS find_$size CASCADE" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT
cd "$work"
export GUESTMODE_TEMPLATES="$root/Templates" NO_COLOR=1
unset GUESTMODE_STORE GUESTMODE_SCHEMA
fill() { # the identities and devices, the same SQL on both backends
cat <<SQL
INSERT INTO identities (provider, subject, user_id, email, linked_at)
    SELECT 'apple', 'apple-' || id, id, upper(id) || '@EXAMPLE.com', created_at FROM users WHERE id LIKE '%1';
UPDATE users SET device = 'device-' || id WHERE id LIKE '%1';
SQL
}
users_sqlite() { echo "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $1 - 1)
INSERT INTO users (id, state, prompt_state, created_at, last_seen_at)
    SELECT 'g' || i, 'anonymous', 'anonymous', '2026-11-10T10:00:00.000Z', '2026-11-10T10:00:00.000Z' FROM n;"; }
users_pg() { echo "INSERT INTO users (id, state, prompt_state, created_at, last_seen_at)
    SELECT 'g' || i, 'anonymous', 'anonymous', '2026-11-10T10:00:00.000Z', '2026-11-10T10:00:00.000Z'
    FROM generate_series(0, $1 - 1) AS i;"; }
for size in big alone; do
    count=$([ $size = big ] && echo "$n" || echo 2)
    "$bin" init --profile recipes --store $size.sqlite --quiet >/dev/null
    { users_sqlite "$count"; fill; } | sqlite3 -bail $size.sqlite
    psql -X -q -c "DROP SCHEMA IF EXISTS find_$size CASCADE" >/dev/null 2>&1
    "$bin" init --profile recipes --store "$uri" --schema find_$size --quiet >/dev/null
    { users_pg "$count"; fill; echo "ANALYZE;"; } | PGOPTIONS="-c search_path=find_$size" psql -X -q -v ON_ERROR_STOP=1 >/dev/null
done
strip --strip-debug -o gm "$bin"
median() { sort -n | sed -n 3p; }
timed() { # command… → median wall seconds of 5 runs, and max RSS kB of the last
    local t=()
    for _ in 1 2 3 4 5; do /usr/bin/time -f '%e %M' -o t.log "$@" >out.txt 2>err.txt; t+=("$(cut -d' ' -f1 t.log)"); done
    echo "$(printf '%s\n' "${t[@]}" | median) $(cut -d' ' -f2 t.log)"
}
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/Collected :/ { print $NF }'; }
printf '%-9s %-18s %10s %7s %12s %12s %7s %10s %7s\n' backend lookup guestmode MB "instr (M)" "alone (M)" ratio plain "plain MB"
for backend in sqlite postgres; do
    for lookup in "identity apple:apple-g1" "email g1@example.com" "device device-g1"; do
        read -r kind value <<< "$lookup"
        collate=""; [ $backend = sqlite ] || collate=' COLLATE "C"'
        case $kind in
        identity) sql="SELECT user_id FROM identities WHERE provider = 'apple' AND subject = 'apple-g1'" ;;
        email) sql="SELECT user_id FROM identities WHERE (email IS NOT NULL OR provider = 'email') AND lower(coalesce(email, subject)$collate) = 'g1@example.com'" ;;
        device) sql="SELECT id FROM users WHERE device = 'device-g1'" ;;
        esac
        if [ $backend = sqlite ]; then big=(--store big.sqlite) alone=(--store alone.sqlite) plain=(sqlite3 big.sqlite "$sql")
        else big=(--store "$uri" --schema find_big) alone=(--store "$uri" --schema find_alone)
            plain=(env PGOPTIONS="-c search_path=find_big" psql -X -At -c "$sql"); fi
        found=$("$bin" "${big[@]}" user find "--$kind" "$value" -q)
        [ "$found" = g1 ] || { echo "user find --$kind: '$found'" >&2; exit 1; }
        [ "$("${plain[@]}")" = g1 ] || { echo "plain $kind: wrong" >&2; exit 1; }
        read -r gs gk < <(timed ./gm "${big[@]}" user find "--$kind" "$value" -q)
        read -r ps pk < <(timed "${plain[@]}")
        bi=$(ir ./gm "${big[@]}" user find "--$kind" "$value" -q)
        ai=$(ir ./gm "${alone[@]}" user find "--$kind" "$value" -q)
        awk -v b=$backend -v k="--$kind" -v gs="$gs" -v gk="$gk" -v bi="$bi" -v ai="$ai" -v ps="$ps" -v pk="$pk" 'BEGIN {
            printf "%-9s %-18s %9.3fs %7.1f %12.1f %12.1f %6.3fx %9.3fs %7.1f\n", b, k, gs, gk/1024, bi/1e6, ai/1e6, bi/ai, ps, pk/1024 }'
    done
done
echo "plans (SQLite, then PostgreSQL without forcing anything):"
sqlite3 big.sqlite "EXPLAIN QUERY PLAN SELECT u.id FROM users u WHERE u.id IN (SELECT user_id FROM identities WHERE (email IS NOT NULL OR provider = 'email') AND lower(coalesce(email, subject)) = lower('g1@example.com'))"
PGOPTIONS="-c search_path=find_big" psql -X -At -c "EXPLAIN SELECT u.id FROM users u WHERE u.id IN (SELECT user_id FROM identities WHERE (email IS NOT NULL OR provider = 'email') AND lower(coalesce(email, subject) COLLATE \"C\") = lower('g1@example.com'::text COLLATE \"C\"))"
PGOPTIONS="-c search_path=find_big" psql -X -At -c "EXPLAIN SELECT u.id FROM users u WHERE u.device = 'device-g1' ORDER BY u.created_at COLLATE \"C\", u.id COLLATE \"C\""
