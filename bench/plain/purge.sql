-- The plain side of `user purge --inactive-days 90 --yes`: what the purge
-- decides for the bench data (anonymous guests last seen before the cutoff,
-- without records or a plan in force) in one DELETE; the foreign keys cascade
-- into the child tables as they do for guestmode, and the tables without a
-- foreign key are cleared the same way. :cutoff is replaced by the script.
PRAGMA foreign_keys = ON;
BEGIN;
CREATE TEMP TABLE gone AS
    SELECT id FROM users u
    WHERE state = 'anonymous' AND last_seen_at < ':cutoff'
      AND NOT EXISTS (SELECT 1 FROM records r WHERE r.owner_id = u.id)
      AND NOT EXISTS (SELECT 1 FROM plans p WHERE p.user_id = u.id);
DELETE FROM records WHERE owner_id IN (SELECT id FROM gone);
DELETE FROM conflict_archive WHERE owner_id IN (SELECT id FROM gone);
DELETE FROM outbox WHERE user_id IN (SELECT id FROM gone);
DELETE FROM user_flags WHERE user_id IN (SELECT id FROM gone);
DELETE FROM users WHERE id IN (SELECT id FROM gone);
SELECT id FROM gone;
COMMIT;
