#!/usr/bin/env bash
# A throwaway PostgreSQL server in a folder of its own, for tests that stop
# and restart the database under guestmode (scripts/with-postgres.sh starts
# the shared one). initdb and pg_ctl run as the `postgres` user when root
# (the server refuses root); it listens on 127.0.0.1 at a free port and on
# a Unix socket in the folder, never anywhere else. The server holds none of
# the caller's descriptors, so a caller reading this script's output to its
# end is not kept waiting by the server it started.
#
#   postgres-server.sh init DIR      create DIR/data and the database guestmode_test; prints the URI
#   postgres-server.sh start DIR     start it again on the same port
#   postgres-server.sh stop DIR      stop it at once (-m immediate), as a crash would
#   postgres-server.sh remove DIR    stop it and remove DIR
set -euo pipefail
if [ "$#" -ne 2 ]; then
    echo "usage: $0 init|start|stop|remove DIR" >&2
    exit 64
fi
action=$1
root=$2
# A caller's pipes inherited past 0-2 would stay open in the server for its
# whole life, and a caller reading them to their end would wait forever.
for descriptor in /proc/$$/fd/*; do
    descriptor=${descriptor##*/}
    if [ "$descriptor" -gt 2 ]; then eval "exec $descriptor>&-"; fi
done
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "postgres-server: no PostgreSQL server found; run 'make deps' (apt: postgresql)" >&2
    exit 69
fi
as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# max_connections: the test suite runs many servers and processes at once on both backends, each with
# a connection pool; past 64 a busy run met "sorry, too many clients already".
start() {
    local port
    port=$(cat "$root/port")
    as_postgres "$bindir/pg_ctl" -D "$root/data" -l "$root/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$root -c fsync=off -c max_connections=200" \
        start </dev/null >/dev/null 2>"$root/pg_ctl.log" || { cat "$root/pg_ctl.log" "$root/server.log" >&2; exit 70; }
}
case "$action" in
init)
    mkdir -p "$root"
    chmod 755 "$root"
    [ "$(id -u)" = 0 ] && chown postgres: "$root"
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' \
        >"$root/port"
    as_postgres "$bindir/initdb" -D "$root/data" -U guestmode --auth=trust -E UTF8 --no-instructions \
        >"$root/initdb.log" 2>&1 || { cat "$root/initdb.log" >&2; exit 70; }
    start
    "$bindir/createdb" -h 127.0.0.1 -p "$(cat "$root/port")" -U guestmode guestmode_test
    echo "postgresql://guestmode@127.0.0.1:$(cat "$root/port")/guestmode_test"
    ;;
start) start ;;
stop) as_postgres "$bindir/pg_ctl" -D "$root/data" -m immediate stop >/dev/null 2>&1 || true ;;
remove)
    as_postgres "$bindir/pg_ctl" -D "$root/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$root"
    ;;
*)
    echo "usage: $0 init|start|stop|remove DIR" >&2
    exit 64
    ;;
esac
