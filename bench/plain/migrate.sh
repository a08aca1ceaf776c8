#!/bin/sh
# The plain side of `migrate GUEST --to ACCOUNT`: a safety copy of both users'
# records (sqlite3 -json | zstd, as the backup guestmode takes first), then
# raw UPDATEs moving the guest's rows to the account, in one transaction.
# Usage: migrate.sh store guest account
set -eu
store=$1 guest=$2 account=$3
sqlite3 -json "$store" "SELECT * FROM records WHERE owner_id IN ('$guest', '$account') ORDER BY rowid" |
    zstd -q -3 -f -o safety.json.zst
sqlite3 "$store" <<SQL
PRAGMA foreign_keys = ON;
BEGIN;
UPDATE records SET owner_id = '$account' WHERE owner_id = '$guest';
UPDATE events SET user_id = '$account' WHERE user_id = '$guest';
INSERT INTO counters (user_id, action, total)
    SELECT '$account', action, total FROM counters WHERE user_id = '$guest'
    ON CONFLICT (user_id, action) DO UPDATE SET total = total + excluded.total;
DELETE FROM counters WHERE user_id = '$guest';
COMMIT;
SQL
