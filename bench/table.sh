#!/usr/bin/env bash
# `make bench`: one row per line of the performance table (bench/results.md), each
# guestmode against the plain tool doing the same work on the same data (the
# plain side is written out in bench/plain/), with wall time, the ratio
# (guestmode / plain, lower is better) and peak memory (GNU time, max RSS).
# Usage: bench/table.sh [path/to/guestmode]
# BENCH_SCALE (default 1) scales every data size: 0.1 for a quick run.
# BENCH_ONLY=purge,verify,... runs only the named rows.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
plain_dir=$root/bench/plain
binary=$(realpath "${1:-$root/.build/release/guestmode}")
scale=${BENCH_SCALE:-1}
only=${BENCH_ONLY:-startup,purge,verify,import,export,ingest,migrate,put}
memory_limit_kb=$((64 * 1024))

for tool in sqlite3 zstd valgrind /usr/bin/time awk; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is missing (make deps installs it)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GUESTMODE_TEMPLATES="$root/Templates" NO_COLOR=1
unset GUESTMODE_STORE
now=2026-11-15T00:00:00Z

scaled() { awk -v n="$1" -v s="$scale" 'BEGIN { v = int(n * s); print (v < 1 ? 1 : v) }'; }
wants() { [[ ",$only," == *",$1,"* ]]; }

# Runs a command under GNU time; prints "seconds peak_kb cpu_seconds".
measure() {
    /usr/bin/time -f '%e %M %U %S' -o time.log "$@" >/dev/null 2>stderr.log || {
        echo "bench: failed: $*" >&2
        cat stderr.log >&2
        return 1
    }
    awk '{ printf "%s %s %.3f\n", $1, $2, $3 + $4 }' time.log
}

printf '%-44s %10s %10s %7s %9s %9s\n' "work" "guestmode" "plain" "ratio" "gm MB" "plain MB"
status=0
row() { # name, gm seconds, gm kb, plain seconds, plain kb
    awk -v name="$1" -v os="$2" -v ok="$3" -v ps="$4" -v pk="$5" -v limit="$memory_limit_kb" 'BEGIN {
        ratio = (os > 0 ? os : 0.005) / (ps > 0 ? ps : 0.005)
        printf "%-44s %9.3fs %9.3fs %6.2fx %9.1f %9.1f%s\n", name, os, ps, ratio, ok / 1024, pk / 1024, (ok > limit ? "  OVER 64 MB" : "")
    }'
    [ "$3" -le "$memory_limit_kb" ] || status=1
}

init_store() { "$binary" init --profile "$1" --store "$2" --quiet >/dev/null; }

# --- start-up ------------------------------------------------------------------
if wants startup; then
    init_store habits small.sqlite
    sqlite3 small.sqlite "INSERT INTO users (id, created_at, last_seen_at) VALUES ('U', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')"
    "$binary" --store small.sqlite track U app_opened --quiet
    query="SELECT action, total FROM counters WHERE user_id = 'U'"
    # The binary as `make install` installs it (install -s): stripped. valgrind also needs a copy without
    # debug information (it gives up on some DWARF of Swift builds).
    strip -o guestmode-stripped "$binary"
    # Paired: guestmode then sqlite3, 21 times, each pair's ratio; the medians and the median ratio are
    # printed, so a machine whose speed drifts during the runs moves both sides of each pair alike.
    runs=21
    for _ in $(seq $runs); do
        s=$(date +%s%N); ./guestmode-stripped --store small.sqlite counters U >/dev/null; m=$(date +%s%N)
        sqlite3 small.sqlite "$query" >/dev/null; e=$(date +%s%N)
        echo "$(((m - s) / 1000)) $(((e - m) / 1000))"
    done >pairs.txt
    median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
    gm_us=$(awk '{ print $1 }' pairs.txt | median)
    plain_us=$(awk '{ print $2 }' pairs.txt | median)
    pair_ratio=$(awk '{ print $1 / ($2 > 0 ? $2 : 1) }' pairs.txt | median)
    read -r _ gm_kb _ < <(measure ./guestmode-stripped --store small.sqlite counters U)
    read -r _ plain_kb _ < <(measure sqlite3 small.sqlite "$query")
    instructions() {
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
            awk '/Collected :/ { print $NF }'
    }
    gm_ir=$(instructions ./guestmode-stripped --store small.sqlite counters U)
    plain_ir=$(instructions sqlite3 small.sqlite "$query")
    row "start-up: counters U (median of $runs pairs)" "$(awk -v v="$gm_us" 'BEGIN{print v/1e6}')" "$gm_kb" \
        "$(awk -v v="$plain_us" 'BEGIN{print v/1e6}')" "$plain_kb"
    awk -v r="$pair_ratio" 'BEGIN {
        printf "%-44s %10s %10s %6.2fx   (median ratio of the pairs; target <= 3x)\n", "start-up: counters U, wall, paired", "", "", r }'
    awk -v g="$gm_ir" -v p="$plain_ir" 'BEGIN {
        printf "%-44s %9.1fM %9.1fM %6.2fx   (callgrind instructions; target <= 14 M)\n", "start-up: counters U, instructions", g / 1e6, p / 1e6, g / p }'
fi

# --- purge -----------------------------------------------------------------------
# 89 % of the guests are stale anonymous guests (purged); the rest were seen
# recently, or own a record, or are linked. Each guest has one counter row, so
# the cascade has something to delete.
purge_row() {
    local guests=$1
    for store in ours.sqlite plain.sqlite; do
        rm -f "$store"*
        init_store habits "$store"
        sqlite3 "$store" <<SQL
PRAGMA foreign_keys = ON;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $guests)
INSERT INTO users (id, state, created_at, last_seen_at, linked_at)
SELECT printf('g%08d', i), CASE WHEN i % 100 = 95 THEN 'linked' ELSE 'anonymous' END,
       '2025-01-01T00:00:00.000Z',
       CASE WHEN i % 100 < 89 THEN strftime('%Y-%m-%dT%H:%M:%fZ', '2025-06-01', '+' || (i % 1000) || ' minutes')
            ELSE '2026-11-10T00:00:00.000Z' END,
       CASE WHEN i % 100 = 95 THEN '2025-02-01T00:00:00.000Z' END
FROM n;
INSERT INTO counters (user_id, action, total) SELECT id, 'app_opened', 1 FROM users;
COMMIT;
SQL
    done
    local cutoff
    cutoff=$(date -u -d "2026-11-15 - 90 days" +%Y-%m-%dT%H:%M:%S.000Z)
    sed "s/:cutoff/$cutoff/" "$plain_dir/purge.sql" > purge.sql
    read -r os ok _ < <(measure "$binary" --store ours.sqlite --now "$now" user purge --inactive-days 90 --yes --quiet)
    read -r ps pk _ < <(measure sh -c 'sqlite3 plain.sqlite < purge.sql')
    local a b
    a=$(sqlite3 ours.sqlite "SELECT count(*), group_concat(id) FROM (SELECT id FROM users ORDER BY id)" | md5sum)
    b=$(sqlite3 plain.sqlite "SELECT count(*), group_concat(id) FROM (SELECT id FROM users ORDER BY id)" | md5sum)
    [ "$a" = "$b" ] || { echo "bench: purge: the two stores disagree" >&2; status=1; }
    row "user purge, $guests guests ($(sqlite3 plain.sqlite 'SELECT '"$guests"' - count(*) FROM users') purged)" \
        "$os" "$ok" "$ps" "$pk"
}
if wants purge; then
    purge_row "$(scaled 100000)"
    purge_row "$(scaled 1000000)"
fi

# --- backup: export, verify --full, import ---------------------------------------
records=$(scaled 1000000)
if wants export || wants verify || wants import; then
    rm -f backup.sqlite*
    init_store habits backup.sqlite
    sed "s/:records/$records/" "$root/bench/plain/records.sql" | sqlite3 backup.sqlite
    read -r os ok _ < <(measure "$binary" --store backup.sqlite backup export bench --out bench.gmbackup)
    read -r ps pk _ < <(measure "$plain_dir/export.sh" backup.sqlite bench plain.json.zst)
    wants export && row "backup export, $records rows" "$os" "$ok" "$ps" "$pk"
    if wants verify; then
        read -r os ok _ < <(measure "$binary" backup verify --full bench.gmbackup)
        read -r ps pk _ < <(measure "$plain_dir/verify.sh" bench.gmbackup)
        row "backup verify --full, $records rows" "$os" "$ok" "$ps" "$pk"
    fi
    if wants import; then
        rm -f imported.sqlite* plainimport.sqlite*
        init_store habits imported.sqlite
        init_store habits plainimport.sqlite
        sqlite3 backup.sqlite "SELECT json_object('owner_id', owner_id, 'collection', collection, 'key', key,
            'data', data, 'created_at', created_at, 'updated_at', updated_at) FROM records WHERE owner_id = 'bench'" |
            zstd -q -3 -f -o rows.ndjson.zst
        read -r os ok _ < <(measure "$binary" --store imported.sqlite backup import bench.gmbackup)
        read -r ps pk _ < <(measure sh -c "zstd -q -d -f rows.ndjson.zst -o rows.ndjson && sqlite3 plainimport.sqlite < '$plain_dir/import.sql'")
        [ "$(sqlite3 imported.sqlite 'SELECT count(*) FROM records')" = "$(sqlite3 plainimport.sqlite 'SELECT count(*) FROM records')" ] ||
            { echo "bench: import: the two stores disagree" >&2; status=1; }
        row "backup import, $records rows" "$os" "$ok" "$ps" "$pk"
    fi
fi

# --- track --from ------------------------------------------------------------------
if wants ingest; then
    events=$(scaled 1000000)
    awk -v n="$events" 'BEGIN {
        split("app_opened habit_created habit_completed award_earned", actions, " ")
        for (i = 0; i < n; i++)
            printf "{\"user\":\"u%d\",\"action\":\"%s\",\"at\":\"2026-11-01T10:%02d:%02d.000Z\",\"id\":\"e%d\"}\n",
                i % 1000, actions[i % 4 + 1], int(i / 60) % 60, i % 60, i
    }' > events.ndjson
    rm -f ours.sqlite* plain.sqlite*
    init_store habits ours.sqlite
    init_store habits plain.sqlite
    read -r os ok _ < <(measure "$binary" --store ours.sqlite track --from events.ndjson --create-users --quiet)
    read -r ps pk _ < <(measure sh -c "sqlite3 plain.sqlite < '$plain_dir/ingest.sql'")
    q="SELECT group_concat(user_id || action || total) FROM (SELECT * FROM counters ORDER BY 1, 2)"
    [ "$(sqlite3 ours.sqlite "$q")" = "$(sqlite3 plain.sqlite "$q")" ] ||
        { echo "bench: ingest: the two stores disagree on counters" >&2; status=1; }
    row "track --from, $events events" "$os" "$ok" "$ps" "$pk"
fi

# --- migrate -------------------------------------------------------------------------
if wants migrate; then
    rm -f ours.sqlite* plain.sqlite*
    for store in ours.sqlite plain.sqlite; do
        init_store habits "$store"
        sqlite3 "$store" <<SQL
INSERT INTO users (id, state, created_at, last_seen_at) VALUES ('guest', 'anonymous', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $records)
INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
SELECT 'guest', 'progress', printf('p%07d', i), json_object('n', i), '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'
FROM n;
SQL
        "$binary" --store "$store" --now "$now" guest new --quiet > account.id
        "$binary" --store "$store" --now "$now" link "$(cat account.id)" --provider apple --subject bench --quiet >/dev/null
        cp account.id "$store.account"
    done
    read -r os ok _ < <(measure "$binary" --store ours.sqlite --now "$now" migrate guest --to "$(cat ours.sqlite.account)")
    read -r ps pk _ < <(measure "$plain_dir/migrate.sh" plain.sqlite guest "$(cat plain.sqlite.account)")
    row "migrate G --to A, guest with $records records" "$os" "$ok" "$ps" "$pk"
fi

# --- record put to a big user ------------------------------------------------------------
if wants put; then
    big=$(scaled 900000)
    rm -f ours.sqlite*
    init_store habits ours.sqlite
    sqlite3 ours.sqlite <<SQL
INSERT INTO users (id, created_at, last_seen_at) VALUES ('big', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'),
    ('small', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $big)
INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
SELECT 'big', 'progress', printf('p%07d', i), '{}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' FROM n;
INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
    VALUES ('small', 'progress', 'p1', '{}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
SQL
    cpu() { # median CPU seconds of 7 puts of new keys
        for i in 1 2 3 4 5 6 7; do
            read -r _ _ c < <(measure "$binary" --store ours.sqlite record put "$1" progress "new$i" --data '{"n":1}')
            echo "$c"
        done | sort -n | sed -n 4p
    }
    big_cpu=$(cpu big)
    small_cpu=$(cpu small)
    read -r _ ok _ < <(measure "$binary" --store ours.sqlite record put big progress last --data '{}')
    awk -v b="$big_cpu" -v s="$small_cpu" -v n="$big" -v k="$ok" 'BEGIN {
        printf "%-44s %9.3fs %9.3fs %6.2fx %9.1f   (CPU: user of %d records vs of 1)\n", "record put, user with " n " records", b, s, (b > 0 ? b : 0.001) / (s > 0 ? s : 0.001), k / 1024, n }'
fi
exit $status
