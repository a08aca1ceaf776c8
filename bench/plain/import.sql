-- The plain side of `backup import`: the rows (NDJSON, decompressed by zstd
-- into rows.ndjson) loaded into a staging table, then one INSERT ... SELECT
-- per table (here the users row and the records), in one transaction.
CREATE TEMP TABLE raw (line TEXT);
.import rows.ndjson raw
BEGIN;
INSERT INTO users (id, created_at, last_seen_at) VALUES ('bench', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
    SELECT line ->> 'owner_id', line ->> 'collection', line ->> 'key', line ->> 'data',
           line ->> 'created_at', line ->> 'updated_at' FROM raw;
COMMIT;
