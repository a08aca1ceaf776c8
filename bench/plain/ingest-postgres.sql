-- The plain side of `track --from events.ndjson --create-users` on PostgreSQL (bench/postgres.sh,
-- bench/scale.sh): the NDJSON lines into a staging table, then users, events and counters.
CREATE TEMP TABLE raw (line jsonb);
\copy raw (line) FROM 'events.ndjson'
BEGIN;
INSERT INTO users (id, created_at, last_seen_at)
    SELECT line ->> 'user', min(line ->> 'at'), max(line ->> 'at') FROM raw GROUP BY 1
    ON CONFLICT (id) DO NOTHING;
INSERT INTO events (user_id, action, at, count, idempotency_key)
    SELECT line ->> 'user', line ->> 'action', line ->> 'at', 1, line ->> 'id' FROM raw;
INSERT INTO counters (user_id, action, total)
    SELECT line ->> 'user', line ->> 'action', count(*) FROM raw GROUP BY 1, 2;
COMMIT;
