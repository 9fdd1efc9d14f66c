-- pgTAP: kizunasync.push against hostile callers.  Runs in a fresh database
-- with the stand-ins, pgtap and kizunasync installed.
SET client_min_messages = warning;
CREATE SCHEMA tp;
-- push as a role with the given sub claim; the role is reset before the
-- result reaches pgTAP (which writes tables the API roles cannot)
CREATE FUNCTION tp.push(role text, sub text, batch jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	r jsonb;
BEGIN
	PERFORM set_config('request.jwt.claims',
		CASE WHEN sub IS NULL THEN json_build_object('role', role)
			 ELSE json_build_object('sub', sub, 'role', role) END::text, true);
	EXECUTE format('SET LOCAL ROLE %I', role);
	r := kizunasync.push(batch, NULL, 1);
	RESET ROLE;
	RETURN r;
END $$;
CREATE FUNCTION tp.m(tbl text, pk text, op text, extra jsonb, mid text) RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_build_object('mutations', jsonb_build_array(
		jsonb_build_object('mutation_id', mid, 'table', tbl, 'pk', pk, 'op', op) || extra))
$$;
GRANT USAGE ON SCHEMA tp TO anon, authenticated, service_role;
CREATE TABLE public.notes (id uuid PRIMARY KEY, owner_id uuid NOT NULL, body text, tags text[]);
ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.notes FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.notes TO authenticated;
CREATE TABLE public.feed (id bigint PRIMARY KEY, owner_id uuid);
GRANT SELECT, INSERT ON public.feed TO authenticated;
CREATE TABLE public.secret (id uuid PRIMARY KEY, v text);
GRANT ALL ON public.secret TO authenticated;
SELECT kizunasync.sync_table('public.notes', bucket_column => 'owner_id');
SELECT kizunasync.sync_table('public.feed', sync_mode => 'pull-only');
INSERT INTO public.notes VALUES ('00000000-0000-4000-8000-e10000000001', '00000000-0000-4000-8000-a10000000002', 'b private', '{}');
RESET client_min_messages;

\set ua '00000000-0000-4000-8000-a10000000001'
\set ub '00000000-0000-4000-8000-a10000000002'
\set b_row '00000000-0000-4000-8000-e10000000001'

SELECT plan(18);

SELECT throws_ok($$ SELECT tp.push('anon', NULL, '{"mutations": []}') $$, '42501', NULL,
	'anon may not call push');
SELECT is(tp.push('authenticated', :'ua', '{"mutations": []}'), '{"verdicts": []}'::jsonb,
	'authenticated may call push');
SELECT throws_ok($$ SELECT tp.push('authenticated', '00000000-0000-4000-8000-a10000000001',
	tp.m('verdicts', '00000000-0000-4000-8000-f10000000001', 'insert', '{}', '00000000-0000-4000-8000-f10000000001')) $$,
	'22023', 'mutation 1 of the batch is malformed: table "verdicts" is not synced',
	'a bookkeeping table takes no push');
SELECT throws_ok($$ SELECT tp.push('authenticated', '00000000-0000-4000-8000-a10000000001',
	tp.m('secret', '00000000-0000-4000-8000-e10000000009', 'insert', '{"columns": {"v": "x"}}', '00000000-0000-4000-8000-f10000000001')) $$,
	'22023', 'mutation 1 of the batch is malformed: table "secret" is not synced',
	'an unsynced table takes no push, even with full privileges');
SELECT throws_ok($$ SELECT tp.push('authenticated', '00000000-0000-4000-8000-a10000000001',
	tp.m('feed', '7', 'insert', '{}', '00000000-0000-4000-8000-f10000000001')) $$,
	'KZP01', NULL, 'a pull-only table takes no push');
SELECT is(tp.push('authenticated', :'ua', tp.m('notes', :'b_row', 'update', '{"columns": {"body": "pwned"}}',
	'00000000-0000-4000-8000-f10000000002')) -> 'verdicts' -> 0,
	'{"reason": "RLS_DENIED", "verdict": "rejected", "server_row": null, "mutation_id": "00000000-0000-4000-8000-f10000000002"}'::jsonb,
	'updating another user''s row is RLS_DENIED and reveals nothing');
SELECT is(tp.push('authenticated', :'ua', tp.m('notes', :'b_row', 'insert',
	'{"columns": {"owner_id": "00000000-0000-4000-8000-a10000000001", "body": "mine"}}',
	'00000000-0000-4000-8000-f10000000003')) -> 'verdicts' -> 0 ->> 'reason', 'RLS_DENIED',
	'an insert over another user''s key is RLS_DENIED');
SELECT is(tp.push('authenticated', :'ua', tp.m('notes', :'b_row', 'delete', '{}',
	'00000000-0000-4000-8000-f10000000004')) -> 'verdicts' -> 0 ->> 'reason', 'RLS_DENIED',
	'deleting another user''s row is RLS_DENIED');
SELECT is(tp.push('authenticated', :'ua', tp.m('notes', :'b_row', 'update',
	'{"transforms": {"tags": {"op": "arrayUnion", "values": ["x"]}}}',
	'00000000-0000-4000-8000-f10000000005')) -> 'verdicts' -> 0 ->> 'reason', 'RLS_DENIED',
	'a transform on another user''s row is RLS_DENIED');
SELECT is((SELECT body FROM public.notes WHERE id = :'b_row'), 'b private', 'b''s row is untouched');

-- b pushes a mutation; a replays b's id
SELECT is(tp.push('authenticated', :'ub', tp.m('notes', :'b_row', 'update', '{"columns": {"body": "b edit"}}',
	'00000000-0000-4000-8000-f10000000006')) -> 'verdicts' -> 0 ->> 'verdict', 'applied', 'b edits b''s row');
SELECT is(tp.push('authenticated', :'ua', tp.m('notes', :'b_row', 'update', '{"columns": {"body": "b edit"}}',
	'00000000-0000-4000-8000-f10000000006')) -> 'verdicts' -> 0,
	'{"reason": "RLS_DENIED", "verdict": "rejected", "server_row": null, "mutation_id": "00000000-0000-4000-8000-f10000000006"}'::jsonb,
	'replaying another user''s mutation id is RLS_DENIED with a null server_row');
SELECT is(tp.push('authenticated', NULL, tp.m('notes', :'b_row', 'update', '{"columns": {"body": "b edit"}}',
	'00000000-0000-4000-8000-f10000000006')) -> 'verdicts' -> 0 ->> 'reason', 'RLS_DENIED',
	'replaying it without any sub is RLS_DENIED too');

-- identifiers never reach SQL unquoted
SELECT is(tp.push('authenticated', :'ua', tp.m('notes', '00000000-0000-4000-8000-e10000000002', 'insert',
	'{"columns": {"owner_id": "00000000-0000-4000-8000-a10000000001", "body\") VALUES (1); DROP TABLE public.notes; --": "x"}}',
	'00000000-0000-4000-8000-f10000000007')) -> 'verdicts' -> 0 ->> 'reason', 'COLUMN_DENIED',
	'a column name carrying SQL is an unknown column');
SELECT throws_ok($$ SELECT tp.push('authenticated', '00000000-0000-4000-8000-a10000000001',
	tp.m('notes"; DROP TABLE public.notes; --', '1', 'insert', '{}', '00000000-0000-4000-8000-f10000000001')) $$,
	'22023', NULL, 'a table name carrying SQL is refused');
SELECT has_table('public', 'notes', 'the table survived');

-- a hostile search_path cannot redirect push's SQL
CREATE SCHEMA evil;
CREATE FUNCTION evil.to_jsonb(anyelement) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"evil": true}'::jsonb $$;
CREATE FUNCTION evil.jsonb_populate_record(anyelement, jsonb) RETURNS anyelement LANGUAGE sql AS $$ SELECT $1 $$;
GRANT USAGE ON SCHEMA evil TO authenticated;
SET search_path = evil, public, pg_catalog;
SELECT is(tp.push('authenticated', :'ub', tp.m('notes', :'b_row', 'update',
	'{"columns": {"body": "after"}, "precondition": {"body": "nope"}}',
	'00000000-0000-4000-8000-f10000000008')) -> 'verdicts' -> 0 -> 'server_row' ->> 'body', 'b edit',
	'push ignores the caller''s search_path');
RESET search_path;
SELECT is((SELECT body FROM public.notes WHERE id = :'b_row'), 'b edit', 'and applied nothing');

SELECT * FROM finish();
