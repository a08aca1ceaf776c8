#!/usr/bin/env bash
# Fails when SQL, GRDB or libpq shows up outside the backend targets, or a C
# library outside its one binding file (DESIGN §1: the engine holds no SQL and
# knows no database or C library). Run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
backends='^Sources/GuestModeSQLite/|^Sources/GuestModePostgres/'
# `sql:` arguments and statements opening a string literal: "SELECT …", """ then INSERT …
sql=$(grep -rnE --include='*.swift' '(^|[^A-Za-z])sql:|"(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA) |^[[:space:]]*(SELECT|INSERT INTO|UPDATE [a-z_]+ SET|DELETE FROM) ' Sources \
    | grep -vE "$backends" || true)
if [ -n "$sql" ]; then
    echo "SQL outside the backend targets (move it into GuestModeSQLite or GuestModePostgres):" >&2
    echo "$sql" >&2
    status=1
fi
imports=$(grep -rnE --include='*.swift' '^(@preconcurrency |internal |public |@_implementationOnly )*import (GRDB|CLibPQ|CArchive|ArgumentParser)\b' Sources/GuestModeKit || true)
if [ -n "$imports" ]; then
    echo "The engine imports a database, C library or the argument parser:" >&2
    echo "$imports" >&2
    status=1
fi
[ "$status" = 0 ] && echo "layout: no SQL outside the backends, no database, C library or CLI import in the engine"
exit "$status"
