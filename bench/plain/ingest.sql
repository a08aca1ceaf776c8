-- The plain side of `track --from events.ndjson --create-users`: load the
-- NDJSON lines into a staging table, then users, events and counters with
-- INSERT ... SELECT (guestmode also validates every line first, dedupes
-- idempotency keys and moves last-seen forward).
CREATE TEMP TABLE raw (line TEXT);
.import events.ndjson raw
BEGIN;
INSERT OR IGNORE INTO users (id, created_at, last_seen_at)
    SELECT line ->> 'user', min(line ->> 'at'), max(line ->> 'at') FROM raw GROUP BY 1;
INSERT INTO events (user_id, action, at, count, idempotency_key)
    SELECT line ->> 'user', line ->> 'action', line ->> 'at', 1, line ->> 'id' FROM raw;
INSERT INTO counters (user_id, action, total)
    SELECT line ->> 'user', line ->> 'action', COUNT(*) FROM raw GROUP BY 1, 2;
COMMIT;
