-- Retention: reap horizon, bounded calls, service guard, pruning.
-- Bookkeeping rows are inserted directly (as the owner) to control ages,
-- below the seqs earlier tests used: the reap's walks start from the first
-- tombstone again.
SET client_min_messages = warning;
UPDATE kizunasync.reap_state SET walk_ttl_days = NULL, walk_seqs = NULL;
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
INSERT INTO kizunasync.verdicts (mutation_id, user_id, server_row, recorded_at) VALUES
  ('00000000-0000-4000-8000-f10000000001', NULL, false, now() - interval '100 days'),
  ('00000000-0000-4000-8000-f10000000002', NULL, false, now());
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
-- the reap's walks (issue 30 item 3, decisions/0003): a table with a shorter
-- TTL is reaped past another table's tombstones that are not due yet; a
-- tombstone numbered late (its transaction began long before it deleted)
-- and one dated in the future (a clock set forward for a while) hold up
-- nothing behind them; each walk goes on from where it stopped
DELETE FROM kizunasync.tombstones;
UPDATE kizunasync.reap_state SET reaped_seq = 0, walk_ttl_days = NULL, walk_seqs = NULL;
CREATE TABLE public.ret_short (id int PRIMARY KEY);
ALTER TABLE public.ret_short ENABLE ROW LEVEL SECURITY;
SELECT kizunasync.sync_table('public.ret_short', tombstone_ttl_days => 2) AS seeded;
INSERT INTO kizunasync.tombstones (seq, table_name, pk, bucket_value, deleted_at) VALUES
  (41, 'gone_tbl', 'l1', '', now() - interval '20 days'),
  (42, 'ret_short', 's1', '', now() - interval '10 days'),
  (43, 'gone_tbl', 'l2', '', now() - interval '19 days'),
  (44, 'ret_short', 's2', '', now() - interval '5 days'),
  (45, 'ret_short', 's3', '', now() - interval '1 day'),
  (46, 'gone_tbl', 'l3', '', now() - interval '40 days'),
  (47, 'gone_tbl', 'l4', '', now() + interval '1 year'),
  (48, 'gone_tbl', 'l5', '', now() - interval '35 days');
SELECT kizunasync.reap_tombstones() AS reaped_max;
SELECT seq, table_name, pk FROM kizunasync.tombstones ORDER BY seq;
-- the floor stays below the first tombstone it could not remove (41); the
-- 2-day walk goes on from the first of its own it kept (45), the 30-day
-- walk from 41
SELECT reaped_seq, walk_ttl_days, walk_seqs FROM kizunasync.reap_state;
-- nothing due: no row is written
SELECT xmin AS state_xmin FROM kizunasync.reap_state \gset
SELECT kizunasync.reap_tombstones() AS reaped_max;
SELECT xmin = :'state_xmin' AS state_untouched FROM kizunasync.reap_state;
-- 41 comes due: the floor removes it and stops at 43; the horizon stays
UPDATE kizunasync.tombstones SET deleted_at = deleted_at - interval '20 days' WHERE seq = 41;
SELECT kizunasync.reap_tombstones() AS reaped_max;
SELECT reaped_seq, walk_ttl_days, walk_seqs FROM kizunasync.reap_state;
-- per-row HLC stamps of tables that do not resolve by hlc (gone, or arrival)
-- are removed by table name; an hlc table's stay
CREATE TABLE public.ret_hlc (id int PRIMARY KEY, v text);
ALTER TABLE public.ret_hlc ENABLE ROW LEVEL SECURITY;
SELECT kizunasync.sync_table('public.ret_hlc', conflict_mode => 'hlc') AS seeded;
INSERT INTO kizunasync.row_hlc (table_name, pk) VALUES
  ('gone_tbl', '1'), ('gone_tbl', '2'), ('ret_short', '1'), ('ret_hlc', '1');
SELECT kizunasync.reap_tombstones(1) AS reaped_max;
SELECT table_name, count(*) FROM kizunasync.row_hlc GROUP BY 1 ORDER BY 1;
SELECT kizunasync.reap_tombstones() AS reaped_max;
SELECT table_name, pk FROM kizunasync.row_hlc ORDER BY 1, 2;
SELECT kizunasync.unsync_table('public.ret_short'), kizunasync.unsync_table('public.ret_hlc');
DROP TABLE public.ret_short, public.ret_hlc;
-- clean up
DELETE FROM kizunasync.tombstones;
TRUNCATE kizunasync.clients, kizunasync.verdicts, kizunasync.bucket_grants;
UPDATE kizunasync.reap_state SET reaped_seq = 0, reaped_at = NULL, walk_ttl_days = NULL, walk_seqs = NULL;
DELETE FROM auth.users;
RESET client_min_messages;
