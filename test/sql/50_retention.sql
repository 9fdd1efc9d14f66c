-- Retention: reap horizon, bounded calls, service guard, pruning.
-- Bookkeeping rows are inserted directly (as the owner) to control ages.
SET client_min_messages = warning;
INSERT INTO kizunasync.tombstones (seq, table_name, pk, bucket_value, deleted_at) VALUES
  (10, 'gone_tbl', 'a', '', now() - interval '40 days'),
  (12, 'gone_tbl', 'b', '', now() - interval '31 days'),
  (15, 'gone_tbl', 'c', '', now() - interval '29 days'),
  (20, 'gone_tbl', 'd', '', now() - interval '1 day');
-- bounded: one row per call, oldest seq first
SELECT kizunasync.reap_tombstones(1) AS reaped_max;
SELECT reaped_seq FROM kizunasync.reap_state;
SELECT kizunasync.reap_tombstones() AS reaped_max;
SELECT reaped_seq FROM kizunasync.reap_state;
SELECT seq FROM kizunasync.tombstones ORDER BY seq;
-- nothing due: the horizon does not move backwards
SELECT kizunasync.reap_tombstones() AS reaped_max;
SELECT reaped_seq, reaped_at IS NOT NULL AS reaped_at_set FROM kizunasync.reap_state;
-- a shorter default TTL makes more due
SELECT kizunasync.configure(tombstone_ttl_days => 28) IS NOT NULL AS configured;
SELECT kizunasync.reap_tombstones() AS reaped_max;
SELECT reaped_seq FROM kizunasync.reap_state;
SELECT kizunasync.configure(tombstone_ttl_days => 30) IS NOT NULL AS configured;
-- bad arguments
SELECT kizunasync.reap_tombstones(0);
SELECT kizunasync.reap_tombstones(NULL);
-- the service guard: a client JWT is refused, service_role and no JWT pass
BEGIN;
SELECT set_config('request.jwt.claims', '{"sub":"00000000-0000-4000-8000-a10000000001","role":"authenticated"}', true);
SELECT kizunasync.reap_tombstones();
ROLLBACK;
BEGIN;
SELECT set_config('request.jwt.claims', '{"role":"service_role"}', true);
SET LOCAL ROLE service_role;
SELECT kizunasync.reap_tombstones() >= 0 AS service_role_may_reap;
ROLLBACK;
-- API roles: authenticated cannot even execute it
BEGIN;
SET LOCAL ROLE authenticated;
SELECT kizunasync.compact_changelog();
ROLLBACK;
-- prune: stale clients and verdicts; bucket grants stay, also of a user auth.users does not have (decisions/0003)
INSERT INTO auth.users (id) VALUES ('00000000-0000-4000-8000-a10000000001');
INSERT INTO kizunasync.clients (client_id, user_id, last_seen) VALUES
  ('00000000-0000-4000-8000-c10000000001', '00000000-0000-4000-8000-a10000000001', now() - interval '91 days'),
  ('00000000-0000-4000-8000-c10000000002', '00000000-0000-4000-8000-a10000000001', now());
INSERT INTO kizunasync.verdicts (mutation_id, user_id, verdict, recorded_at) VALUES
  ('00000000-0000-4000-8000-f10000000001', NULL, '{}', now() - interval '100 days'),
  ('00000000-0000-4000-8000-f10000000002', NULL, '{}', now());
INSERT INTO kizunasync.bucket_grants (user_id, table_name, bucket_value) VALUES
  ('00000000-0000-4000-8000-a10000000001', 't', ''),
  ('00000000-0000-4000-8000-a10000000002', 't', '');
SELECT kizunasync.prune_clients() AS clients_pruned;
SELECT client_id FROM kizunasync.clients ORDER BY 1;
SELECT mutation_id FROM kizunasync.verdicts ORDER BY 1;
SELECT user_id FROM kizunasync.bucket_grants ORDER BY 1;
-- compact: entries of unsynced tables and journal rows whose winner is gone
INSERT INTO kizunasync.changelog (seq, table_name, pk, bucket_value) VALUES (30, 'gone_tbl', 'x', '');
INSERT INTO kizunasync.conflict_journal (table_name, pk, column_name, loser_value, winner_mutation_id, conflict_mode, winner_seq)
  VALUES ('gone_tbl', 'x', 'title', '"old"', '00000000-0000-4000-8000-f10000000003', 'arrival', 31);
SELECT kizunasync.compact_changelog() AS compacted;
SELECT count(*) AS changelog_left FROM kizunasync.changelog;
SELECT count(*) AS journal_left FROM kizunasync.conflict_journal;
-- clean up
TRUNCATE kizunasync.tombstones, kizunasync.clients, kizunasync.verdicts, kizunasync.bucket_grants;
UPDATE kizunasync.reap_state SET reaped_seq = 0, reaped_at = NULL;
DELETE FROM auth.users;
RESET client_min_messages;
