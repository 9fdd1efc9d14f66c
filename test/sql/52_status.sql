-- The operator view: per synced table its mode, bucket column, changelog
-- size, tombstones, reap horizon and oldest registered client.
SET client_min_messages = warning;
CREATE TABLE public.st_items (id int PRIMARY KEY, owner_id uuid, v text);
CREATE TABLE public.st_ref (code text PRIMARY KEY, label text);
SELECT kizunasync.sync_table('public.st_items', bucket_column => 'owner_id', register_clients => true)
     + kizunasync.sync_table('public.st_ref', sync_mode => 'pull-only', key_columns => '{code}') AS seeded;
RESET client_min_messages;
INSERT INTO public.st_items VALUES (1, '00000000-0000-4000-8000-a10000000001', 'a'),
  (2, '00000000-0000-4000-8000-a10000000001', 'b'), (3, NULL, 'c');
DELETE FROM public.st_items WHERE id = 2;
INSERT INTO public.st_ref VALUES ('x', 'ex');
INSERT INTO kizunasync.clients (client_id, user_id, cursor, last_seen) VALUES
  ('00000000-0000-4000-8000-c10000000001', '00000000-0000-4000-8000-a10000000001', '7', now() - interval '2 days'),
  ('00000000-0000-4000-8000-c10000000002', '00000000-0000-4000-8000-a10000000001', '9', now());
UPDATE kizunasync.reap_state SET reaped_seq = 4;
SELECT table_name, relation, sync_mode, bucket_column, key_columns, conflict_mode,
       changelog_entries, tombstones, reap_horizon, oldest_client_cursor,
       oldest_client_seen < now() - interval '1 day' AS oldest_seen_2_days_ago
  FROM kizunasync.status WHERE table_name LIKE 'st_%' ORDER BY 1;
-- service_role may read it; authenticated may not
BEGIN;
SET LOCAL ROLE service_role;
SELECT count(*) AS service_role_sees FROM kizunasync.status WHERE table_name LIKE 'st_%';
ROLLBACK;
BEGIN;
SET LOCAL ROLE authenticated;
SELECT count(*) FROM kizunasync.status;
ROLLBACK;
-- clean up
SET client_min_messages = warning;
TRUNCATE kizunasync.clients;
UPDATE kizunasync.reap_state SET reaped_seq = 0, reaped_at = NULL;
SELECT kizunasync.unsync_table('public.st_items'), kizunasync.unsync_table('public.st_ref');
DROP TABLE public.st_items, public.st_ref;
RESET client_min_messages;
