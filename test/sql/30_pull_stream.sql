-- kizunasync.pull: the candidate stream and page assembly.  Paging, exact
-- fit, scan cap, incoming holes, tombstones and grants, conflicts and the
-- client registry.  Bookkeeping is written directly (as capture would) by
-- the helpers below, so seqs are fixed: the sequence restarts at 101.
SET client_min_messages = warning;
CREATE SCHEMA pull_t;
GRANT USAGE ON SCHEMA pull_t TO authenticated;
CREATE TABLE pull_t.todos (id uuid PRIMARY KEY, owner_id uuid, title text, done boolean);
ALTER TABLE pull_t.todos ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON pull_t.todos USING (owner_id = auth.uid());
GRANT SELECT ON pull_t.todos TO authenticated;
CREATE TABLE pull_t.notes (id bigint PRIMARY KEY, body text);
GRANT SELECT ON pull_t.notes TO authenticated;
INSERT INTO kizunasync.synced_tables (table_name, relid, bucket_column, conflict_journal, register_clients)
VALUES ('todos', 'pull_t.todos', 'owner_id', true, true), ('notes', 'pull_t.notes', NULL, false, false);
SELECT setval('kizunasync.change_seq', 100) AS base;
UPDATE kizunasync.reap_state SET reaped_seq = 0;

-- an upsert as capture records it: latest entry per (table, pk)
CREATE FUNCTION pull_t.cl(t text, k text, b text) RETURNS bigint LANGUAGE sql AS $$
	DELETE FROM kizunasync.changelog WHERE table_name = t AND pk = k;
	INSERT INTO kizunasync.changelog VALUES (nextval('kizunasync.change_seq'), t, k, b)
	RETURNING seq $$;
-- a delete (or a move-out when keep_entry): one tombstone per (table, pk, bucket value)
CREATE FUNCTION pull_t.tomb(t text, k text, b text, col text, at timestamptz, keep_entry boolean DEFAULT false)
RETURNS bigint LANGUAGE sql AS $$
	DELETE FROM kizunasync.changelog WHERE table_name = t AND pk = k AND NOT keep_entry;
	DELETE FROM kizunasync.tombstones WHERE table_name = t AND pk = k AND bucket_value = coalesce(b, '');
	INSERT INTO kizunasync.tombstones VALUES (nextval('kizunasync.change_seq'), t, k, coalesce(b, ''),
		CASE WHEN col IS NULL THEN '{}'::jsonb ELSE jsonb_build_object(col, b) END, at)
	RETURNING seq $$;
CREATE FUNCTION pull_t.todo(n int, owner text, title text) RETURNS bigint LANGUAGE sql AS $$
	INSERT INTO pull_t.todos VALUES (('00000000-0000-4000-8000-e1000000000' || n)::uuid,
		('00000000-0000-4000-8000-a1000000000' || owner)::uuid, title, false)
	ON CONFLICT (id) DO UPDATE SET owner_id = EXCLUDED.owner_id, title = EXCLUDED.title;
	SELECT pull_t.cl('todos', '00000000-0000-4000-8000-e1000000000' || n, '00000000-0000-4000-8000-a1000000000' || owner) $$;
-- a compact view of a page; a tombstone of a change the caller may no
-- longer see is dated by the pull (its transaction's start): "@now"
CREATE FUNCTION pull_t.brief(p jsonb) RETURNS text LANGUAGE sql AS $$
	SELECT format('cursor=%s has_more=%s signal=%s rows=[%s] tombstones=[%s]%s',
		p ->> 'cursor', p ->> 'has_more', coalesce(p ->> 'signal', 'null'),
		(SELECT string_agg((r ->> 'seq') || ':' || right(r ->> 'pk', 2) || ':' || coalesce(r -> 'row' ->> 'title', r -> 'row' ->> 'body', '?'), ' ')
		   FROM jsonb_array_elements(p -> 'rows') r),
		(SELECT string_agg((r ->> 'seq') || ':' || right(r ->> 'pk', 2) || '@'
				|| CASE WHEN (r ->> 'deleted_at')::timestamptz = date_trunc('milliseconds', now()) THEN 'now'
						ELSE r ->> 'deleted_at' END, ' ')
		   FROM jsonb_array_elements(p -> 'tombstones') r),
		CASE WHEN p ? 'conflicts' THEN ' conflicts=' || (p -> 'conflicts')::text ELSE '' END) $$;
GRANT USAGE ON SCHEMA pull_t TO authenticated, service_role;
GRANT SELECT ON pull_t.todos TO service_role;
GRANT EXECUTE ON FUNCTION pull_t.brief(jsonb) TO authenticated, service_role;
RESET client_min_messages;

\set a '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001"}}]'
\set b '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000002"}}]'
\set ab '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001"}}, {"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000002"}}]'
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS claims;

-- pull/002: three rows, limit 2: a continuation "<start>:<last seq>", then the checkpoint
SELECT pull_t.todo(1, '1', 'row one'), pull_t.todo(2, '1', 'row two'), pull_t.todo(3, '1', 'row three');
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull(:'a', '100', 1, 2));
SELECT pull_t.brief(kizunasync.pull(:'a', '100:102', 1, 2));
-- the whole page, once, as the client receives it
SELECT jsonb_pretty(kizunasync.pull(:'a', '100:102', 1, 2));
-- exact fit closes the checkpoint (pull/004)
SELECT pull_t.brief(kizunasync.pull(:'a', '100', 1, 3));
-- a caught-up cursor gets an empty page at the same checkpoint (fencing/002)
SELECT pull_t.brief(kizunasync.pull(:'a', '103', 1));
-- the cursor crosses changes outside the request: user-b's row moves it too
RESET ROLE;
SELECT pull_t.todo(4, '2', 'row of b');
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull(:'a', '103', 1));
-- user-b's bucket, named by user-a: RLS withholds every row
SELECT pull_t.brief(kizunasync.pull(:'b', '100', 1));

-- scan cap (pull/005): two candidates examined per page, withheld ones included
RESET ROLE;
SELECT kizunasync.configure(max_pull_scan => 2) IS NOT NULL AS configured;
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull(:'a', '100', 1, 3));
SELECT pull_t.brief(kizunasync.pull(:'a', '100:102', 1, 3));
-- both buckets: row 4 (user-b's) is examined and withheld by RLS; the stream
-- then ends exactly at the cap, which closes the checkpoint
SELECT pull_t.brief(kizunasync.pull(:'ab', '102', 1, 3));
SELECT pull_t.brief(kizunasync.pull(:'ab', '103', 1, 3));
-- the extra param does not match rows 1 and 2: user-a holds the bucket's
-- grant, so they are tombstones for her (decisions/0024, "Visibility")
\set a3 '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001", "title": "row three"}}]'
SELECT pull_t.brief(kizunasync.pull(:'a3', '100', 1, 3));
SELECT pull_t.brief(kizunasync.pull(:'a3', '100:102', 1, 3));
-- a capped page can carry no entry at all and still has more: user-b,
-- without the grant, is withheld rows 1 and 2 (RLS), which still count
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000002", "role": "authenticated"}', false) IS NOT NULL AS as_b;
SELECT pull_t.brief(kizunasync.pull(:'a3', '100', 1, 3));
SELECT pull_t.brief(kizunasync.pull(:'a3', '100:102', 1, 3));
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS as_a;
-- the stream ends exactly at the cap: the checkpoint closes
SELECT pull_t.brief(kizunasync.pull(:'a', '101', 1, 3));
RESET ROLE;
SELECT kizunasync.configure(max_pull_scan => 5000) IS NOT NULL AS configured;

-- tombstones/001: the delete reaches a caller holding the grant
SELECT pull_t.tomb('todos', '00000000-0000-4000-8000-e10000000001', '00000000-0000-4000-8000-a10000000001',
                   'owner_id', '2026-01-01 00:00:04.123456+00');
DELETE FROM pull_t.todos WHERE title = 'row one';
SELECT user_id, table_name, bucket_value FROM kizunasync.bucket_grants ORDER BY 1, 2, 3;
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull(:'a', '104', 1));
-- pull/003: a page is a prefix of the stream, rows and tombstones counted together
SELECT pull_t.brief(kizunasync.pull(:'a', '101:102', 1, 1));
SELECT pull_t.brief(kizunasync.pull(:'a', '101:103', 1, 1));
-- tombstones/003: the same delete, asked for under another bucket value: nothing
SELECT pull_t.brief(kizunasync.pull(:'b', '104', 1));
-- a caller without the grant (user-b, same bucket) gets no tombstone key
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000002", "role": "authenticated"}', false) IS NOT NULL AS as_b;
SELECT pull_t.brief(kizunasync.pull(:'a', '104', 1));
-- and no sub claim at all: no grants, no tombstones
SELECT set_config('request.jwt.claims', '{"role": "authenticated"}', false) IS NOT NULL AS no_sub;
SELECT pull_t.brief(kizunasync.pull(:'a', '104', 1));
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS as_a;

-- tombstones/004: moving row 2 from user-a to user-b leaves user-a a tombstone
RESET ROLE;
SELECT pull_t.tomb('todos', '00000000-0000-4000-8000-e10000000002', '00000000-0000-4000-8000-a10000000001',
                   'owner_id', '2026-01-01 00:00:05+00', true) AS moveout_seq;
SELECT pull_t.todo(2, '2', 'row two');
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull(:'a', '105', 1));
-- a device that pulls both values while it can still see the row keeps it:
-- service_role sees every row, so the tombstone is withheld for it
RESET ROLE;
INSERT INTO kizunasync.bucket_grants VALUES ('00000000-0000-4000-8000-a10000000009', 'todos', '00000000-0000-4000-8000-a10000000001');
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000009", "role": "service_role"}', false) IS NOT NULL AS as_service;
SET ROLE service_role;
SELECT pull_t.brief(kizunasync.pull(:'ab', '105', 1));
SELECT pull_t.brief(kizunasync.pull(:'a', '105', 1));
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS as_a;
-- move-out then delete keeps one tombstone per bucket value
RESET ROLE;
SELECT pull_t.tomb('todos', '00000000-0000-4000-8000-e10000000002', '00000000-0000-4000-8000-a10000000002',
                   'owner_id', '2026-01-01 00:00:08+00');
DELETE FROM pull_t.todos WHERE title = 'row two';
SELECT seq, bucket_value, bucket_snapshot FROM kizunasync.tombstones WHERE pk LIKE '%e10000000002' ORDER BY seq;

-- an unbucketed table is table-scoped: grant value '', tombstones to grant holders
INSERT INTO pull_t.notes VALUES (7, 'seven'), (8, 'eight');
SELECT pull_t.cl('notes', '7', ''), pull_t.cl('notes', '8', '');
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull('[{"table": "notes"}]', '108', 1));
-- row 7 does not match the param: a tombstone for the grant holder
SELECT pull_t.brief(kizunasync.pull('[{"table": "notes", "params": {"body": "eight"}}]', '108', 1));
RESET ROLE;
SELECT pull_t.tomb('notes', '8', NULL, NULL, '2026-01-01 00:00:11.5+00');
DELETE FROM pull_t.notes WHERE id = 8;
SELECT user_id, table_name, bucket_value FROM kizunasync.bucket_grants ORDER BY 1, 2, 3;
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull('[{"table": "notes"}]', '110', 1));

-- incoming holes: a hole that committed is delivered ahead of the window, an
-- aborted one is dropped; neither stays in the cursor
RESET ROLE;
SELECT pull_t.todo(5, '1', 'row five') AS seq112;
SELECT nextval('kizunasync.change_seq') AS aborted_113;
SELECT pull_t.todo(6, '1', 'row six') AS seq114;
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull(:'a', '114~112.113', 1));
-- a continuation keeps the holes below its position and names the transfer's start
SELECT pull_t.brief(kizunasync.pull(:'a', '114~112.113', 1, 1));
SELECT pull_t.brief(kizunasync.pull(:'a', '114:112', 1, 1));
SELECT pull_t.brief(kizunasync.pull(:'a', '90:111~104', 1, 1));

-- conflicts (conflict/004): joined to the page by winner_seq, only for rows
-- delivered on this page, only for columns the caller can see
RESET ROLE;
SELECT pull_t.todo(5, '1', 'device-a title') AS seq115;
INSERT INTO kizunasync.conflict_journal (table_name, pk, column_name, loser_value, winner_mutation_id, conflict_mode, winner_seq)
VALUES ('todos', '00000000-0000-4000-8000-e10000000005', 'title', '"device-b title"', '00000000-0000-4000-8000-f10000000013', 'arrival', 115),
       ('todos', '00000000-0000-4000-8000-e10000000005', 'done', 'true', '00000000-0000-4000-8000-f10000000013', 'arrival', 115),
       ('todos', '00000000-0000-4000-8000-e10000000005', 'title', '"older"', '00000000-0000-4000-8000-f10000000012', 'arrival', 112),
       ('todos', '00000000-0000-4000-8000-e10000000004', 'title', '"not yours"', '00000000-0000-4000-8000-f10000000014', 'hlc', 104);
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull(:'a', '114', 1));
SELECT jsonb_pretty(kizunasync.pull(:'a', '114', 1) -> 'conflicts');
-- a page that does not carry the winning row carries no conflict
SELECT pull_t.brief(kizunasync.pull(:'ab', '103', 1, 1));
-- a revoked column's conflicts are not shown
RESET ROLE;
REVOKE SELECT ON pull_t.todos FROM authenticated;
GRANT SELECT (id, owner_id, done) ON pull_t.todos TO authenticated;
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull(:'a', '114', 1));
RESET ROLE;
GRANT SELECT ON pull_t.todos TO authenticated;
-- the journal switch off: no conflicts key
UPDATE kizunasync.synced_tables SET conflict_journal = false WHERE table_name = 'todos';
SET ROLE authenticated;
SELECT kizunasync.pull(:'a', '114', 1) ? 'conflicts' AS has_conflicts;

-- client registry: keyed by client_id, else the JWT session_id; never on a signal
SELECT kizunasync.pull(:'a', '114', 1, 10, '00000000-0000-4000-8000-c10000000001') ->> 'cursor' AS cursor;
SELECT kizunasync.pull(:'a', '114', 0, 10, '00000000-0000-4000-8000-c10000000002') -> 'signal' AS signal;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "session_id": "00000000-0000-4000-8000-c10000000003"}', false) IS NOT NULL AS with_session;
SELECT kizunasync.pull(:'a', '110', 1) ->> 'cursor' AS cursor;
-- a table that does not register clients writes nothing
SELECT kizunasync.pull('[{"table": "notes"}]', '0', 1, 10, '00000000-0000-4000-8000-c10000000004') ->> 'cursor' AS cursor;
RESET ROLE;
SELECT client_id, user_id, cursor, schema_version FROM kizunasync.clients ORDER BY client_id;
-- another user may not take over user-a's client id
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000002", "role": "authenticated"}', false) IS NOT NULL AS as_b;
SET ROLE authenticated;
SELECT kizunasync.pull(:'b', '0', 1, 10, '00000000-0000-4000-8000-c10000000001');
RESET ROLE;
SELECT client_id, user_id, cursor FROM kizunasync.clients ORDER BY client_id;
-- at most 100 registrations per user: the oldest beyond 99 others go
INSERT INTO kizunasync.clients (client_id, user_id, last_seen)
SELECT ('00000000-0000-4000-8000-d' || lpad(i::text, 11, '0'))::uuid, '00000000-0000-4000-8000-a10000000001',
       '2026-01-01'::timestamptz + i * interval '1 minute'
  FROM generate_series(1, 120) i;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS as_a;
SET ROLE authenticated;
SELECT kizunasync.pull(:'a', '114', 1, 10, '00000000-0000-4000-8000-c10000000001') ->> 'cursor' AS cursor;
RESET ROLE;
SELECT count(*) AS registrations, min(client_id::text) AS oldest_kept,
       bool_or(client_id = '00000000-0000-4000-8000-c10000000001') AS this_one_kept
  FROM kizunasync.clients WHERE user_id = '00000000-0000-4000-8000-a10000000001';

-- a bucket whose entries come after a batch full of withheld candidates of
-- another bucket is still read (found by test/tools/pull_stress.py): three
-- rows of user-b (withheld from user-a by RLS), then one of user-a's
SELECT pull_t.todo(7, '2', 'b seven') AS s1, pull_t.todo(8, '2', 'b eight') AS s2,
       pull_t.todo(9, '2', 'b nine') AS s3, pull_t.todo(6, '1', 'row six again') AS s4;
SET ROLE authenticated;
SELECT pull_t.brief(kizunasync.pull(:'ab', '115', 1, 1));
RESET ROLE;

SELECT set_config('request.jwt.claims', '', false) IS NOT NULL AS claims;
SET client_min_messages = warning;
DELETE FROM kizunasync.clients;
DELETE FROM kizunasync.bucket_grants;
DELETE FROM kizunasync.conflict_journal;
DELETE FROM kizunasync.changelog WHERE table_name IN ('todos', 'notes');
DELETE FROM kizunasync.tombstones WHERE table_name IN ('todos', 'notes');
DELETE FROM kizunasync.synced_tables WHERE table_name IN ('todos', 'notes');
DROP SCHEMA pull_t CASCADE;
RESET client_min_messages;
