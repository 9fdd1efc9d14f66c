-- Provisioning, change capture and the TRUNCATE guard (issue 3).
SET client_min_messages = warning;
CREATE SCHEMA cap;
CREATE TABLE cap.todos (gone integer, id uuid PRIMARY KEY, owner_id uuid, title text, done boolean DEFAULT false, meta jsonb);
ALTER TABLE cap.todos DROP COLUMN gone;  -- attribute numbers with a hole
CREATE TABLE cap.pairs (a integer, b text, note text, PRIMARY KEY (a, b));
CREATE TABLE cap.nopk (id integer, x text);
CREATE TABLE cap.numkey (id numeric PRIMARY KEY);
CREATE DOMAIN cap.slug AS varchar(40);
CREATE TABLE cap.slugs (s cap.slug PRIMARY KEY, at timestamptz, flag boolean, n numeric);
CREATE TABLE cap.defer (id integer PRIMARY KEY DEFERRABLE);
RESET client_min_messages;

CREATE VIEW cap.log AS SELECT 1 AS one;
-- order of all cap entries by seq, as (kind, pk, bucket) lines
CREATE FUNCTION cap.trail() RETURNS TABLE (n bigint, kind text, table_name text, pk text, bucket_value text, snapshot jsonb)
LANGUAGE sql AS $$
  SELECT row_number() OVER (ORDER BY seq), kind, table_name, pk, bucket_value, snapshot FROM (
    SELECT seq, 'entry' AS kind, table_name, pk, bucket_value, NULL::jsonb AS snapshot
      FROM kizunasync.changelog WHERE table_name LIKE 'cap%'
    UNION ALL
    SELECT seq, 'tombstone', table_name, pk, bucket_value, bucket_snapshot
      FROM kizunasync.tombstones WHERE table_name LIKE 'cap%') s
  ORDER BY seq
$$;

-- provisioning validation
SELECT kizunasync.sync_table('cap.missing');
SELECT kizunasync.sync_table('cap.todos', sync_mode => 'write-only');
SELECT kizunasync.sync_table('cap.todos', conflict_mode => 'lww');
SELECT kizunasync.sync_table('cap.todos', bucket_column => 'tenant');
SELECT kizunasync.sync_table('cap.todos', key_columns => '{owner_id}');
SELECT kizunasync.sync_table('cap.todos', key_columns => '{id,id}');
SELECT kizunasync.sync_table('cap.todos', key_columns => '{}');
SELECT kizunasync.sync_table('cap.todos', soft_delete_column => 'deleted');
SELECT kizunasync.sync_table('cap.todos', tombstone_ttl_days => 0);
SELECT kizunasync.sync_table('cap.pairs', key_columns => '{a}');
SELECT kizunasync.sync_table('cap.nopk');
SELECT kizunasync.sync_table('cap.numkey');
SELECT kizunasync.sync_table('cap.defer');
SELECT kizunasync.sync_table('kizunasync.entries', key_columns => '{seq}');
SELECT kizunasync.sync_table('cap.log');
-- nothing was recorded by the failures
SELECT count(*) FROM kizunasync.synced_tables WHERE table_name LIKE 'cap%' OR table_name IN ('todos', 'pairs');

-- seed: existing rows are numbered when the table is synced
INSERT INTO cap.todos (id, owner_id, title) VALUES
  ('00000000-0000-4000-8000-E10000000001', '00000000-0000-4000-8000-a10000000001', 'seeded one'),
  ('00000000-0000-4000-8000-e10000000002', NULL, 'seeded, no owner');
SELECT kizunasync.sync_table('cap.todos', bucket_column => 'owner_id', table_name => 'cap_todos');
SELECT * FROM cap.trail();
-- a second table may not take the same wire name
SELECT kizunasync.sync_table('cap.pairs', key_columns => '{b,a}', table_name => 'cap_todos');
-- nor may a synced table change its wire name
SELECT kizunasync.sync_table('cap.todos', table_name => 'other');
SELECT table_name, relid, sync_mode, bucket_column, key_columns, conflict_mode FROM kizunasync.synced_tables WHERE table_name LIKE 'cap%';
SELECT tgname FROM pg_trigger WHERE tgrelid = 'cap.todos'::regclass ORDER BY 1;

TRUNCATE kizunasync.entries;

-- insert, no-op update, real update
INSERT INTO cap.todos (id, owner_id, title) VALUES ('00000000-0000-4000-8000-e10000000003', '00000000-0000-4000-8000-a10000000001', 'new');
SELECT seq AS s0 FROM kizunasync.changelog WHERE pk = '00000000-0000-4000-8000-e10000000003' \gset
UPDATE cap.todos SET title = 'new' WHERE id = '00000000-0000-4000-8000-e10000000003';
SELECT seq = :s0 AS noop_update_not_captured FROM kizunasync.changelog WHERE pk = '00000000-0000-4000-8000-e10000000003';
UPDATE cap.todos SET meta = '{"a": 1.0}' WHERE id = '00000000-0000-4000-8000-e10000000003';
SELECT seq AS s1 FROM kizunasync.changelog WHERE pk = '00000000-0000-4000-8000-e10000000003' \gset
-- 1.0 and 1.00 are equal as jsonb, but they render differently, so a pull
-- must deliver the new rendering: a change (by rendered text, not equality)
UPDATE cap.todos SET meta = '{"a": 1.00}' WHERE id = '00000000-0000-4000-8000-e10000000003';
SELECT seq > :s1 AS rendering_change_captured FROM kizunasync.changelog WHERE pk = '00000000-0000-4000-8000-e10000000003';
-- the same rendering stored again is no change
UPDATE cap.todos SET meta = '{"a": 1.00}' WHERE id = '00000000-0000-4000-8000-e10000000003';
SELECT seq AS s2 FROM kizunasync.changelog WHERE pk = '00000000-0000-4000-8000-e10000000003' \gset
UPDATE cap.todos SET meta = '{"a":    1.00}' WHERE id = '00000000-0000-4000-8000-e10000000003';
SELECT seq = :s2 AS same_rendering_not_captured FROM kizunasync.changelog WHERE pk = '00000000-0000-4000-8000-e10000000003';
SELECT * FROM cap.trail();
UPDATE cap.todos SET title = 'newer' WHERE id = '00000000-0000-4000-8000-e10000000003';
SELECT * FROM cap.trail();
-- move-out: tombstone for the old bucket value first, then the entry
UPDATE cap.todos SET owner_id = '00000000-0000-4000-8000-a10000000002' WHERE id = '00000000-0000-4000-8000-e10000000003';
SELECT * FROM cap.trail();
-- delete after the move-out keeps both tombstones and drops the entry
DELETE FROM cap.todos WHERE id = '00000000-0000-4000-8000-e10000000003';
SELECT * FROM cap.trail();
-- re-insert and delete again in the old bucket: that tombstone is renewed (new seq)
INSERT INTO cap.todos (id, owner_id, title) VALUES ('00000000-0000-4000-8000-e10000000003', '00000000-0000-4000-8000-a10000000001', 'back');
DELETE FROM cap.todos WHERE id = '00000000-0000-4000-8000-e10000000003';
SELECT * FROM cap.trail();
-- a NULL bucket value: entry bucket NULL, tombstone bucket '' with {owner_id: null}
UPDATE cap.todos SET title = 'still no owner' WHERE id = '00000000-0000-4000-8000-e10000000002';
DELETE FROM cap.todos WHERE id = '00000000-0000-4000-8000-e10000000002';
SELECT * FROM cap.trail();
-- a key change: tombstone for the old key, entry for the new one
UPDATE cap.todos SET id = '00000000-0000-4000-8000-e10000000009' WHERE id = '00000000-0000-4000-8000-e10000000001';
SELECT * FROM cap.trail();
-- several writes of one row in one transaction leave one entry
BEGIN;
UPDATE cap.todos SET title = 't1' WHERE id = '00000000-0000-4000-8000-e10000000009';
UPDATE cap.todos SET title = 't2' WHERE id = '00000000-0000-4000-8000-e10000000009';
COMMIT;
SELECT * FROM cap.trail();
-- a rolled-back write leaves nothing
BEGIN;
UPDATE cap.todos SET title = 'rolled back' WHERE id = '00000000-0000-4000-8000-e10000000009';
ROLLBACK;
SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'cap_todos';
SELECT count(*) AS tombstones FROM kizunasync.tombstones WHERE table_name = 'cap_todos';
SELECT count(*) AS entries FROM kizunasync.changelog WHERE table_name = 'cap_todos';

-- TRUNCATE is refused
TRUNCATE cap.todos;
SELECT count(*) FROM cap.todos;

-- composite keys, key order from key_columns; domains over varchar; bucket renderings
TRUNCATE kizunasync.entries;
INSERT INTO cap.pairs VALUES (1, 'x"y', 'n'), (-12, 'tab	here', 'n');
SELECT kizunasync.sync_table('cap.pairs', key_columns => '{b,a}', bucket_column => 'note', table_name => 'cap_pairs');
SELECT * FROM cap.trail();
SELECT kizunasync.sync_table('cap.slugs', key_columns => '{s}', bucket_column => 'at', table_name => 'cap_slugs');
SET TimeZone = 'Asia/Tokyo';  -- bucket text renders timestamps in UTC whatever the session says
INSERT INTO cap.slugs VALUES ('Hello World', '2026-01-01 12:00:00+09', true, 1.50);
RESET TimeZone;
SELECT pk, bucket_value FROM kizunasync.changelog WHERE table_name = 'cap_slugs';
SELECT kizunasync.sync_table('cap.slugs', key_columns => '{s}', bucket_column => 'flag', table_name => 'cap_slugs');
UPDATE cap.slugs SET flag = false;
SELECT kind, pk, bucket_value, snapshot FROM cap.trail() WHERE table_name = 'cap_slugs';
SELECT kizunasync.sync_table('cap.slugs', key_columns => '{s}', bucket_column => 'n', table_name => 'cap_slugs');
-- a number's label is its shortest exact decimal (1.50 is 1.5: decisions/0013)
SELECT pk, bucket_value FROM kizunasync.changelog WHERE table_name = 'cap_slugs';
-- an update that only the pinned rendering tells apart is captured whatever
-- the session's settings (capture pins them only before such a rendering)
CREATE TABLE cap.floats (id integer PRIMARY KEY, x float8, at timestamptz);
INSERT INTO cap.floats VALUES (1, 0.1::float8 + 0.2::float8, '2026-01-01 00:00:00+00');
SELECT kizunasync.sync_table('cap.floats', table_name => 'cap_floats');
SELECT seq AS float_seq FROM kizunasync.changelog WHERE table_name = 'cap_floats' \gset
SET extra_float_digits = -15;
UPDATE cap.floats SET x = 0.3;
RESET extra_float_digits;
SELECT seq > :float_seq AS float_captured FROM kizunasync.changelog WHERE table_name = 'cap_floats';
SELECT kizunasync.unsync_table('cap.floats');

-- re-provisioning: a new key order re-keys (re-seed, 2 rows); options only do not (0)
SELECT kizunasync.sync_table('cap.pairs', key_columns => '{a,b}', bucket_column => 'note', conflict_mode => 'hlc', table_name => 'cap_pairs');
SELECT kizunasync.sync_table('cap.pairs', key_columns => '{a,b}', bucket_column => 'note', sync_mode => 'pull-only', table_name => 'cap_pairs');
SELECT sync_mode, conflict_mode FROM kizunasync.synced_tables WHERE table_name = 'cap_pairs';
SELECT pk FROM kizunasync.changelog WHERE table_name = 'cap_pairs' ORDER BY pk;

-- the configuration cache follows changes to synced_tables
UPDATE kizunasync.synced_tables SET bucket_column = NULL WHERE table_name = 'cap_pairs';
UPDATE cap.pairs SET note = 'm' WHERE a = 1;
SELECT pk, bucket_value FROM kizunasync.changelog WHERE table_name = 'cap_pairs' AND pk = '["1", "x\"y"]';

-- unsync drops the triggers and the bookkeeping
SELECT kizunasync.unsync_table('cap.pairs');
SELECT tgname FROM pg_trigger WHERE tgrelid = 'cap.pairs'::regclass;
SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'cap_pairs';
INSERT INTO cap.pairs VALUES (2, 'z', 'n');
SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'cap_pairs';
SELECT kizunasync.unsync_table('cap.pairs');

-- API roles cannot provision
GRANT USAGE ON SCHEMA cap TO authenticated;
GRANT ALL ON cap.todos TO authenticated;
SET ROLE authenticated;
SELECT kizunasync.sync_table('cap.pairs');
SELECT kizunasync.unsync_table('cap.todos');
RESET ROLE;

-- an API role writing a synced table still records its change
TRUNCATE kizunasync.entries;
SET ROLE authenticated;
INSERT INTO cap.todos (id, owner_id, title) VALUES ('00000000-0000-4000-8000-e10000000077', '00000000-0000-4000-8000-a10000000001', 'by api role');
RESET ROLE;
SELECT * FROM cap.trail();

SELECT kizunasync.unsync_table('cap.todos');
-- dropping a synced table (cap.slugs, still synced) forgets it
INSERT INTO cap.slugs VALUES ('gone soon', NULL, NULL, 2);
SELECT count(*) AS slugs_entries FROM kizunasync.changelog WHERE table_name = 'cap_slugs';
SET client_min_messages = warning;
DROP SCHEMA cap CASCADE;
RESET client_min_messages;
SELECT count(*) FROM kizunasync.synced_tables;
SELECT count(*) AS slugs_entries FROM kizunasync.changelog WHERE table_name = 'cap_slugs';
