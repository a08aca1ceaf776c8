-- One user, `bench`, with :records completions (bench/table.sh, bench/postgres.sh): the store that backup
-- export, verify and import are measured on. :records is replaced by the script. The data is written as
-- `record put` stores it (compact, member names sorted), as every record of a guestmode store is.
INSERT INTO users (id, created_at, last_seen_at) VALUES ('bench', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :records)
INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
SELECT 'bench', 'completions', printf('c%07d', i),
       json_object('day', date('2026-01-01', '+' || (i % 365) || ' days'), 'habit', 'h' || (i % 20), 'note', 'completed ' || i),
       strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || i || ' seconds'),
       strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || i || ' seconds')
FROM n;
