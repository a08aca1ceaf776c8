#!/usr/bin/env bash
# Runs a command with a throwaway WebDAV server: Debian's nginx with its DAV
# module, in a temporary folder, as the unprivileged `www-data` user when
# root, on 127.0.0.1 at a free port and never anywhere else. Its one
# location, /dav/, takes PUT, DELETE, MKCOL, COPY and MOVE and answers 401 to
# a request without `Authorization: Bearer <token>`; /echo/ answers every
# request 403 with its Authorization header in the body. The command sees
#   GUESTMODE_TEST_WEBDAV_URL         the location's URL, ending in /
#   GUESTMODE_TEST_WEBDAV_TOKEN_FILE  a file holding the token
#   GUESTMODE_TEST_WEBDAV_ROOT        the folder nginx stores files in
# The server and its folder are removed at exit, whatever happens. A missing
# nginx is a failure (exit 69), never a reason to skip.
set -euo pipefail
if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGUMENT…]" >&2
    exit 64
fi
nginx=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null || true)
if [ -z "$nginx" ] || [ ! -x "$nginx" ]; then
    echo "with-nginx: no nginx found; run 'make deps' (apt: nginx)" >&2
    exit 69
fi
root=$(mktemp -d /tmp/guestmode-nginx.XXXXXX)
stop() {
    if [ -s "$root/run/nginx.pid" ]; then
        kill "$(cat "$root/run/nginx.pid")" 2>/dev/null || true
        for _ in $(seq 50); do [ -e "$root/run/nginx.pid" ] || break; sleep 0.1; done
    fi
    rm -rf "$root"
}
trap stop EXIT INT TERM
as_server() {
    if [ "$(id -u)" = 0 ]; then runuser -u www-data -- "$@"; else "$@"; fi
}
mkdir -p "$root/data/dav" "$root/temp" "$root/run"
python3 -c 'import secrets; print(secrets.token_hex(24))' >"$root/token"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
cat >"$root/nginx.conf" <<EOF
daemon on;
worker_processes 1;
pid $root/run/nginx.pid;
error_log $root/run/error.log warn;
events { worker_connections 64; }
http {
    access_log $root/run/access.log;
    client_body_temp_path $root/temp/body;
    proxy_temp_path $root/temp/proxy;
    fastcgi_temp_path $root/temp/fastcgi;
    uwsgi_temp_path $root/temp/uwsgi;
    scgi_temp_path $root/temp/scgi;
    client_max_body_size 0;
    server {
        listen 127.0.0.1:$port;
        root $root/data;
        location /dav/ {
            if (\$http_authorization != "Bearer $(cat "$root/token")") { return 401; }
            dav_methods PUT DELETE MKCOL COPY MOVE;
            create_full_put_path on;
            dav_access user:rw;
        }
        # A server that refuses and echoes the credential back, for the test that it is never printed.
        location /echo/ { return 403 "refused \$http_authorization"; }
    }
}
EOF
chmod 755 "$root"
if [ "$(id -u)" = 0 ]; then chown -R www-data: "$root/data" "$root/temp" "$root/run"; fi
# The server holds none of the caller's descriptors past 0-2, so a caller reading this script's
# output to its end is not kept waiting by it.
(
    for descriptor in /proc/$BASHPID/fd/*; do
        descriptor=${descriptor##*/}
        if [ "$descriptor" -gt 2 ]; then eval "exec $descriptor>&-"; fi
    done
    as_server "$nginx" -e "$root/run/error.log" -p "$root" -c "$root/nginx.conf" </dev/null >/dev/null 2>"$root/run/start.log"
) || { cat "$root/run/start.log" "$root/run/error.log" >&2; exit 70; }
for _ in $(seq 100); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then break; fi
    sleep 0.1
done
export GUESTMODE_TEST_WEBDAV_URL="http://127.0.0.1:$port/dav/"
export GUESTMODE_TEST_WEBDAV_TOKEN_FILE="$root/token"
export GUESTMODE_TEST_WEBDAV_ROOT="$root/data/dav"
set +e
"$@"
status=$?
set -e
exit "$status"
