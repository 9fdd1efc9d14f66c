-- A. Temp-schema and search_path shadowing, names generated from the code.
-- db: kz_roles_a
-- plan: 44
--
-- Every attacker is its own LOGIN role with only the privileges named, in
-- its own session, one role per action (an attacker that got superuser in
-- one action would spoil the next).  In that session it plants a pg_temp
-- domain or view for every name privileged code uses (test/roles/gen_names.py)
-- and puts its own schema, holding wrappers of the functions and operators
-- the code names, first on its search_path.  Then it does one thing it is
-- allowed to do.  Asserted per attacker: the thing worked; evil() never ran
-- as a superuser or the extension owner; the attacker is not a superuser
-- afterwards; and (control) the shadows were live in that session.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\set ua '00000000-0000-4000-8000-0000000000a1'
\set ub '00000000-0000-4000-8000-0000000000b1'

-- the application, owned by an ordinary role
CREATE ROLE kz_r_a_owner NOLOGIN;
CREATE TABLE public.a_w (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text, n integer DEFAULT 0, tags text[] DEFAULT '{}');
CREATE TABLE public.a_items (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text, n integer DEFAULT 0, tags text[] DEFAULT '{}');
CREATE TABLE public.a_hlc (id text PRIMARY KEY, owner_id uuid NOT NULL, title text);
ALTER TABLE public.a_w OWNER TO kz_r_a_owner;
ALTER TABLE public.a_items OWNER TO kz_r_a_owner;
ALTER TABLE public.a_hlc OWNER TO kz_r_a_owner;
ALTER TABLE public.a_items ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.a_hlc ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.a_items TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
CREATE POLICY own ON public.a_hlc TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.a_items, public.a_hlc TO authenticated;
SELECT kizunasync.sync_table('public.a_w', bucket_column => 'owner_id') AS seeded \gset
SELECT kizunasync.sync_table('public.a_items', bucket_column => 'owner_id', register_clients => true) AS seeded \gset
SELECT kizunasync.sync_table('public.a_hlc', bucket_column => 'owner_id', conflict_mode => 'hlc', conflict_journal => true) AS seeded \gset
INSERT INTO public.a_w VALUES (1, :'ua', 'one'), (2, :'ua', 'two');
INSERT INTO public.a_items VALUES (1, :'ua', 'one', 0, '{}'), (2, :'ua', 'two', 0, '{}'), (3, :'ua', 'three', 1, '{x}');
INSERT INTO public.a_hlc VALUES ('h1', :'ua', 'first');
-- a Realtime owned by a superuser, so writes take the wake-up path too
CREATE SCHEMA realtime;
GRANT USAGE ON SCHEMA realtime TO PUBLIC;
CREATE FUNCTION realtime.send(payload jsonb, event text, topic text, private boolean) RETURNS void
	LANGUAGE sql AS $$ SELECT NULL::void $$;
-- Storage: user a's object under one of a's rows
INSERT INTO storage.buckets (id, name) VALUES ('files', 'files');
CREATE POLICY read_own ON storage.objects FOR SELECT USING (owner_id = auth.uid()::text);
GRANT SELECT ON storage.objects TO authenticated;
INSERT INTO storage.objects (bucket_id, name, owner_id) VALUES
	('files', :'ua' || '/1/a.bin', :'ua');
RESET client_min_messages;

-- ------------------------------------------------ writers (capture trigger)
-- ins: INSERT only
\set role kz_r_a_ins
\set tag ins
\ir inc/atk_open.sql
GRANT INSERT ON public.a_w TO kz_r_a_ins;
\ir inc/atk_session.sql
INSERT INTO public.a_w (id, owner_id, v) VALUES (10, '00000000-0000-4000-8000-0000000000a1', 'inserted');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'A ins: INSERT into a synced table by a role with only INSERT succeeds (1 row)', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql

-- upd: UPDATE of two columns only; moving the bucket writes a tombstone
\set role kz_r_a_upd
\set tag upd
\ir inc/atk_open.sql
GRANT UPDATE (owner_id, v) ON public.a_w TO kz_r_a_upd;
\ir inc/atk_session.sql
UPDATE public.a_w SET owner_id = '00000000-0000-4000-8000-0000000000b1', v = 'moved';
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'A upd: UPDATE (moving the bucket) by a role with only column UPDATE succeeds', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql

-- del: DELETE only
\set role kz_r_a_del
\set tag del
\ir inc/atk_open.sql
GRANT DELETE ON public.a_w TO kz_r_a_del;
\ir inc/atk_session.sql
DELETE FROM public.a_w;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'A del: DELETE from a synced table by a role with only DELETE succeeds', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql

-- ------------------------------------------- authenticated: pull and push
-- pull: member of authenticated with user a's claims; registers a client
\set role kz_r_a_pull
\set tag pull
\ir inc/atk_open.sql
GRANT authenticated TO kz_r_a_pull;
\ir inc/atk_session.sql
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000a1", "role": "authenticated"}';
SELECT kizunasync.pull('[{"table": "a_items", "params": {"owner_id": "00000000-0000-4000-8000-0000000000a1"}}, {"table": "a_hlc", "params": {"owner_id": "00000000-0000-4000-8000-0000000000a1"}}]',
	'0', 1, 500, '00000000-0000-4000-8000-0000000000c1') IS NOT NULL AS pulled \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A pull: pull of its own buckets (client registered) succeeds', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql

-- push: insert, update with a precondition, delete, increment, arrayUnion
\set role kz_r_a_push
\set tag push
\ir inc/atk_open.sql
GRANT authenticated TO kz_r_a_push;
\ir inc/atk_session.sql
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000a1", "role": "authenticated"}';
SELECT kizunasync.push('{"mutations": [
	{"mutation_id": "00000000-0000-4000-8000-00000000f001", "table": "a_items", "pk": "20", "op": "insert", "columns": {"owner_id": "00000000-0000-4000-8000-0000000000a1", "v": "new"}},
	{"mutation_id": "00000000-0000-4000-8000-00000000f002", "table": "a_items", "pk": "1", "op": "update", "columns": {"v": "uno"}, "precondition": {"v": "one"}},
	{"mutation_id": "00000000-0000-4000-8000-00000000f003", "table": "a_items", "pk": "2", "op": "delete"},
	{"mutation_id": "00000000-0000-4000-8000-00000000f004", "table": "a_items", "pk": "3", "op": "update", "transforms": {"n": {"op": "increment", "by": 2}, "tags": {"op": "arrayUnion", "values": ["y"]}}}
	]}', NULL, 1, '00000000-0000-4000-8000-0000000000c2') IS NOT NULL AS pushed \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A push: a push of insert, update with precondition, delete and transforms succeeds', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql

-- hlc: hlc conflict mode with the conflict journal (insert race probe,
-- row_hlc, an older write that loses)
\set role kz_r_a_hlc
\set tag hlc
\ir inc/atk_open.sql
GRANT authenticated TO kz_r_a_hlc;
\ir inc/atk_session.sql
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000a1", "role": "authenticated"}';
SELECT kizunasync.push('{"mutations": [
	{"mutation_id": "00000000-0000-4000-8000-00000000f011", "table": "a_hlc", "pk": "h2", "op": "insert", "columns": {"owner_id": "00000000-0000-4000-8000-0000000000a1", "title": "second"}, "hlc": "2026-01-01T00:00:02.000Z|0|node-a"},
	{"mutation_id": "00000000-0000-4000-8000-00000000f012", "table": "a_hlc", "pk": "h1", "op": "update", "columns": {"title": "newer"}, "hlc": "2026-01-01T00:00:03.000Z|0|node-a"},
	{"mutation_id": "00000000-0000-4000-8000-00000000f013", "table": "a_hlc", "pk": "h1", "op": "update", "columns": {"title": "older"}, "hlc": "2026-01-01T00:00:01.000Z|0|node-b"}
	]}', NULL, 1) IS NOT NULL AS pushed \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A hlc: a push to an hlc table with the conflict journal succeeds', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql

-- delhlc: DELETE only, on the hlc table (forgets row_hlc)
\set role kz_r_a_delhlc
\set tag delhlc
\ir inc/atk_open.sql
GRANT DELETE ON public.a_hlc TO kz_r_a_delhlc;
CREATE POLICY deleter ON public.a_hlc FOR DELETE TO kz_r_a_delhlc USING (true);
\ir inc/atk_session.sql
DELETE FROM public.a_hlc;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'A delhlc: DELETE from an hlc table by a role with only DELETE succeeds', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql

-- att: the three attachment functions
\set role kz_r_a_att
\set tag att
\ir inc/atk_open.sql
GRANT authenticated TO kz_r_a_att;
\ir inc/atk_session.sql
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000a1", "role": "authenticated"}';
SELECT kizunasync.attachment_confirm('files', '00000000-0000-4000-8000-0000000000a1/1/a.bin',
	'abababababababababababababababababababababababababababababababab', 10, 'application/octet-stream', 'a_items') IS NULL AS confirmed \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A att: attachment_confirm of its own object succeeds', :'LAST_ERROR_MESSAGE');
SELECT count(*) AS n FROM kizunasync.attachment_metadata('files', '00000000-0000-4000-8000-0000000000a1/1/a.bin') \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A att: attachment_metadata succeeds', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.attachment_vacuum('files', '00000000-0000-4000-8000-0000000000a1/1/a.bin') IS NULL AS vacuumed \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A att: attachment_vacuum succeeds', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql

-- ---------------------------------------------------- service_role: jobs
-- svc: the three retention functions
\set role kz_r_a_svc
\set tag svc
\ir inc/atk_open.sql
GRANT service_role TO kz_r_a_svc;
\ir inc/atk_session.sql
SELECT kizunasync.reap_tombstones() IS NOT NULL AS reaped \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A svc: reap_tombstones() succeeds', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.compact_changelog() IS NOT NULL AS compacted \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A svc: compact_changelog() succeeds', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.prune_clients() IS NOT NULL AS pruned \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A svc: prune_clients() succeeds', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql

-- jobs: schedule_jobs()
\set role kz_r_a_jobs
\set tag jobs
\ir inc/atk_open.sql
GRANT service_role TO kz_r_a_jobs;
\ir inc/atk_session.sql
SELECT kizunasync.schedule_jobs() IS NOT NULL AS scheduled \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A jobs: schedule_jobs() succeeds', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql

SELECT kzt.diag('A: ' || (SELECT count(*) FROM pg_roles WHERE rolname LIKE 'kz\_r\_a\_%' AND rolsuper) || ' of the attacker roles ended as superusers');
