#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL server (scripts/postgres-server.sh:
# initdb and pg_ctl as the `postgres` user, in a temporary folder, on a Unix
# socket there and on 127.0.0.1 at a free port, with the database
# `guestmode_test`). The command sees GUESTMODE_TEST_POSTGRES (a URI) and the
# PG* variables psql reads. The server and its folder are removed at exit,
# whatever happens. Nothing but this machine is ever contacted.
set -euo pipefail
if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGUMENT…]" >&2
    exit 64
fi
server="$(dirname "$0")/postgres-server.sh"
root=$(mktemp -d /tmp/guestmode-pg.XXXXXX)
trap 'bash "$server" remove "$root"' EXIT INT TERM
uri=$(bash "$server" init "$root")
export PGHOST=127.0.0.1 PGPORT=$(cat "$root/port") PGUSER=guestmode PGDATABASE=guestmode_test
export GUESTMODE_TEST_POSTGRES="$uri"
set +e
"$@"
status=$?
set -e
exit "$status"
