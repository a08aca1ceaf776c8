#!/usr/bin/env bash
# `make scale`: guestmode at SCALE_GUESTS guests (default 10,000,000) and twice
# as many events, on SQLite and on PostgreSQL, with the plain tool (sqlite3,
# psql, pg_dump) doing the same work on a store of its own beside it.
# Documented, with measured figures, in bench/scale.md. Steps, per backend:
#   ingest   N guests and 2N events through `track --from --create-users`
#            (plain: the NDJSON loaded into a staging table + INSERT … SELECT);
#   one user `record put`, `meter check`, `prompt next` for one guest, at that
#            size and on a store holding only that guest: time and callgrind
#            instructions (a command's cost must not grow with others' data);
#   find     `user find --identity`, `--email`, `--device` for that guest once
#            one guest in ten has an identity with an email and a device (the
#            same instructions comparison; plain: the same lookup in SQL);
#   reports  `report funnel` and `report usage` (plain: the same counts in SQL);
#   purge    `user purge` of the stale half (plain: one DELETE);
#   export   `backup export --all` (plain: sqlite3 .dump / pg_dump, zstd -3);
#   read     `backup verify`, `verify --full`, `inspect` and `import` of that
#            archive into an empty store (plain: zstd -t, the dump loaded);
#   records  `backup import` of an archive of 2,000 records of 64 KB each
#            (whatever SCALE_GUESTS is) into an empty store, `db copy` of that
#            store to the other backend, `track --from` of 1,000 events with
#            64 KB of properties each into it, and `profile apply` of an upgrade
#            that renames a field of its records: rows held back for a batch,
#            or read for one, are bounded by their bytes, not only by their
#            number;
#   copy     `db copy` SQLite → PostgreSQL (plain: sqlite3 -csv | psql \copy of
#            the tables holding rows), on the SQLite run only;
#   sizes    the stores on disk.
# Every guestmode step's peak memory (GNU time, max RSS) must be ≤ 64 MB: a step
# over it is flagged and the script exits 1. Both stores are compared after the
# ingest and after the purge; a mismatch exits 1.
#
# Needs a PostgreSQL server (for the PostgreSQL run and db copy): run it inside
# scripts/with-postgres.sh, which exports GUESTMODE_TEST_POSTGRES and PG*.
# Usage: bench/scale.sh [path/to/guestmode]
#   SCALE_GUESTS     guests (default 10000000); events are twice as many
#   SCALE_BACKENDS   sqlite,postgres (default both)
#   SCALE_DIR        where the stores and the event log go (default $TMPDIR)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
binary=$(realpath "${1:-$root/.build/release/guestmode}")
guests=${SCALE_GUESTS:-10000000}
backends=${SCALE_BACKENDS:-sqlite,postgres}
limit_kb=$((64 * 1024))
: "${GUESTMODE_TEST_POSTGRES:?scale: no PostgreSQL server; run it as scripts/with-postgres.sh bench/scale.sh}"
uri=$GUESTMODE_TEST_POSTGRES

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
for tool in sqlite3 psql "$pg_bin/pg_dump" zstd valgrind /usr/bin/time awk strip; do
    command -v "$tool" >/dev/null || { echo "scale: $tool is missing (make deps installs it)" >&2; exit 1; }
done

work=$(mktemp -d "${SCALE_DIR:-${TMPDIR:-/tmp}}/guestmode-scale.XXXXXX")
schemas="scale_gm scale_plain scale_empty scale_copy scale_plaincopy scale_imported scale_plainimport scale_records
    scale_recordscopy"
cleanup() {
    for schema in $schemas; do psql -X -q -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
export GUESTMODE_TEMPLATES="$root/Templates" NO_COLOR=1
unset GUESTMODE_STORE GUESTMODE_SCHEMA
# A fixed clock: stale guests were last seen in 2025, the others a few days ago.
now=2026-11-15T00:00:00Z
cutoff=2026-10-16T00:00:00.000Z
status=0

fail() {
    echo "scale: $*" >&2
    status=1
}

# Runs a command under GNU time, output to /dev/null; prints "seconds peak_kb".
# Exit statuses other than 0 listed in ACCEPT (e.g. 13 for prompt next) pass.
measure() {
    local code=0
    /usr/bin/time -f '%e %M' -o time.log "$@" >/dev/null 2>stderr.log || code=$?
    if [ "$code" -ne 0 ] && [[ " ${ACCEPT:-} " != *" $code "* ]]; then
        echo "scale: failed ($code): $*" >&2
        head -c 2000 stderr.log >&2
        exit 1
    fi
    tail -1 time.log
}

header() {
    printf '%-9s %-46s %10s %8s %10s %8s %7s\n' backend step guestmode "gm MB" plain "plain MB" ratio
}
# One line: backend, step, gm seconds, gm kB, plain seconds, plain kB (or -).
row() {
    awk -v b="$1" -v name="$2" -v os="$3" -v ok="$4" -v ps="$5" -v pk="$6" -v limit="$limit_kb" 'BEGIN {
        plain = (ps == "-") ? sprintf("%10s %8s %7s", "-", "-", "-") : \
            sprintf("%9.2fs %8.1f %6.2fx", ps, pk / 1024, (os > 0 ? os : 0.005) / (ps > 0 ? ps : 0.005))
        printf "%-9s %-46s %9.2fs %8.1f %s%s\n", b, name, os, ok / 1024, plain, (ok > limit ? "  OVER 64 MB" : "")
    }'
    [ "$4" -le "$limit_kb" ] || status=1
}

# The event log: guest gI has two events; even guests were last seen in 2025
# (stale), odd ones on 2026-11-10. Lines go round the guests twice, so each
# batch of the ingest touches thousands of users, as an app's log would.
awk -v n="$guests" 'BEGIN {
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < n; i++) {
            day = (i % 2 == 0) ? "2025-06-01" : "2026-11-10"
            printf "{\"user\":\"g%d\",\"action\":\"%s\",\"at\":\"%sT%02d:%02d:%02d.000Z\",\"id\":\"e%d\"}\n",
                i, (pass == 0 ? "app_opened" : "recipe_viewed"), day, 10 + pass, int(i / 60) % 60, i % 60, pass * n + i
        }
}' > events.ndjson
grep '"user":"g1"' events.ndjson > one.ndjson
echo "scale: $guests guests, $((2 * guests)) events ($(du -h events.ndjson | cut -f1) of NDJSON), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"

# An archive of 2,000 users with one record of 64 KB each (2 KB of random hex, repeated: 128 MB of rows in a
# few MB of archive, well within the archive limits' expansion ratio).
"$binary" --store records-source.sqlite init --profile recipes --quiet >/dev/null
sqlite3 -bail records-source.sqlite "
INSERT INTO users (id, created_at, last_seen_at)
    SELECT 'r' || value, '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z' FROM generate_series(1, 2000);
INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
    SELECT 'r' || value, 'recipes', 'large', json_object('note', replace(printf('%.32c', '*'), '*', hex(randomblob(1024)))),
           '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z' FROM generate_series(1, 2000);"
"$binary" --store records-source.sqlite --now "$now" backup export --all --out records.tar.zst --quiet
rm -f records-source.sqlite*
# 1,000 events of those users with a property of 64 KB each.
awk 'BEGIN {
    note = "x"; while (length(note) < 65000) note = note note
    note = substr(note, 1, 65000)
    for (i = 1; i <= 1000; i++)
        printf "{\"user\":\"r%d\",\"action\":\"app_opened\",\"at\":\"2026-11-02T10:00:00.000Z\",\"id\":\"big%d\",\"props\":{\"note\":\"%s\"}}\n", i, i, note
}' > large-events.ndjson
# recipes v2: the records' field `note` renamed `text` (a name of the same length, so the bytes stay the same).
sed 's/^version: 1$/version: 2/' "$root/Templates/recipes.yaml" > recipes-v2.yaml
cat >> recipes-v2.yaml <<'YAML'
upgrade:
  from: 1
  steps:
    - rename_field:
        collection: recipes
        from: note
        to: text
YAML

# callgrind on a copy without debug information (valgrind gives up on some DWARF of Swift builds).
strip --strip-debug -o guestmode-stripped "$binary"
instructions() {
    local code=0
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" >/dev/null 2>valgrind.log || code=$?
    if [ "$code" -ne 0 ] && [[ " ${ACCEPT:-} " != *" $code "* ]]; then
        echo "scale: failed under valgrind ($code): $*" >&2
        tail -20 valgrind.log >&2
        exit 1
    fi
    awk '/Collected :/ { print $NF }' valgrind.log
}

# The plain SQL, per backend.
# The plain ingests and purges are make bench's (bench/plain/), with this run's cutoff.
cp "$root/bench/plain/ingest.sql" ingest.sqlite.sql
cp "$root/bench/plain/ingest-postgres.sql" ingest.postgres.sql
# Test data beside the events, the same in both stores (not measured): one
# guest in ten used a meter, one in ten saw a prompt.
cat > extra.sql <<'SQL'
INSERT INTO meter_usage (user_id, meter, amount, at)
    SELECT id, 'video_generations', 1, last_seen_at FROM users WHERE id LIKE '%0';
INSERT INTO prompt_outcomes (user_id, context, outcome, at)
    SELECT id, 'first_recipe_success', 'shown', last_seen_at FROM users WHERE id LIKE '%5';
SQL
cat > funnel.sql <<'SQL'
SELECT count(*),
       sum(CASE WHEN EXISTS (SELECT 1 FROM prompt_outcomes o WHERE o.user_id = u.id) THEN 1 ELSE 0 END),
       sum(CASE WHEN state = 'linked' THEN 1 ELSE 0 END)
FROM users u;
SQL
cat > usage.sql <<'SQL'
SELECT meter, count(DISTINCT user_id), count(*), sum(amount) FROM meter_usage GROUP BY meter ORDER BY meter;
SQL
# For `user find`, not measured: guests g1, g11, g21, … get an Apple identity with an email (upper case, so the
# lookup folds it) and a device of their own, and are linked as `link` leaves a user (an anonymous user with an
# identity is a store `backup import` refuses to take back).
cat > find.sql <<'SQL'
INSERT INTO identities (provider, subject, user_id, email, linked_at)
    SELECT 'apple', 'apple-' || id, id, upper(id) || '@EXAMPLE.com', last_seen_at FROM users WHERE id LIKE '%1';
UPDATE users SET device = 'device-' || id, state = 'linked', linked_at = last_seen_at WHERE id LIKE '%1';
SQL
# The plain side of each lookup: the same question in SQL, through the same index.
find_plain() { # backend, lookup → SQL
    case $1:$2 in
    *:identity) echo "SELECT user_id FROM identities WHERE provider = 'apple' AND subject = 'apple-g1'" ;;
    sqlite:email) echo "SELECT user_id FROM identities WHERE (email IS NOT NULL OR provider = 'email') AND lower(coalesce(email, subject)) = 'g1@example.com'" ;;
    postgres:email) echo "SELECT user_id FROM identities WHERE (email IS NOT NULL OR provider = 'email') AND lower(coalesce(email, subject) COLLATE \"C\") = 'g1@example.com'" ;;
    *:device) echo "SELECT id FROM users WHERE device = 'device-g1'" ;;
    esac
}
sed "s/:cutoff/$cutoff/" "$root/bench/plain/purge.sql" > purge.sqlite.sql
sed "s/:cutoff/$cutoff/" "$root/bench/plain/purge-postgres.sql" > purge.postgres.sql

# Store access per backend: "ours", "plain" or "empty".
gm_store() { # backend, which → guestmode's store options
    case $1 in
    sqlite) echo "--store $2.sqlite" ;;
    postgres) echo "--store $uri --schema scale_$2" ;;
    esac
}
plain_sql() { # backend, which, then sqlite3/psql arguments; SQL on stdin or -c
    local backend=$1 which=$2
    shift 2
    case $backend in
    sqlite) sqlite3 -bail "$which.sqlite" "$@" ;;
    postgres) PGOPTIONS="-c search_path=scale_$which" psql -X -q -v ON_ERROR_STOP=1 -At "$@" ;;
    esac
}
query() { # backend, which, SQL → its output
    case $1 in
    sqlite) sqlite3 "$2.sqlite" "$3" ;;
    postgres) plain_sql "$1" "$2" -c "$3" ;;
    esac
}
store_bytes() { # backend, which
    case $1 in
    sqlite) cat "$2.sqlite" "$2.sqlite-wal" 2>/dev/null | wc -c ;;
    postgres) psql -X -At -c "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'scale_$2' AND c.relkind IN ('r', 'm')" ;;
    esac
}
compare() { # backend, what, SQL: both stores must answer the same
    local a b
    a=$(query "$1" gm "$3")
    b=$(query "$1" plain "$3")
    [ "$a" = "$b" ] || fail "$1 $2: guestmode's store says '$a', the plain one '$b' ($3)"
}

run_backend() {
    local backend=$1 os ok ps pk other
    local -a copy_to
    for which in gm plain empty; do
        rm -f "$which.sqlite"*
        [ "$backend" = postgres ] && psql -X -q -c "DROP SCHEMA IF EXISTS scale_$which CASCADE" >/dev/null 2>&1
        # shellcheck disable=SC2046
        "$binary" init --profile recipes $(gm_store "$backend" "$which") --quiet >/dev/null
    done

    # --- ingest ---------------------------------------------------------------------
    # shellcheck disable=SC2046
    read -r os ok < <(measure "$binary" $(gm_store "$backend" gm) track --from events.ndjson --create-users --quiet)
    read -r ps pk < <(measure bash -c "$(declare -f plain_sql); uri='$uri'; plain_sql $backend plain < ingest.$backend.sql")
    row "$backend" "track --from: $guests new guests, $((2 * guests)) events" "$os" "$ok" "$ps" "$pk"
    compare "$backend" ingest "SELECT count(*), sum(total) FROM counters"
    compare "$backend" ingest "SELECT count(*), min(last_seen_at), max(last_seen_at) FROM users"
    compare "$backend" ingest "SELECT count(*) FROM events"
    for which in gm plain; do plain_sql "$backend" "$which" < extra.sql >/dev/null; done
    # shellcheck disable=SC2046
    "$binary" $(gm_store "$backend" empty) track --from one.ndjson --create-users --quiet
    [ "$backend" = postgres ] && for which in gm plain empty; do plain_sql "$backend" "$which" -c "ANALYZE" >/dev/null; done

    # --- one user at this size and alone ------------------------------------------------
    local n=0
    one_user() { # step name, accepted exit statuses, command after the store options (KEY is replaced)
        local name=$1 accept=$2
        shift 2
        local which big_s big_kb big_ir empty_s empty_ir args
        for which in gm empty; do
            # Median of three runs for the time, then one run under callgrind.
            local times=()
            for _ in 1 2 3; do
                n=$((n + 1))
                args=("${@//KEY/k$n}")
                # shellcheck disable=SC2046
                read -r s kb < <(ACCEPT=$accept measure "$binary" $(gm_store "$backend" "$which") --now "$now" "${args[@]}")
                times+=("$s")
                [ "$which" = gm ] && big_kb=$kb
                [ "$kb" -le "$limit_kb" ] || { fail "$backend $name: $kb kB"; }
            done
            s=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
            n=$((n + 1))
            args=("${@//KEY/k$n}")
            # shellcheck disable=SC2046
            ir=$(ACCEPT=$accept instructions ./guestmode-stripped $(gm_store "$backend" "$which") --now "$now" "${args[@]}")
            if [ "$which" = gm ]; then big_s=$s big_ir=$ir; else empty_s=$s empty_ir=$ir; fi
        done
        awk -v b="$backend" -v name="$name" -v bs="$big_s" -v bk="$big_kb" -v bi="$big_ir" -v es="$empty_s" -v ei="$empty_ir" \
            -v limit="$limit_kb" 'BEGIN {
            printf "%-9s %-46s %9.3fs %8.1f %9.3fs %8s %6.2fx  instructions %.1f M / %.1f M alone: %.3fx%s\n",
                b, name " (vs alone)", bs, bk / 1024, es, "", (bs > 0 ? bs : 0.001) / (es > 0 ? es : 0.001),
                bi / 1e6, ei / 1e6, bi / ei, (bk > limit ? "  OVER 64 MB" : "") }'
    }
    one_user "record put g1" "" record put g1 recipes KEY --data '{"title":"scale"}' --quiet
    one_user "meter check g1" "" meter check g1 video_generations 1 --quiet
    one_user "prompt next g1" "13" prompt next g1 --quiet

    # --- find a user --------------------------------------------------------------------
    for which in gm plain empty; do plain_sql "$backend" "$which" < find.sql >/dev/null; done
    [ "$backend" = postgres ] && for which in gm plain empty; do plain_sql "$backend" "$which" -c "ANALYZE" >/dev/null; done
    local lookup kind value found
    for lookup in "identity apple:apple-g1" "email g1@example.com" "device device-g1"; do
        read -r kind value <<< "$lookup"
        find_plain "$backend" "$kind" > "find.$kind.sql"
        # shellcheck disable=SC2046
        found=$("$binary" $(gm_store "$backend" gm) user find "--$kind" "$value" --quiet)
        [ "$found" = g1 ] || fail "$backend user find --$kind $value: '$found', not g1"
        [ "$(plain_sql "$backend" plain < "find.$kind.sql")" = g1 ] || fail "$backend: the plain $kind lookup"
        one_user "user find --$kind g1" "" user find "--$kind" "$value" --quiet
        # shellcheck disable=SC2046
        read -r os ok < <(measure "$binary" $(gm_store "$backend" gm) user find "--$kind" "$value" --quiet)
        read -r ps pk < <(measure bash -c "$(declare -f plain_sql); uri='$uri'; plain_sql $backend plain < find.$kind.sql")
        row "$backend" "user find --$kind (plain: the lookup in SQL)" "$os" "$ok" "$ps" "$pk"
    done

    # --- reports ------------------------------------------------------------------------
    # shellcheck disable=SC2046
    read -r os ok < <(measure "$binary" $(gm_store "$backend" gm) --now "$now" report funnel --format tsv)
    read -r ps pk < <(measure bash -c "$(declare -f plain_sql); uri='$uri'; plain_sql $backend plain < funnel.sql")
    row "$backend" "report funnel" "$os" "$ok" "$ps" "$pk"
    # shellcheck disable=SC2046
    read -r os ok < <(measure "$binary" $(gm_store "$backend" gm) --now "$now" report usage --format tsv)
    read -r ps pk < <(measure bash -c "$(declare -f plain_sql); uri='$uri'; plain_sql $backend plain < usage.sql")
    row "$backend" "report usage" "$os" "$ok" "$ps" "$pk"

    # --- purge ----------------------------------------------------------------------------
    # shellcheck disable=SC2046
    read -r os ok < <(measure "$binary" $(gm_store "$backend" gm) --now "$now" user purge --inactive-days 30 --yes --quiet)
    read -r ps pk < <(measure bash -c "$(declare -f plain_sql); uri='$uri'; plain_sql $backend plain < purge.$backend.sql")
    row "$backend" "user purge: $((guests / 2)) stale of $guests" "$os" "$ok" "$ps" "$pk"
    compare "$backend" purge "SELECT count(*), min(id), max(id) FROM users"
    compare "$backend" purge "SELECT count(*) FROM events"
    [ "$(query "$backend" gm "SELECT count(*) FROM users")" = "$((guests - guests / 2))" ] ||
        fail "$backend purge: $(query "$backend" gm "SELECT count(*) FROM users") users left, not $((guests - guests / 2))"

    # --- backup export --all ----------------------------------------------------------------
    # shellcheck disable=SC2046
    read -r os ok < <(measure "$binary" $(gm_store "$backend" gm) --now "$now" backup export --all --out all.tar.zst --quiet)
    case $backend in
    sqlite) read -r ps pk < <(measure sh -c 'sqlite3 plain.sqlite .dump | zstd -q -3 -f -o plain.sql.zst') ;;
    postgres) read -r ps pk < <(measure sh -c "'$pg_bin/pg_dump' -n scale_plain | zstd -q -3 -f -o plain.sql.zst") ;;
    esac
    row "$backend" "backup export --all ($(du -h all.tar.zst | cut -f1) / $(du -h plain.sql.zst | cut -f1))" "$os" "$ok" "$ps" "$pk"

    # --- backup verify, inspect, import of that archive ----------------------------------------
    # The plain side reads the dump: zstd -t to check it, zstd -dc into the tool to load it.
    read -r os ok < <(measure "$binary" backup verify all.tar.zst --quiet)
    read -r ps pk < <(measure zstd -q -t plain.sql.zst)
    row "$backend" "backup verify (structural)" "$os" "$ok" "$ps" "$pk"
    read -r os ok < <(measure "$binary" backup verify --full all.tar.zst --quiet)
    row "$backend" "backup verify --full" "$os" "$ok" "$ps" "$pk"
    read -r os ok < <(measure "$binary" backup inspect all.tar.zst)
    row "$backend" "backup inspect" "$os" "$ok" - -
    rm -f imported.sqlite* plainimport.sqlite*
    [ "$backend" = postgres ] && for schema in scale_imported scale_plainimport; do
        psql -X -q -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
    done
    # shellcheck disable=SC2046
    "$binary" init --profile recipes $(gm_store "$backend" imported) --quiet >/dev/null
    # A restore: the store imported into holds the deployment's key, so the archive is trusted and its
    # identities and meter uses go in too, as the plain load's do (another deployment's archive leaves them out).
    # shellcheck disable=SC2046
    "$binary" $(gm_store "$backend" gm) backup key export --out deployment.key --quiet
    # shellcheck disable=SC2046
    "$binary" $(gm_store "$backend" imported) backup key import deployment.key --force --quiet
    rm -f deployment.key
    # shellcheck disable=SC2046
    read -r os ok < <(measure "$binary" $(gm_store "$backend" imported) --now "$now" backup import all.tar.zst --quiet)
    case $backend in
    sqlite) read -r ps pk < <(measure sh -c 'zstd -dc plain.sql.zst | sqlite3 -bail plainimport.sqlite') ;;
    postgres) read -r ps pk < <(measure sh -c "zstd -dc plain.sql.zst | sed 's/scale_plain/scale_plainimport/g' |
        psql -X -q -v ON_ERROR_STOP=1 >/dev/null") ;;
    esac
    row "$backend" "backup import of that archive (plain: the dump loaded)" "$os" "$ok" "$ps" "$pk"
    for table in users events counters identities meter_usage prompt_outcomes; do
        a=$(query "$backend" gm "SELECT count(*) FROM $table")
        b=$(query "$backend" imported "SELECT count(*) FROM $table")
        [ "$a" = "$b" ] || fail "$backend import: $b $table imported, the store exported $a"
    done
    rm -f all.tar.zst plain.sql.zst imported.sqlite* plainimport.sqlite*

    # --- backup import of large records -------------------------------------------------------------
    rm -f records.sqlite*
    [ "$backend" = postgres ] && psql -X -q -c "DROP SCHEMA IF EXISTS scale_records CASCADE" >/dev/null 2>&1
    # shellcheck disable=SC2046
    "$binary" init --profile recipes $(gm_store "$backend" records) --quiet >/dev/null
    # shellcheck disable=SC2046
    read -r os ok < <(measure "$binary" $(gm_store "$backend" records) --now "$now" backup import records.tar.zst --quiet)
    row "$backend" "backup import of 2,000 records of 64 KB" "$os" "$ok" - -
    a=$(query "$backend" records "SELECT count(*) || ' ' || sum(length(data)) FROM records")
    [ "$a" = "2000 131094000" ] || fail "$backend import of large records: '$a', not 2000 records of 131094000 bytes"
    # The copy reads every table on both sides for its checksums, and writes the other backend's store.
    rm -f recordscopy.sqlite*
    psql -X -q -c "DROP SCHEMA IF EXISTS scale_recordscopy CASCADE" >/dev/null 2>&1
    case $backend in
    sqlite) copy_to=(--to "$uri" --to-schema scale_recordscopy) other=postgres ;;
    postgres) copy_to=(--to recordscopy.sqlite) other=sqlite ;;
    esac
    # shellcheck disable=SC2046
    read -r os ok < <(measure "$binary" $(gm_store "$backend" records) db copy "${copy_to[@]}" --quiet)
    row "$backend" "db copy of those records to $other" "$os" "$ok" - -
    a=$(query "$other" recordscopy "SELECT count(*) || ' ' || sum(length(data)) FROM records")
    [ "$a" = "2000 131094000" ] || fail "$backend db copy of large records: '$a', not 2000 records of 131094000 bytes"
    # shellcheck disable=SC2046
    read -r os ok < <(measure "$binary" $(gm_store "$backend" records) --now "$now" track --from large-events.ndjson --quiet)
    row "$backend" "track --from: 1,000 events of 64 KB" "$os" "$ok" - -
    a=$(query "$backend" records "SELECT count(*) FROM events WHERE idempotency_key LIKE 'big%'")
    [ "$a" = 1000 ] || fail "$backend track --from of large events: $a events, not 1000"
    # shellcheck disable=SC2046
    read -r os ok < <(measure "$binary" $(gm_store "$backend" records) --now "$now" profile apply recipes-v2.yaml --quiet)
    row "$backend" "profile apply: a field of those records renamed" "$os" "$ok" - -
    a=$(query "$backend" records "SELECT count(*) FROM records WHERE data LIKE '{\"text\":%'")
    [ "$a" = 2000 ] || fail "$backend profile apply over large records: $a records renamed, not 2000"
    rm -f records.sqlite* recordscopy.sqlite*
    for schema in scale_records scale_recordscopy; do
        psql -X -q -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
    done
    [ "$backend" = postgres ] && for schema in scale_imported scale_plainimport; do
        psql -X -q -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
    done

    # --- db copy SQLite → PostgreSQL ------------------------------------------------------------
    if [ "$backend" = sqlite ]; then
        for schema in scale_copy scale_plaincopy; do psql -X -q -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1; done
        "$binary" --store "$uri" --schema scale_plaincopy init --profile recipes --quiet >/dev/null
        cat > copy.sh <<SH
set -e
for spec in "users:id, device, state, prompt_state, created_at, last_seen_at, linked_at" \
    "identities:provider, subject, user_id, email, linked_at" \
    "events:id, user_id, action, at, count, idempotency_key, properties" "counters:user_id, action, total" \
    "records:owner_id, collection, key, data, created_at, updated_at" \
    "meter_usage:id, user_id, meter, amount, at, idempotency_key" "prompt_outcomes:id, user_id, context, outcome, at"; do
    table=\${spec%%:*} columns=\${spec#*:}
    sqlite3 -csv plain.sqlite "SELECT \$columns FROM \$table" |
        PGOPTIONS="-c search_path=scale_plaincopy" psql -X -q -v ON_ERROR_STOP=1 -c "\\\\copy \$table (\$columns) FROM STDIN CSV"
done
SH
        read -r os ok < <(measure "$binary" --store gm.sqlite db copy --to "$uri" --to-schema scale_copy --quiet)
        read -r ps pk < <(measure bash copy.sh)
        row "$backend" "db copy SQLite to PostgreSQL" "$os" "$ok" "$ps" "$pk"
        a=$(psql -X -At -c "SELECT count(*) FROM scale_copy.events")
        b=$(psql -X -At -c "SELECT count(*) FROM scale_plaincopy.events")
        [ "$a" = "$b" ] || fail "db copy: $a events copied, the plain copy has $b"
        for schema in scale_copy scale_plaincopy; do psql -X -q -c "DROP SCHEMA $schema CASCADE" >/dev/null 2>&1; done
    fi

    # --- sizes -------------------------------------------------------------------------------------
    [ "$backend" = postgres ] && for which in gm plain; do plain_sql "$backend" "$which" -c "VACUUM" >/dev/null; done
    awk -v b="$backend" -v g="$(store_bytes "$backend" gm)" -v p="$(store_bytes "$backend" plain)" 'BEGIN {
        printf "%-9s %-46s %9.1fM %8s %9.1fM %8s %6.2fx\n", b, "store size after the purge (MB)", g / 1048576, "", p / 1048576, "", g / p }'
    rm -f gm.sqlite* plain.sqlite* empty.sqlite*
    for which in gm plain empty; do
        [ "$backend" = postgres ] && psql -X -q -c "DROP SCHEMA IF EXISTS scale_$which CASCADE" >/dev/null 2>&1
    done
    return 0
}

header
for backend in ${backends//,/ }; do
    case $backend in
    sqlite | postgres) run_backend "$backend" ;;
    *) echo "scale: unknown backend $backend (sqlite, postgres)" >&2; exit 64 ;;
    esac
done
if [ "$status" -eq 0 ]; then echo "scale: done, every step within 64 MB"; else echo "scale: FAILED"; fi
exit $status
