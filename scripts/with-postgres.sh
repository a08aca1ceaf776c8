#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL server: initdb and pg_ctl as the
# `postgres` user (the server refuses root) into a temporary folder, listening
# on a Unix socket there and on 127.0.0.1 at a free port, with the database
# `guestmode_test`. The command sees GUESTMODE_TEST_POSTGRES (a URI) and the
# PG* variables psql reads. The server and its folder are removed at exit,
# whatever happens. Nothing but this machine is ever contacted.
set -euo pipefail
if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGUMENT…]" >&2
    exit 64
fi
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "with-postgres: no PostgreSQL server found; run 'make deps' (apt: postgresql)" >&2
    exit 69
fi
as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
root=$(mktemp -d /tmp/guestmode-pg.XXXXXX)
chmod 755 "$root"
[ "$(id -u)" = 0 ] && chown postgres: "$root"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
stop() {
    as_postgres "$bindir/pg_ctl" -D "$root/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$root"
}
trap stop EXIT INT TERM
as_postgres "$bindir/initdb" -D "$root/data" -U guestmode --auth=trust -E UTF8 --no-instructions >"$root/initdb.log" 2>&1 \
    || { cat "$root/initdb.log" >&2; exit 70; }
as_postgres "$bindir/pg_ctl" -D "$root/data" -l "$root/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$root -c fsync=off -c max_connections=64" \
    start >/dev/null || { cat "$root/server.log" >&2; exit 70; }
"$bindir/createdb" -h 127.0.0.1 -p "$port" -U guestmode guestmode_test
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=guestmode PGDATABASE=guestmode_test
export GUESTMODE_TEST_POSTGRES="postgresql://guestmode@127.0.0.1:$port/guestmode_test"
set +e
"$@"
status=$?
set -e
exit "$status"
