#!/usr/bin/env bash
# The PostgreSQL side of `make bench`: guestmode against psql doing the same
# work on the same server, in two schemas created by `guestmode init` (so the
# tables, indexes and foreign keys are identical), side by side in one run:
#   - ingest: `track --from --create-users` against `psql \copy` of the same
#     NDJSON into a staging table + `INSERT … SELECT` (users, events, counters);
#   - funnel: `report funnel` against the equivalent SQL, over every guest;
#   - purge:  `user purge` of the stale half of the guests against one raw
#     `DELETE` (the foreign keys cascade on both sides);
#   - import: `backup import` of one user's BENCH_RECORDS records (default
#     1000000, exported by guestmode from SQLite) against psql loading the
#     same rows (zstd-compressed NDJSON) through `\copy` into a staging table
#     + `INSERT … SELECT`;
#   - accounts: `user import` of BENCH_ACCOUNTS Firebase accounts (default
#     200000, one in ten with a Google identity) against psql `\copy` of the
#     same users and identities, already as the tables' CSV.
# Each line gives wall seconds and the client's peak memory (GNU time %M; the
# server's memory is shared and not counted), and the ratio guestmode / plain
# (time, lower is better). The results of both sides are compared; a mismatch
# fails the bench.
#
# Needs a server: run it inside scripts/with-postgres.sh, which exports
# GUESTMODE_TEST_POSTGRES and the PG* variables psql reads.
# Usage: bench/postgres.sh [path/to/guestmode]
# BENCH_EVENTS (default 1000000) and BENCH_GUESTS (default 2000000, half of
# them stale), BENCH_RECORDS and BENCH_ACCOUNTS make it smaller;
# BENCH_ONLY=ingest,funnel,purge,import,accounts runs some parts (funnel and
# purge need the guests, made whenever either runs).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
binary=$(realpath "${1:-$root/.build/release/guestmode}")
events=${BENCH_EVENTS:-1000000}
guests=${BENCH_GUESTS:-2000000}
records=${BENCH_RECORDS:-1000000}
accounts=${BENCH_ACCOUNTS:-200000}
only=${BENCH_ONLY:-ingest,funnel,purge,import,accounts}
wants() { [[ ",$only," == *",$1,"* ]]; }
: "${GUESTMODE_TEST_POSTGRES:?postgres bench: no server; run it as scripts/with-postgres.sh bench/postgres.sh}"
uri=$GUESTMODE_TEST_POSTGRES
ours=bench_ours
plain=bench_plain

for tool in psql /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "postgres bench: $tool is missing (make deps installs it)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GUESTMODE_TEMPLATES="$root/Templates" NO_COLOR=1
# A fixed clock: the purge cutoff (30 days before) and the data agree in any run.
now=2026-11-15T00:00:00Z
cutoff=2026-10-16T00:00:00.000Z

# psql in one schema, stopping at the first error, printing bare values.
sql() {
    local schema=$1
    shift
    PGOPTIONS="-c search_path=$schema" psql -X -q -v ON_ERROR_STOP=1 -At "$@"
}

# Runs a command under GNU time; prints "seconds peak_kb".
measure() {
    /usr/bin/time -f '%e %M' -o time.log "$@" >/dev/null
    cat time.log
}

# Prints one comparison: name, then seconds and kB of each side.
line() {
    awk -v name="$1" -v ours="$2" -v os="$3" -v ok="$4" -v plain="$5" -v ps="$6" -v pk="$7" -v n="$8" -v unit="$9" 'BEGIN {
        printf "%s\n", name
        printf "  %-36s %8.2f s %12.0f %s/s %8.1f MB peak\n", ours, os, n / (os > 0 ? os : 0.01), unit, ok / 1024
        printf "  %-36s %8.2f s %12.0f %s/s %8.1f MB peak\n", plain, ps, n / (ps > 0 ? ps : 0.01), unit, pk / 1024
        printf "  time ratio (guestmode / plain, lower is better): %.2f\n", (os > 0 ? os : 0.01) / (ps > 0 ? ps : 0.01)
    }'
}

fail() {
    echo "postgres bench: $*" >&2
    exit 1
}

# Makes each schema afresh with `guestmode init --profile PROFILE`: fresh_schemas PROFILE SCHEMA...
fresh_schemas() {
    local profile=$1 schema
    shift
    for schema in "$@"; do
        psql -X -q -v ON_ERROR_STOP=1 -c "DROP SCHEMA IF EXISTS $schema CASCADE" 2>/dev/null
        "$binary" init --profile "$profile" --store "$uri" --schema "$schema" --quiet >/dev/null
    done
}

fresh_schemas recipes "$ours" "$plain"

# --- ingest ------------------------------------------------------------------
if wants ingest; then
# The times carry milliseconds, as guestmode stores them, so both sides hold
# the same text and the events tables can be compared row for row.
awk -v n="$events" 'BEGIN {
    split("app_opened recipe_created recipe_viewed video_generated", actions, " ")
    for (i = 0; i < n; i++)
        printf "{\"user\":\"u%d\",\"action\":\"%s\",\"at\":\"2026-11-01T10:%02d:%02d.000Z\",\"id\":\"e%d\"}\n",
            i % 1000, actions[i % 4 + 1], int(i / 60) % 60, i % 60, i
}' > events.ndjson

cp "$root/bench/plain/ingest-postgres.sql" ingest.sql

read -r ours_s ours_kb < <(measure "$binary" --store "$uri" --schema "$ours" track --from events.ndjson --create-users --quiet)
read -r plain_s plain_kb < <(measure env PGOPTIONS="-c search_path=$plain" psql -X -q -v ON_ERROR_STOP=1 -At -f ingest.sql)
for query in \
    "SELECT count(*), md5(string_agg(user_id || ' ' || action || ' ' || total, ',' ORDER BY user_id, action)) FROM counters" \
    "SELECT count(*), md5(string_agg(user_id || ' ' || action || ' ' || at || ' ' || idempotency_key, ',' ORDER BY idempotency_key)) FROM events" \
    "SELECT count(*), md5(string_agg(id || ' ' || last_seen_at, ',' ORDER BY id)) FROM users"; do
    [ "$(sql "$ours" -c "$query")" = "$(sql "$plain" -c "$query")" ] || fail "ingest: the two schemas disagree on: $query"
done
line "ingest, $events NDJSON events for 1000 new users" \
    "guestmode track --from" "$ours_s" "$ours_kb" "psql \\copy + INSERT SELECT" "$plain_s" "$plain_kb" "$events" events
echo
fi

if wants funnel || wants purge; then
# --- guests (test data, not measured) ----------------------------------------
# Even numbers are stale (last seen in 2025, anonymous, no records or plans):
# the purge takes exactly them. Odd ones were seen recently; one in five of
# them is linked, after a number of hours that varies. One guest in five of
# either half answered a prompt, so the purge also cascades into
# prompt_outcomes.
for schema in "$ours" "$plain"; do
    sql "$schema" <<SQL
INSERT INTO users (id, device, state, prompt_state, created_at, last_seen_at, linked_at)
SELECT 'g' || lpad(i::text, 8, '0'), NULL,
       CASE WHEN i % 10 = 1 THEN 'linked' ELSE 'anonymous' END, 'anonymous',
       to_char(timestamp '2025-01-01' + (i % 500) * interval '1 hour', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
       CASE WHEN i % 2 = 0 THEN '2025-06-01T00:00:00.000Z' ELSE '2026-11-10T00:00:00.000Z' END,
       CASE WHEN i % 10 = 1
            THEN to_char(timestamp '2025-01-01' + (i % 500) * interval '1 hour' + (i % 97) * interval '1 hour',
                         'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END
FROM generate_series(1, $guests) AS i;
INSERT INTO prompt_outcomes (user_id, context, outcome, at)
SELECT 'g' || lpad(i::text, 8, '0'), 'first_recipe_success', 'shown', '2025-03-01T00:00:00.000Z'
FROM generate_series(5, $guests, 5) AS i;
ANALYZE users;
ANALYZE prompt_outcomes;
ANALYZE events;
ANALYZE counters;
SQL
done

fi

# --- funnel ------------------------------------------------------------------
if wants funnel; then
cat > funnel.sql <<'SQL'
SELECT count(*),
       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM prompt_outcomes o WHERE o.user_id = u.id)),
       count(*) FILTER (WHERE state = 'linked'),
       round(avg(hours)::numeric, 2),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY hours)::numeric, 2)
FROM (SELECT id, state,
             CASE WHEN state = 'linked'
                  THEN extract(epoch FROM linked_at::timestamptz - created_at::timestamptz) / 3600 END AS hours
      FROM users) AS u;
SQL
read -r ours_s ours_kb < <(measure sh -c "\"\$0\" --store \"\$1\" --schema \"\$2\" --json report funnel > funnel.json" \
    "$binary" "$uri" "$ours")
read -r plain_s plain_kb < <(measure sh -c "PGOPTIONS='-c search_path=$plain' psql -X -q -At -F ' ' -f funnel.sql > funnel.txt")
ours_funnel=$(python3 -c '
import json, sys
r = json.load(open("funnel.json"))
r = r.get("report", r)
print(r["guests"], r["prompted"], r["linked"], "%.2f" % r["average_hours_to_link"], "%.2f" % r["median_hours_to_link"])
' 2>/dev/null) || fail "funnel: cannot read guestmode's JSON: $(head -c 300 funnel.json)"
[ "$ours_funnel" = "$(cat funnel.txt)" ] || fail "funnel: guestmode says '$ours_funnel', the SQL says '$(cat funnel.txt)'"
line "report funnel over $((guests + 1000)) users" \
    "guestmode report funnel" "$ours_s" "$ours_kb" "psql: the same counts in SQL" "$plain_s" "$plain_kb" \
    "$((guests + 1000))" users
echo
fi

# --- purge -------------------------------------------------------------------
if wants purge; then
sed "s/:cutoff/$cutoff/" "$root/bench/plain/purge-postgres.sql" > purge.sql
read -r ours_s ours_kb < <(measure "$binary" --store "$uri" --schema "$ours" --now "$now" \
    user purge --inactive-days 30 --yes --quiet)
read -r plain_s plain_kb < <(measure env PGOPTIONS="-c search_path=$plain" psql -X -q -v ON_ERROR_STOP=1 -At -f purge.sql)
stale=$((guests / 2))
for query in \
    "SELECT count(*), md5(string_agg(id, ',' ORDER BY id)) FROM users" \
    "SELECT count(*) FROM prompt_outcomes" \
    "SELECT count(*) FROM users WHERE last_seen_at < '$cutoff'"; do
    [ "$(sql "$ours" -c "$query")" = "$(sql "$plain" -c "$query")" ] || fail "purge: the two schemas disagree on: $query"
done
users_left=$((guests - stale))
wants ingest && users_left=$((users_left + 1000))
[ "$(sql "$ours" -c "SELECT count(*) FROM users")" = "$users_left" ] || fail "purge: wrong number of users left"
line "user purge of $stale stale guests among $guests" \
    "guestmode user purge" "$ours_s" "$ours_kb" "psql: one DELETE" "$plain_s" "$plain_kb" "$stale" guests
echo
fi

# --- import ------------------------------------------------------------------
# One user's records, as bench/table.sh makes them, exported by guestmode from
# a SQLite store; psql loads the same rows from zstd-compressed NDJSON.
if wants import; then
    "$binary" init --profile habits --store backup.sqlite --quiet >/dev/null
    sed "s/:records/$records/" "$root/bench/plain/records.sql" | sqlite3 backup.sqlite
    "$binary" --store backup.sqlite backup export bench --out bench.gmbackup --quiet
    sqlite3 backup.sqlite "SELECT json_object('owner_id', owner_id, 'collection', collection, 'key', key,
        'data', data, 'created_at', created_at, 'updated_at', updated_at) FROM records WHERE owner_id = 'bench'" |
        zstd -q -3 -f -o rows.ndjson.zst
    cat > import.sql <<'SQL'
CREATE TEMP TABLE raw (line jsonb);
\copy raw (line) FROM PROGRAM 'zstd -q -d -c rows.ndjson.zst' WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')
BEGIN;
INSERT INTO users (id, created_at, last_seen_at) VALUES ('bench', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
    SELECT line ->> 'owner_id', line ->> 'collection', line ->> 'key', line ->> 'data',
           line ->> 'created_at', line ->> 'updated_at' FROM raw;
COMMIT;
SQL
    fresh_schemas habits bench_import_ours bench_import_plain
    read -r ours_s ours_kb < <(measure "$binary" --store "$uri" --schema bench_import_ours backup import bench.gmbackup)
    read -r plain_s plain_kb < <(measure env PGOPTIONS="-c search_path=bench_import_plain" psql -X -q -v ON_ERROR_STOP=1 -At -f import.sql)
    # guestmode stores record data in its canonical form (members sorted), so the data is not compared.
    query="SELECT count(*), md5(string_agg(owner_id || ' ' || key || ' ' || updated_at, ',' ORDER BY key)) FROM records"
    [ "$(sql bench_import_ours -c "$query")" = "$(sql bench_import_plain -c "$query")" ] ||
        fail "import: the two schemas disagree on: $query"
    line "backup import of $records records" \
        "guestmode backup import" "$ours_s" "$ours_kb" "psql \\copy + INSERT SELECT" "$plain_s" "$plain_kb" "$records" rows
    for schema in bench_import_ours bench_import_plain; do
        psql -X -q -c "DROP SCHEMA $schema CASCADE" 2>/dev/null
    done
fi

# --- accounts ----------------------------------------------------------------
# A Firebase auth export, one account a line; the plain side loads the rows guestmode makes of it (the
# conversion a migration script would do first is not timed).
if wants accounts; then
    awk -v n="$accounts" 'BEGIN {
        print "{\"users\": [" > "accounts.json"
        t = "1970-01-01T00:00:01.000Z"
        for (i = 0; i < n; i++) {
            linked = i % 10 == 0
            printf "{\"localId\":\"a%d\",\"createdAt\":\"1000\"%s}%s\n", i,
                linked ? ",\"providerUserInfo\":[{\"providerId\":\"google.com\",\"rawId\":\"g" i "\"}]" : "",
                i < n - 1 ? "," : "" > "accounts.json"
            printf "a%d,,%s,%s,%s,%s,%s\n", i, linked ? "linked" : "anonymous",
                linked ? "authenticated" : "anonymous", t, t, linked ? t : "" > "users.csv"
            if (linked) printf "google,g%d,a%d,,%s\n", i, i, t > "identities.csv"
        }
        print "]}" > "accounts.json"
    }'
    cat > accounts.sql <<'SQL'
BEGIN;
\copy users (id, device, state, prompt_state, created_at, last_seen_at, linked_at) FROM 'users.csv' WITH (FORMAT csv)
\copy identities (provider, subject, user_id, email, linked_at) FROM 'identities.csv' WITH (FORMAT csv)
COMMIT;
SQL
    fresh_schemas subscriptions bench_accounts_ours bench_accounts_plain
    read -r ours_s ours_kb < <(measure "$binary" --store "$uri" --schema bench_accounts_ours --now "$now" \
        user import --from accounts.json --format firebase --quiet)
    read -r plain_s plain_kb < <(measure env PGOPTIONS="-c search_path=bench_accounts_plain" psql -X -q -v ON_ERROR_STOP=1 -At -f accounts.sql)
    for query in \
        "SELECT count(*), md5(string_agg(concat_ws(' ', id, device, state, prompt_state, created_at, last_seen_at, linked_at), ',' ORDER BY id)) FROM users" \
        "SELECT count(*), md5(string_agg(concat_ws(' ', provider, subject, user_id, email, linked_at), ',' ORDER BY subject)) FROM identities"; do
        [ "$(sql bench_accounts_ours -c "$query")" = "$(sql bench_accounts_plain -c "$query")" ] ||
            fail "accounts: the two schemas disagree on: $query"
    done
    line "user import of $accounts Firebase accounts" \
        "guestmode user import" "$ours_s" "$ours_kb" "psql \\copy of the same rows" "$plain_s" "$plain_kb" "$accounts" accounts
    for schema in bench_accounts_ours bench_accounts_plain; do
        psql -X -q -c "DROP SCHEMA $schema CASCADE" 2>/dev/null
    done
fi

for schema in "$ours" "$plain"; do
    psql -X -q -c "DROP SCHEMA $schema CASCADE" 2>/dev/null
done
