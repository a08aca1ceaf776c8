#!/usr/bin/env bash
# `make bench`: every benchmark, guestmode side by side with the plain tools
# doing the same work, reported as ratios. Usage: bench/run.sh path/to/guestmode
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
binary=${1:-$here/../.build/release/guestmode}
status=0
for bench in ingest backup; do
    bash "$here/$bench.sh" "$binary" || status=1
    echo
done
# The PostgreSQL side needs a server: a throwaway one, removed at exit.
bash "$here/../scripts/with-postgres.sh" bash "$here/postgres.sh" "$(realpath "$binary")" || status=1
exit $status
