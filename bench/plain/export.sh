#!/bin/sh
# The plain side of `backup export USER`: the user's records as JSON,
# compressed with zstd -3. Usage: export.sh store user out
set -eu
sqlite3 -json "$1" "SELECT * FROM records WHERE owner_id = '$2' ORDER BY rowid" | zstd -q -3 -f -o "$3"
