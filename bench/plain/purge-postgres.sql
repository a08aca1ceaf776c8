-- The plain side of `user purge` on PostgreSQL (bench/postgres.sh, bench/scale.sh): what the purge decides for
-- the bench data (anonymous guests last seen before the cutoff, without records or a plan) in one DELETE, and
-- their rows in the tables without a foreign key. :cutoff is replaced by the script.
WITH gone AS (
    DELETE FROM users u
    WHERE state = 'anonymous' AND last_seen_at < ':cutoff'
      AND NOT EXISTS (SELECT 1 FROM records r WHERE r.owner_id = u.id)
      AND NOT EXISTS (SELECT 1 FROM plans p WHERE p.user_id = u.id)
    RETURNING id
), outbox_gone AS (
    DELETE FROM outbox WHERE user_id IN (SELECT id FROM gone)
), flags_gone AS (
    DELETE FROM user_flags WHERE user_id IN (SELECT id FROM gone)
), archive_gone AS (
    DELETE FROM conflict_archive WHERE owner_id IN (SELECT id FROM gone)
)
SELECT count(*) FROM gone;
