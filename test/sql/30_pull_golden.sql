-- kizunasync.pull against the real capture trigger, reproducing the steps of
-- golden transcripts by hand: pull/002 (keyset pagination), tombstones/004
-- (bucket move-out), lifecycle/006 (continuation expires when its start is
-- reaped).  The sequence restarts at 1 so seqs and cursors are the golden
-- ones; deleted_at is pinned to the golden time after each delete.  Rows
-- carry the live table's id column, which the harness projects away.
SET client_min_messages = warning;
CREATE SCHEMA gold;
GRANT USAGE ON SCHEMA gold TO authenticated;
CREATE TABLE gold.todos (id uuid PRIMARY KEY, owner_id uuid, title text, done boolean);
ALTER TABLE gold.todos ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON gold.todos USING (owner_id = auth.uid());
GRANT SELECT ON gold.todos TO authenticated;
SELECT kizunasync.sync_table('gold.todos', bucket_column => 'owner_id', table_name => 'todos');
SELECT setval('kizunasync.change_seq', 1, false) AS restart;
UPDATE kizunasync.reap_state SET reaped_seq = 0;
-- a "server" upsert step: the columns given, merged into the row
CREATE PROCEDURE gold.upsert(n int, cols jsonb) LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO gold.todos AS t
	SELECT ('00000000-0000-4000-8000-e1000000000' || n)::uuid, r.owner_id, r.title, r.done
	  FROM jsonb_populate_record(NULL::gold.todos, cols) r
	ON CONFLICT (id) DO UPDATE SET
		owner_id = CASE WHEN cols ? 'owner_id' THEN EXCLUDED.owner_id ELSE t.owner_id END,
		title = CASE WHEN cols ? 'title' THEN EXCLUDED.title ELSE t.title END,
		done = CASE WHEN cols ? 'done' THEN EXCLUDED.done ELSE t.done END;
END $$;
CREATE PROCEDURE gold.remove(n int, at text) LANGUAGE sql AS $$
	DELETE FROM gold.todos WHERE id = ('00000000-0000-4000-8000-e1000000000' || n)::uuid;
	UPDATE kizunasync.tombstones SET deleted_at = at::timestamptz
	 WHERE table_name = 'todos' AND pk = '00000000-0000-4000-8000-e1000000000' || n $$;
CREATE FUNCTION gold.page(p jsonb) RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_set(p, '{rows}', coalesce((SELECT jsonb_agg(r #- '{row,id}') FROM jsonb_array_elements(p -> 'rows') r), '[]')) $$;
GRANT EXECUTE ON FUNCTION gold.page(jsonb) TO authenticated;
RESET client_min_messages;
\set a '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001"}}]'
\set c '00000000-0000-4000-8000-c10000000001'

-- pull/002-keyset-pagination
CALL gold.upsert(1, '{"done": false, "owner_id": "00000000-0000-4000-8000-a10000000001", "title": "row one"}');
CALL gold.upsert(2, '{"done": false, "owner_id": "00000000-0000-4000-8000-a10000000001", "title": "row two"}');
CALL gold.upsert(3, '{"done": false, "owner_id": "00000000-0000-4000-8000-a10000000001", "title": "row three"}');
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS claims;
SET ROLE authenticated;
SELECT jsonb_pretty(gold.page(kizunasync.pull(:'a', '0', 1, 2, :'c')));
SELECT jsonb_pretty(gold.page(kizunasync.pull(:'a', '0:2', 1, 2, :'c')));
RESET ROLE;

-- tombstones/004-bucket-move-out (base 100: the golden seqs and cursors are
-- these minus 100)
SELECT setval('kizunasync.change_seq', 100) AS base;
CALL gold.upsert(4, '{"done": false, "owner_id": "00000000-0000-4000-8000-a10000000001", "title": "moving row"}');
SET ROLE authenticated;
SELECT jsonb_pretty(gold.page(kizunasync.pull(:'a', '100', 1, 500, :'c')));
RESET ROLE;
CALL gold.upsert(4, '{"owner_id": "00000000-0000-4000-8000-a10000000002"}');
UPDATE kizunasync.tombstones SET deleted_at = '2026-01-01T00:00:04Z' WHERE table_name = 'todos';
SET ROLE authenticated;
SELECT jsonb_pretty(gold.page(kizunasync.pull(:'a', '101', 1, 500, :'c')));
RESET ROLE;

-- lifecycle/006-continuation-expires-when-its-start-is-reaped (base 200:
-- the golden seqs are these minus 200)
DELETE FROM gold.todos;
DELETE FROM kizunasync.tombstones WHERE table_name = 'todos';
DELETE FROM kizunasync.changelog WHERE table_name = 'todos';
DELETE FROM kizunasync.bucket_grants;
SELECT setval('kizunasync.change_seq', 200) AS base;
CALL gold.upsert(5, '{"done": false, "owner_id": "00000000-0000-4000-8000-a10000000001", "title": "row one"}');
SET ROLE authenticated;
SELECT gold.page(kizunasync.pull(:'a', '200', 1, 2, :'c')) ->> 'cursor' AS cursor;
RESET ROLE;
CALL gold.upsert(6, '{"done": false, "owner_id": "00000000-0000-4000-8000-a10000000001", "title": "row two"}');
CALL gold.remove(5, '2026-01-01T00:00:05Z');
CALL gold.upsert(7, '{"done": false, "owner_id": "00000000-0000-4000-8000-a10000000001", "title": "row three"}');
SET ROLE authenticated;
SELECT jsonb_pretty(gold.page(kizunasync.pull(:'a', '201', 1, 2, :'c')));
RESET ROLE;
-- the reap (run by the operator, not a client): every tombstone so far
-- goes, the horizon rises to 203
SELECT set_config('request.jwt.claims', '', false) IS NOT NULL AS operator;
UPDATE kizunasync.tombstones SET deleted_at = now() - interval '40 days' WHERE table_name = 'todos';
SELECT kizunasync.reap_tombstones() AS reaped_to;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS claims;
SELECT reaped_seq FROM kizunasync.reap_state;
SET ROLE authenticated;
SELECT kizunasync.pull(:'a', '201:203', 1, 2, :'c') AS expired;
SELECT jsonb_pretty(gold.page(kizunasync.pull(:'a', '0', 1, 2, :'c')));
RESET ROLE;
-- register_clients is off for this table: no registration despite client_id
SELECT count(*) AS clients FROM kizunasync.clients;

SELECT set_config('request.jwt.claims', '', false) IS NOT NULL AS claims;
SET client_min_messages = warning;
UPDATE kizunasync.reap_state SET reaped_seq = 0;
DELETE FROM kizunasync.bucket_grants;
SELECT kizunasync.unsync_table('gold.todos');
DROP SCHEMA gold CASCADE;
DELETE FROM kizunasync.changelog WHERE table_name = 'todos';
DELETE FROM kizunasync.tombstones WHERE table_name = 'todos';
DELETE FROM kizunasync.synced_tables WHERE table_name = 'todos';
RESET client_min_messages;
