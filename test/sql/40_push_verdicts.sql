-- kizunasync.push: verdicts, ledger, atomic batches, RLS, column gate,
-- constraints, delete-wins, preconditions, journal.  Hand reproductions of
-- push/001, push/005, push/007 and increment/004 are marked.
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE SCHEMA pt;
-- Call push as an authenticated user (claims and role last until the end
-- of the statement's transaction).
CREATE FUNCTION pt.push(uid text, batch jsonb, sv integer DEFAULT 1, client uuid DEFAULT NULL)
RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('request.jwt.claims',
		json_build_object('sub', uid, 'role', 'authenticated')::text, true);
	SET LOCAL ROLE authenticated;
	RETURN kizunasync.push(batch, NULL, sv, client);
END $$;
GRANT USAGE ON SCHEMA pt TO authenticated;
GRANT EXECUTE ON FUNCTION pt.push TO authenticated;
CREATE TABLE public.todos (
	id uuid PRIMARY KEY, owner_id uuid NOT NULL, title text, done boolean,
	likes integer NOT NULL DEFAULT 0, version integer NOT NULL DEFAULT 0,
	labels text[] NOT NULL DEFAULT '{}', deleted_at timestamptz,
	CHECK (title IS DISTINCT FROM 'forbidden'));
ALTER TABLE public.todos ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.todos FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.todos TO authenticated;
SELECT kizunasync.sync_table('public.todos', bucket_column => 'owner_id') >= 0 AS synced;
RESET client_min_messages;
\set ua '00000000-0000-4000-8000-a10000000001'
\set ub '00000000-0000-4000-8000-a10000000002'

-- push/001: a single insert is applied and numbered
SELECT pt.push(:'ua', '{"atomic": false, "mutations": [{"columns": {"done": false, "owner_id": "00000000-0000-4000-8000-a10000000001", "title": "first local todo"}, "mutation_id": "00000000-0000-4000-8000-f10000000001", "op": "insert", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}');
SELECT count(*) AS changes FROM kizunasync.changelog WHERE table_name = 'todos';

-- replay by the same user: the recorded verdict, nothing applied again
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"title": "other"}, "mutation_id": "00000000-0000-4000-8000-F10000000001", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}');
SELECT title FROM public.todos;
-- replay of another user's mutation id: RLS_DENIED, null server_row
SELECT pt.push(:'ub', '{"mutations": [{"columns": {"title": "other"}, "mutation_id": "00000000-0000-4000-8000-f10000000001", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}');
-- a repeated id inside one batch answers as a replay of the first
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"title": "t1"}, "mutation_id": "00000000-0000-4000-8000-f10000000002", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}, {"columns": {"title": "t2"}, "mutation_id": "00000000-0000-4000-8000-f10000000002", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}');
SELECT title FROM public.todos;

-- RLS: user b cannot touch a's row (hidden: null server_row) and the
-- rejection does not wedge the rest of the batch
SELECT pt.push(:'ub', '{"mutations": [{"columns": {"title": "mine now"}, "mutation_id": "00000000-0000-4000-8000-f10000000003", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}, {"columns": {"owner_id": "00000000-0000-4000-8000-a10000000002", "title": "b row"}, "mutation_id": "00000000-0000-4000-8000-f10000000004", "op": "insert", "pk": "00000000-0000-4000-8000-e10000000002", "table": "todos"}]}');
-- inserting over another user's existing key, handing a row to another
-- user (WITH CHECK), deleting another's row, an update of an absent row
SELECT pt.push(:'ub', '{"mutations": [{"columns": {"owner_id": "00000000-0000-4000-8000-a10000000002", "title": "steal"}, "mutation_id": "00000000-0000-4000-8000-f10000000005", "op": "insert", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}, {"columns": {"owner_id": "00000000-0000-4000-8000-a10000000001"}, "mutation_id": "00000000-0000-4000-8000-f10000000006", "op": "update", "pk": "00000000-0000-4000-8000-e10000000002", "table": "todos"}, {"mutation_id": "00000000-0000-4000-8000-f10000000007", "op": "delete", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}, {"columns": {"title": "ghost"}, "mutation_id": "00000000-0000-4000-8000-f10000000008", "op": "update", "pk": "00000000-0000-4000-8000-e10000000003", "table": "todos"}]}');
SELECT id, owner_id, title FROM public.todos ORDER BY id;

-- CONSTRAINT: a check constraint, an insert whose key column contradicts
-- its pk, an increment of a text column, an integer overflow
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"title": "forbidden"}, "mutation_id": "00000000-0000-4000-8000-f10000000009", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}, {"columns": {"id": "00000000-0000-4000-8000-e10000000009", "owner_id": "00000000-0000-4000-8000-a10000000001"}, "mutation_id": "00000000-0000-4000-8000-f10000000010", "op": "insert", "pk": "00000000-0000-4000-8000-e10000000005", "table": "todos"}, {"columns": {"done": true}, "mutation_id": "00000000-0000-4000-8000-f10000000011", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos", "transforms": {"title": {"by": 1, "op": "increment"}}}, {"mutation_id": "00000000-0000-4000-8000-f10000000012", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos", "transforms": {"likes": {"by": "3000000000", "op": "increment"}}}]}');
-- a rejected mutation applied none of its columns (done is still false)
SELECT done, likes FROM public.todos WHERE id = '00000000-0000-4000-8000-e10000000001';

-- PRECONDITION is typed: "0" matches integer 0, a timestamptz in another
-- spelling matches, a different value does not
UPDATE public.todos SET deleted_at = '2026-01-01 10:00:00+00' WHERE id = '00000000-0000-4000-8000-e10000000001';
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"version": 1}, "precondition": {"likes": "0", "deleted_at": "2026-01-01T12:00:00+02:00"}, "mutation_id": "00000000-0000-4000-8000-f10000000013", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}, {"columns": {"version": 2}, "precondition": {"version": 7}, "mutation_id": "00000000-0000-4000-8000-f10000000014", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}');

-- push/007: a replayed rejection renders the row as it stands now
UPDATE public.todos SET title = 'renamed by device-b' WHERE id = '00000000-0000-4000-8000-e10000000001';
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"version": 2}, "precondition": {"version": 7}, "mutation_id": "00000000-0000-4000-8000-f10000000014", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}') -> 'verdicts' -> 0 -> 'server_row' ->> 'title' AS replay_title;

-- push/005: an atomic batch reverts entirely on its first rejection; it
-- draws no seq and records no verdict
SELECT max(seq) AS seq_before FROM kizunasync.changelog \gset
SELECT pt.push(:'ua', '{"atomic": true, "mutations": [{"columns": {"done": false, "owner_id": "00000000-0000-4000-8000-a10000000001", "title": "second task"}, "mutation_id": "00000000-0000-4000-8000-f10000000015", "op": "insert", "pk": "00000000-0000-4000-8000-e10000000004", "table": "todos"}, {"columns": {"title": "claimed by device-a"}, "mutation_id": "00000000-0000-4000-8000-f10000000016", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "precondition": {"title": "unclaimed"}, "table": "todos"}]}');
SELECT count(*) AS e4_rows FROM public.todos WHERE id = '00000000-0000-4000-8000-e10000000004';
SELECT count(*) AS recorded FROM kizunasync.verdicts WHERE mutation_id IN ('00000000-0000-4000-8000-f10000000015', '00000000-0000-4000-8000-f10000000016');
SELECT max(seq) = :seq_before AS no_seq_drawn FROM kizunasync.changelog;
-- the same atomic batch without the offender applies both, in order
SELECT pt.push(:'ua', '{"atomic": true, "mutations": [{"columns": {"done": false, "owner_id": "00000000-0000-4000-8000-a10000000001", "title": "second task"}, "mutation_id": "00000000-0000-4000-8000-f10000000015", "op": "insert", "pk": "00000000-0000-4000-8000-e10000000004", "table": "todos"}, {"columns": {"title": "third"}, "mutation_id": "00000000-0000-4000-8000-f10000000017", "op": "update", "pk": "00000000-0000-4000-8000-e10000000004", "table": "todos"}]}');
SELECT (SELECT count(*) FROM kizunasync.changelog WHERE seq > :seq_before) AS new_changes,
	   (SELECT title FROM public.todos WHERE id = '00000000-0000-4000-8000-e10000000004') AS title;

-- increment/004: the applied verdict of a transform carries server_row
SELECT pt.push(:'ua', '{"mutations": [{"columns": {}, "mutation_id": "00000000-0000-4000-8000-f10000000018", "op": "update", "pk": "00000000-0000-4000-8000-e10000000004", "table": "todos", "transforms": {"likes": {"by": 1, "op": "increment"}}}]}');

-- DELETE_WINS: a delete earlier in the same batch; a tombstone the caller
-- holds a grant for; without the grant the tombstone does not count and the
-- update is decided as the caller's own (the row is gone: RLS_DENIED)
SELECT pt.push(:'ua', '{"mutations": [{"mutation_id": "00000000-0000-4000-8000-f10000000019", "op": "delete", "pk": "00000000-0000-4000-8000-e10000000004", "table": "todos"}, {"columns": {"title": "late"}, "mutation_id": "00000000-0000-4000-8000-f10000000020", "op": "update", "pk": "00000000-0000-4000-8000-e10000000004", "table": "todos"}, {"columns": {"owner_id": "00000000-0000-4000-8000-a10000000001"}, "mutation_id": "00000000-0000-4000-8000-f10000000021", "op": "insert", "pk": "00000000-0000-4000-8000-e10000000004", "table": "todos"}]}');
SELECT count(*) AS tombstones FROM kizunasync.tombstones WHERE pk = '00000000-0000-4000-8000-e10000000004';
SELECT pt.push(:'ub', '{"mutations": [{"columns": {"title": "x"}, "mutation_id": "00000000-0000-4000-8000-f10000000022", "op": "update", "pk": "00000000-0000-4000-8000-e10000000004", "table": "todos"}]}');
INSERT INTO kizunasync.bucket_grants (user_id, table_name, bucket_value)
	VALUES (:'ua', 'todos', :'ua');
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"title": "x"}, "mutation_id": "00000000-0000-4000-8000-f10000000023", "op": "update", "pk": "00000000-0000-4000-8000-e10000000004", "table": "todos"}]}');
-- a tombstone of a bucket the caller holds no grant for changes nothing
-- (issue 23 item 10): a deletes e6; b's insert of e6 is decided as b's own
-- INSERT (applied), as b's insert of the never-used e7 is
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"owner_id": "00000000-0000-4000-8000-a10000000001"}, "mutation_id": "00000000-0000-4000-8000-f10000000040", "op": "insert", "pk": "00000000-0000-4000-8000-e10000000006", "table": "todos"}]}') -> 'verdicts' -> 0 ->> 'verdict' AS a_inserts;
SELECT pt.push(:'ua', '{"mutations": [{"mutation_id": "00000000-0000-4000-8000-f10000000041", "op": "delete", "pk": "00000000-0000-4000-8000-e10000000006", "table": "todos"}]}') -> 'verdicts' -> 0 ->> 'verdict' AS a_deletes;
SELECT pt.push(:'ub', '{"mutations": [{"columns": {"owner_id": "00000000-0000-4000-8000-a10000000002", "title": "b reuses"}, "mutation_id": "00000000-0000-4000-8000-f10000000042", "op": "insert", "pk": "00000000-0000-4000-8000-e10000000006", "table": "todos"}, {"columns": {"owner_id": "00000000-0000-4000-8000-a10000000002", "title": "b new"}, "mutation_id": "00000000-0000-4000-8000-f10000000043", "op": "insert", "pk": "00000000-0000-4000-8000-e10000000007", "table": "todos"}]}');
-- the tombstone is followed by b's row now: a's update is RLS_DENIED (b's row is hidden)
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"title": "mine?"}, "mutation_id": "00000000-0000-4000-8000-f10000000044", "op": "update", "pk": "00000000-0000-4000-8000-e10000000006", "table": "todos"}]}');
DELETE FROM public.todos WHERE id IN ('00000000-0000-4000-8000-e10000000006', '00000000-0000-4000-8000-e10000000007');

-- COLUMN_DENIED: a column without UPDATE privilege, an unknown column, a
-- key column update; the whole mutation is refused, nothing applied
REVOKE UPDATE ON public.todos FROM authenticated;
GRANT UPDATE (title, done, likes, labels, version, deleted_at, owner_id) ON public.todos TO authenticated;
REVOKE UPDATE (version) ON public.todos FROM authenticated;
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"title": "ok", "version": 9}, "mutation_id": "00000000-0000-4000-8000-f10000000024", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}, {"columns": {"nope": 1}, "mutation_id": "00000000-0000-4000-8000-f10000000025", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}, {"columns": {"id": "00000000-0000-4000-8000-e10000000001"}, "mutation_id": "00000000-0000-4000-8000-f10000000026", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}, {"columns": {"title": "ok"}, "mutation_id": "00000000-0000-4000-8000-f10000000027", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}') -> 'verdicts';
-- a column the caller cannot read is left out of server_row and never
-- matches a precondition
REVOKE SELECT ON public.todos FROM authenticated;
GRANT SELECT (id, owner_id, title, done, likes, labels, version) ON public.todos TO authenticated;
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"title": "pc"}, "precondition": {"deleted_at": "2026-01-01T10:00:00Z"}, "mutation_id": "00000000-0000-4000-8000-f10000000028", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}');
GRANT SELECT, UPDATE ON public.todos TO authenticated;

-- every decided verdict is recorded, except COLUMN_DENIED (decided from
-- privileges before any write): its reason (none: applied), whether it
-- carries a server_row, its user, and the table and key only when a replay
-- renders the row again (decisions/0033); no row copy
SELECT mutation_id, reason, server_row, table_name, pk, user_id
  FROM kizunasync.verdicts
 WHERE mutation_id IN ('00000000-0000-4000-8000-f10000000013', '00000000-0000-4000-8000-f10000000014',
					   '00000000-0000-4000-8000-f10000000018')
 ORDER BY mutation_id;
SELECT count(*) AS ledger_rows FROM kizunasync.verdicts;

-- conflict journal: one entry per column landing over a different
-- non-null value, numbered with the winner's seq
ALTER TABLE public.todos DISABLE ROW LEVEL SECURITY;
UPDATE kizunasync.synced_tables SET conflict_journal = true WHERE table_name = 'todos';
ALTER TABLE public.todos ENABLE ROW LEVEL SECURITY;
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"title": "journaled", "done": false, "likes": 0}, "mutation_id": "00000000-0000-4000-8000-f10000000029", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}');
SELECT j.column_name, j.loser_value, j.conflict_mode, j.winner_mutation_id,
	   j.winner_seq = c.seq AS seq_matches
  FROM kizunasync.conflict_journal j
  JOIN kizunasync.changelog c ON c.table_name = j.table_name AND c.pk = j.pk
 ORDER BY j.column_name;

-- client registry: on a table that registers clients, the client id is
-- recorded with the last applied mutation; another user may not take it over
UPDATE kizunasync.synced_tables SET register_clients = true WHERE table_name = 'todos';
SELECT pt.push(:'ua', '{"mutations": [{"columns": {"title": "reg"}, "mutation_id": "00000000-0000-4000-8000-f10000000030", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}, {"columns": {"title": "forbidden"}, "mutation_id": "00000000-0000-4000-8000-f10000000031", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}', 1, '00000000-0000-4000-8000-c10000000001') -> 'verdicts' -> 1 ->> 'reason' AS second;
SELECT client_id, user_id, last_mutation_id, schema_version FROM kizunasync.clients;
SELECT pt.push(:'ub', '{"mutations": [{"columns": {"title": "x"}, "mutation_id": "00000000-0000-4000-8000-f10000000032", "op": "update", "pk": "00000000-0000-4000-8000-e10000000001", "table": "todos"}]}', 1, '00000000-0000-4000-8000-c10000000001');
SELECT count(*) AS not_recorded FROM kizunasync.verdicts WHERE mutation_id = '00000000-0000-4000-8000-f10000000032';
DELETE FROM kizunasync.clients;

SELECT kizunasync.unsync_table('public.todos');
DROP TABLE public.todos;
DELETE FROM kizunasync.verdicts;
DELETE FROM kizunasync.conflict_journal;
DELETE FROM kizunasync.bucket_grants;
DROP SCHEMA pt CASCADE;
