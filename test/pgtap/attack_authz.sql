-- pgTAP: the authorization attack suite (issue 7).  As `anon`, as a
-- signed-in user a against user b's data, and with forged or missing claims,
-- every attempt must fail safely: an error, or an answer that reveals and
-- changes nothing.  These are in addition to the 18 of push_security.sql
-- (not repeated here).  The count of attacks is printed at the end.
-- Runs in the shared pgTAP database; everything it creates is dropped at the
-- end.
SET client_min_messages = warning;
CREATE SCHEMA atk;
GRANT USAGE ON SCHEMA atk TO anon, authenticated, service_role;

-- run one statement under a role and JWT claims: its jsonb result, or
-- {"error": SQLSTATE, "message": ...}; the role is reset before returning
CREATE FUNCTION atk.as(role text, claims jsonb, call text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	r jsonb;
	st text;
	msg text;
	path text := current_setting('search_path');
BEGIN
	BEGIN
		PERFORM set_config('request.jwt.claims', coalesce(claims::text, ''), true);
		EXECUTE format('SET LOCAL ROLE %I', role);
		EXECUTE call INTO r;
		RESET ROLE;
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
		r := jsonb_build_object('error', st, 'message', msg);
	END;
	RESET ROLE;
	PERFORM set_config('request.jwt.claims', '', true);
	PERFORM set_config('search_path', path, true);	-- a call may have changed it
	RETURN r;
END $$;
-- claims of user a, user b
CREATE FUNCTION atk.ca() RETURNS jsonb LANGUAGE sql AS $$
	SELECT '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}'::jsonb $$;
CREATE FUNCTION atk.cb() RETURNS jsonb LANGUAGE sql AS $$
	SELECT '{"sub": "00000000-0000-4000-8000-a10000000002", "role": "authenticated"}'::jsonb $$;
-- a bucket of atk_notes
CREATE FUNCTION atk.bucket(owner text) RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_build_array(jsonb_build_object('table', 'atk_notes', 'params', jsonb_build_object('owner_id', owner))) $$;
-- one mutation
CREATE FUNCTION atk.m(tbl text, pk text, op text, extra jsonb, mid text) RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_build_object('mutations', jsonb_build_array(
		jsonb_build_object('mutation_id', mid, 'table', tbl, 'pk', pk, 'op', op) || extra)) $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA atk TO anon, authenticated, service_role;

-- the application: notes owned by a user, a column (secret) the API roles
-- may not read or write, a pull-only table, an unsynced table
CREATE TABLE public.atk_notes (id uuid PRIMARY KEY, owner_id uuid NOT NULL, body text, secret text, tags text[]);
ALTER TABLE public.atk_notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.atk_notes FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT (id, owner_id, body, tags), INSERT (id, owner_id, body, tags),
	UPDATE (id, owner_id, body, tags), DELETE ON public.atk_notes TO authenticated;
CREATE TABLE public.atk_ro (id bigint PRIMARY KEY, owner_id uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.atk_ro TO authenticated;
CREATE TABLE public.atk_unsynced (id bigint PRIMARY KEY, v text);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.atk_unsynced TO authenticated;
-- a table whose policy calls an invoker function reading bookkeeping, and
-- whose trigger records the user it runs as
CREATE TABLE public.atk_probe (id bigint PRIMARY KEY, v text);
CREATE TABLE atk.seen (who text);
GRANT INSERT, SELECT ON atk.seen TO authenticated;
CREATE FUNCTION atk.peek() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM kizunasync.changelog $$;
CREATE FUNCTION atk.record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO atk.seen VALUES (current_user);
	RETURN NEW;
END $$;
ALTER TABLE public.atk_probe ENABLE ROW LEVEL SECURITY;
CREATE POLICY peek ON public.atk_probe FOR SELECT TO authenticated USING (atk.peek() >= 0);
CREATE POLICY ins ON public.atk_probe FOR INSERT TO authenticated WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON public.atk_probe TO authenticated;
CREATE TABLE public.atk_trig (id bigint PRIMARY KEY, v text);
CREATE TRIGGER record BEFORE INSERT ON public.atk_trig FOR EACH ROW EXECUTE FUNCTION atk.record();
GRANT SELECT, INSERT, UPDATE ON public.atk_trig TO authenticated;

SELECT kizunasync.sync_table('public.atk_notes', bucket_column => 'owner_id', register_clients => true);
SELECT kizunasync.sync_table('public.atk_ro', sync_mode => 'pull-only');
SELECT kizunasync.sync_table('public.atk_probe');
SELECT kizunasync.sync_table('public.atk_trig');
INSERT INTO public.atk_notes VALUES
	('00000000-0000-4000-8000-e20000000001', '00000000-0000-4000-8000-a10000000001', 'a row', 's-a', '{}'),
	('00000000-0000-4000-8000-e20000000002', '00000000-0000-4000-8000-a10000000002', 'b row', 's-b', '{}'),
	('00000000-0000-4000-8000-e20000000003', '00000000-0000-4000-8000-a10000000002', 'b gone', 's-b3', '{}');
INSERT INTO public.atk_probe VALUES (1, 'x');
INSERT INTO public.atk_ro VALUES (1, '00000000-0000-4000-8000-a10000000001');
RESET client_min_messages;

\set ua '00000000-0000-4000-8000-a10000000001'
\set ub '00000000-0000-4000-8000-a10000000002'
\set b_row '00000000-0000-4000-8000-e20000000002'
\set b_gone '00000000-0000-4000-8000-e20000000003'
\set a_row '00000000-0000-4000-8000-e20000000001'

-- b syncs its bucket (gets a grant), registers a client, then deletes a row
CREATE TEMP TABLE b_first AS SELECT atk.as('authenticated', atk.cb(),
	format($c$SELECT kizunasync.pull(%L, '0', 1, 500, '00000000-0000-4000-8000-c10000000002')$c$, atk.bucket(:'ub'))) AS r;
SELECT atk.as('authenticated', atk.cb(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_notes', :'b_gone', 'delete', '{}', '00000000-0000-4000-8000-f20000000001'))) -> 'verdicts' -> 0 ->> 'verdict' AS b_deletes;

SELECT plan(71);

-- -------------------------------------------------------------- pull
-- 1-2 another user's bucket: nothing, not even the tombstone of b's deleted row
CREATE TEMP TABLE a_on_b AS SELECT atk.as('authenticated', atk.ca(),
	format($c$SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(:'ub'))) AS r;
SELECT is((SELECT r -> 'rows' FROM a_on_b), '[]'::jsonb, 'pull of b''s bucket by a: no rows');
SELECT is((SELECT r -> 'tombstones' FROM a_on_b), '[]'::jsonb, 'pull of b''s bucket by a: no tombstones (no grant)');
-- 3 and no grant was recorded for a
SELECT is((SELECT count(*) FROM kizunasync.bucket_grants WHERE user_id = :'ua')::integer, 0,
	'pull of b''s bucket records no grant for a');
-- 4 a's bucket and b's in one request: only a's row
SELECT is((SELECT jsonb_agg(x -> 'row' ->> 'body') FROM jsonb_array_elements(atk.as('authenticated', atk.ca(),
	format($c$SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(:'ua') || atk.bucket(:'ub'))) -> 'rows') x),
	'["a row"]'::jsonb, 'pull of a''s and b''s buckets together: a''s row only');
-- 5 widening: a null bucket value
SELECT is(atk.as('authenticated', atk.ca(),
	format($c$SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(NULL))) -> 'rows', '[]'::jsonb,
	'pull with a null bucket value: nothing');
-- 6 widening: an extra param that is not a column
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT kizunasync.pull('[{"table": "atk_notes", "params": {"owner_id": "00000000-0000-4000-8000-a10000000002", "or": "true"}}]', '0', 1)$c$) ->> 'error',
	'22023', 'pull with an extra param (not a column): 22023');
-- 7-10 type-confused bucket values
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT kizunasync.pull('[{"table": "atk_notes", "params": {"owner_id": ["00000000-0000-4000-8000-a10000000001", "00000000-0000-4000-8000-a10000000002"]}}]', '0', 1)$c$) ->> 'error',
	'22023', 'pull with an array of bucket values: 22023');
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT kizunasync.pull('[{"table": "atk_notes", "params": {"owner_id": {"$ne": null}}}]', '0', 1)$c$) ->> 'error',
	'22023', 'pull with an operator object as bucket value: 22023');
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT kizunasync.pull('[{"table": "atk_notes", "params": {"owner_id": true}}]', '0', 1)$c$) ->> 'error',
	'22P02', 'pull with a boolean bucket value: 22P02 (uuid cast)');
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT kizunasync.pull('[{"table": "atk_notes", "params": {"owner_id": "00000000-0000-4000-8000-a10000000002'' OR ''t"}}]', '0', 1)$c$) ->> 'error',
	'22P02', 'pull with SQL in a bucket value: 22P02 (uuid cast)');
-- 11 scoping by another column instead of the bucket column
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT kizunasync.pull('[{"table": "atk_notes", "params": {"body": "b row"}}]', '0', 1)$c$) ->> 'error',
	'KZL01', 'pull scoped by a non-bucket column: KZL01');
-- 12 a hole in the cursor naming b's change does not deliver it
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.pull(%L, %L, 1)$c$, atk.bucket(:'ub'),
	(SELECT max(seq) + 1000 || '~' || string_agg(seq::text, '.' ORDER BY seq) FROM kizunasync.changelog WHERE table_name = 'atk_notes'))) -> 'rows',
	'[]'::jsonb, 'pull with holes naming b''s changes: nothing');
-- 13-14 a revoked column: absent from a's own rows, and not usable as a probe
SELECT ok(NOT (atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(:'ua'))) -> 'rows' -> 0 -> 'row' ? 'secret'),
	'a revoked column is absent from pulled rows');
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT kizunasync.pull('[{"table": "atk_notes", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001", "secret": "s-a"}}]', '0', 1)$c$) -> 'rows',
	'[]'::jsonb, 'a revoked column as a param matches nothing, even the right value');
-- 15 tombstones b may see: b got a grant, so b sees its own deletion (control)
SELECT is(atk.as('authenticated', atk.cb(), format($c$SELECT kizunasync.pull(%L, %L, 1)$c$, atk.bucket(:'ub'),
	(SELECT r ->> 'cursor' FROM b_first))) -> 'tombstones' -> 0 ->> 'pk', :'b_gone',
	'control: b itself receives the tombstone of its deleted row');
-- 16 a pulling b's bucket from b's own cursor learns nothing either
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.pull(%L, %L, 1)$c$, atk.bucket(:'ub'),
	(SELECT r ->> 'cursor' FROM b_first))) -> 'tombstones', '[]'::jsonb,
	'a replaying b''s cursor on b''s bucket: no tombstones');
-- 17 a caller without sub: nothing, no tombstones
SELECT is(atk.as('authenticated', '{"role": "authenticated"}', format($c$SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(:'ub'))) - 'cursor',
	'{"rows": [], "signal": null, "has_more": false, "tombstones": []}'::jsonb, 'pull without a sub: nothing');
-- 18 anon, even with b's sub
SELECT is(atk.as('anon', '{"role": "anon", "sub": "00000000-0000-4000-8000-a10000000002"}', format($c$SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(:'ub'))) ->> 'error',
	'42501', 'anon with b''s sub may not pull');
-- 19 a non-uuid sub
SELECT is(atk.as('authenticated', '{"role": "authenticated", "sub": "00000000-0000-4000-8000-a10000000002 OR 1=1"}', format($c$SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(:'ub'))) ->> 'error',
	'22P02', 'a non-uuid sub: 22P02');
-- 20-21 client registry: a cannot take over b's client_id, by argument or session_id
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.pull(%L, '0', 1, 500, '00000000-0000-4000-8000-c10000000002')$c$, atk.bucket(:'ua'))) ->> 'error',
	'42501', 'pull with b''s client_id: 42501');
SELECT is(atk.as('authenticated', atk.ca() || '{"session_id": "00000000-0000-4000-8000-c10000000002"}', format($c$SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(:'ua'))) ->> 'error',
	'42501', 'pull with b''s client id as session_id: 42501');
-- 22 push with b's client_id
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1, '00000000-0000-4000-8000-c10000000002')$c$,
	atk.m('atk_notes', :'a_row', 'update', '{"columns": {"body": "a2"}}', '00000000-0000-4000-8000-f20000000002'))) ->> 'error',
	'42501', 'push with b''s client_id: 42501');
SELECT is((SELECT user_id::text || ' ' || cursor FROM kizunasync.clients WHERE client_id = '00000000-0000-4000-8000-c10000000002'),
	:'ub' || ' ' || (SELECT r ->> 'cursor' FROM b_first), 'b''s client registration is untouched');
-- 24 a's last_mutation_id naming b's mutation reveals nothing
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, '00000000-0000-4000-8000-f20000000001', 1)$c$,
	'{"mutations": []}')), '{"verdicts": []}'::jsonb, 'push with b''s mutation id as last_mutation_id reveals nothing');

-- -------------------------------------------------------------- push
-- 25 insert a new row owned by b
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_notes', '00000000-0000-4000-8000-e20000000009', 'insert', jsonb_build_object('columns', jsonb_build_object('owner_id', :'ub', 'body', 'planted')), '00000000-0000-4000-8000-f20000000003'))) -> 'verdicts' -> 0 ->> 'reason',
	'RLS_DENIED', 'insert of a row owned by b: RLS_DENIED');
-- 26 give a's row away to b
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_notes', :'a_row', 'update', jsonb_build_object('columns', jsonb_build_object('owner_id', :'ub')), '00000000-0000-4000-8000-f20000000004'))) -> 'verdicts' -> 0 ->> 'reason',
	'RLS_DENIED', 'moving a''s row into b''s bucket: RLS_DENIED');
-- 27-29 precondition probing on b's row: the same answer for a right guess,
-- a wrong guess and a key that does not exist (no value, no existence)
CREATE TEMP TABLE probe_b AS SELECT
	atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
		atk.m('atk_notes', :'b_row', 'update', '{"columns": {"body": "x"}, "precondition": {"body": "b row"}}', '00000000-0000-4000-8000-f20000000005'))) -> 'verdicts' -> 0 #- '{mutation_id}' AS right_guess,
	atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
		atk.m('atk_notes', :'b_row', 'update', '{"columns": {"body": "x"}, "precondition": {"body": "wrong"}}', '00000000-0000-4000-8000-f20000000006'))) -> 'verdicts' -> 0 #- '{mutation_id}' AS wrong_guess,
	atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
		atk.m('atk_notes', '00000000-0000-4000-8000-e2000000000f', 'update', '{"columns": {"body": "x"}, "precondition": {"body": "b row"}}', '00000000-0000-4000-8000-f20000000019'))) -> 'verdicts' -> 0 #- '{mutation_id}' AS no_row;
SELECT is((SELECT right_guess FROM probe_b), '{"reason": "PRECONDITION", "verdict": "rejected", "server_row": null}'::jsonb,
	'precondition probe on b''s row, right guess: rejected, nothing shown');
SELECT is((SELECT wrong_guess FROM probe_b), (SELECT right_guess FROM probe_b),
	'precondition probe on b''s row, wrong guess: the same answer');
SELECT is((SELECT no_row FROM probe_b), (SELECT right_guess FROM probe_b),
	'precondition probe on a key that does not exist: the same answer');
-- 29-30 precondition probing on a revoked column of a's own row
CREATE TEMP TABLE probe AS SELECT
	atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
		atk.m('atk_notes', :'a_row', 'update', '{"columns": {"body": "p"}, "precondition": {"secret": "s-a"}}', '00000000-0000-4000-8000-f20000000007'))) -> 'verdicts' -> 0 AS right_guess,
	atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
		atk.m('atk_notes', :'a_row', 'update', '{"columns": {"body": "p"}, "precondition": {"secret": "nope"}}', '00000000-0000-4000-8000-f20000000008'))) -> 'verdicts' -> 0 AS wrong_guess;
SELECT is((SELECT right_guess - 'mutation_id' FROM probe), (SELECT wrong_guess - 'mutation_id' FROM probe),
	'precondition on a revoked column: a right and a wrong guess get the same verdict');
SELECT ok(NOT coalesce((SELECT right_guess -> 'server_row' ? 'secret' FROM probe), false),
	'and the conflict''s server_row lacks the revoked column');
-- 31 a conflict (wrong precondition) on a's own row never shows the revoked column
SELECT ok(NOT (atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_notes', :'a_row', 'update', '{"columns": {"body": "q"}, "precondition": {"body": "not it"}}', '00000000-0000-4000-8000-f20000000009'))) -> 'verdicts' -> 0 -> 'server_row' ? 'secret'),
	'a PRECONDITION conflict''s server_row lacks the revoked column');
-- 32-33 writing the revoked column, directly and by transform
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_notes', :'a_row', 'update', '{"columns": {"secret": "mine now"}}', '00000000-0000-4000-8000-f20000000010'))) -> 'verdicts' -> 0 ->> 'reason',
	'COLUMN_DENIED', 'update of a revoked column: COLUMN_DENIED');
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_notes', :'a_row', 'update', '{"transforms": {"secret": {"op": "arrayUnion", "values": ["x"]}}}', '00000000-0000-4000-8000-f20000000011'))) -> 'verdicts' -> 0 ->> 'reason',
	'COLUMN_DENIED', 'a transform on a revoked column: COLUMN_DENIED');
-- 34 an increment on b's row
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_notes', :'b_row', 'update', '{"transforms": {"tags": {"op": "arrayRemove", "values": ["x"]}}}', '00000000-0000-4000-8000-f20000000012'))) -> 'verdicts' -> 0 #- '{mutation_id}',
	'{"reason": "RLS_DENIED", "verdict": "rejected", "server_row": null}'::jsonb, 'arrayRemove on b''s row: RLS_DENIED, nothing shown');
-- 35 re-creating b's deleted row under a's ownership
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_notes', :'b_gone', 'update', jsonb_build_object('columns', jsonb_build_object('body', 'zombie')), '00000000-0000-4000-8000-f20000000013'))) -> 'verdicts' -> 0 ->> 'server_row',
	NULL, 'update of b''s deleted row shows nothing');
-- 36 a pull-only table, delete
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_ro', '1', 'delete', '{}', '00000000-0000-4000-8000-f20000000014'))) ->> 'error',
	'KZP01', 'delete in a pull-only table: KZP01');
-- 37 an unsynced table
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_unsynced', '1', 'insert', '{"columns": {"v": "x"}}', '00000000-0000-4000-8000-f20000000015'))) ->> 'error',
	'22023', 'insert into an unsynced table: 22023');
-- 38-44 every other bookkeeping table by push
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m(t, '1', 'insert', '{}', '00000000-0000-4000-8000-f20000000016'))) ->> 'message',
	format('mutation 1 of the batch is malformed: table "%s" is not synced', t),
	format('push into bookkeeping table %s: not synced', t))
  FROM unnest(ARRAY['changelog', 'tombstones', 'bucket_grants', 'clients', 'settings', 'synced_tables', 'row_hlc']) t;
-- 45-50 and by direct SQL
SELECT is(atk.as('authenticated', atk.ca(), s) ->> 'error', '42501', 'direct SQL: ' || s)
  FROM unnest(ARRAY[
	'SELECT to_jsonb(c) FROM kizunasync.changelog c LIMIT 1',
	'SELECT to_jsonb(t) FROM kizunasync.tombstones t LIMIT 1',
	$s$INSERT INTO kizunasync.bucket_grants VALUES ('00000000-0000-4000-8000-a10000000001', 'atk_notes', '00000000-0000-4000-8000-a10000000002') RETURNING '{}'::jsonb$s$,
	'UPDATE kizunasync.settings SET max_pull_limit = 1000000 RETURNING ''{}''::jsonb',
	'SELECT to_jsonb(s) FROM kizunasync.status s LIMIT 1',
	'SELECT to_jsonb(nextval(''kizunasync.change_seq''))']) s;
-- 51 anon cannot even see the schema
SELECT is(atk.as('anon', '{"role": "anon"}', 'SELECT to_jsonb(c) FROM kizunasync.changelog c LIMIT 1') ->> 'error',
	'42501', 'anon: no access to the bookkeeping schema');

-- ---------------------------------------- identifiers and search_path
-- 52 a shadow table in a schema the caller controls, first on the search_path
CREATE SCHEMA atk_shadow;
GRANT USAGE, CREATE ON SCHEMA atk_shadow TO authenticated;
SET ROLE authenticated;
CREATE TABLE atk_shadow.atk_notes (id uuid, owner_id uuid, body text);
INSERT INTO atk_shadow.atk_notes VALUES ('00000000-0000-4000-8000-e20000000002', '00000000-0000-4000-8000-a10000000001', 'shadow');
-- shadow functions and an always-true uuid equality
CREATE FUNCTION atk_shadow.to_jsonb(anyelement) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"shadow": true}'::jsonb $$;
CREATE FUNCTION atk_shadow.jsonb_build_object(text, text) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"shadow": true}'::jsonb $$;
CREATE FUNCTION atk_shadow.now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT 'epoch'::timestamptz $$;
CREATE FUNCTION atk_shadow.uuid_eq_any(uuid, uuid) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR atk_shadow.= (LEFTARG = uuid, RIGHTARG = uuid, FUNCTION = atk_shadow.uuid_eq_any);
CREATE FUNCTION atk_shadow.text_eq_any(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR atk_shadow.= (LEFTARG = text, RIGHTARG = text, FUNCTION = atk_shadow.text_eq_any);
RESET ROLE;
CREATE TEMP TABLE shadowed AS SELECT
	atk.as('authenticated', atk.ca(), format($c$SET LOCAL search_path = atk_shadow, public; SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(:'ub'))) AS b_bucket,
	atk.as('authenticated', atk.ca(), format($c$SET LOCAL search_path = atk_shadow, pg_catalog, public; SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(:'ua'))) AS a_bucket,
	atk.as('authenticated', atk.ca(), $c$SET LOCAL search_path = atk_shadow, pg_catalog, public; SELECT coalesce(jsonb_agg(n.body), '[]') FROM public.atk_notes n$c$) AS a_direct;
SELECT is((SELECT b_bucket -> 'rows' FROM shadowed), '[]'::jsonb,
	'shadow table, functions and an always-true = first on the search_path: b''s bucket still empty');
-- a's application statements run as a with a's own search_path, as a
-- direct query would (decisions/0060): the shadows change a's own answer
-- exactly as they change a's direct SELECT (here: auth.uid() breaks), and
-- nothing else
SELECT is((SELECT coalesce(jsonb_agg(x -> 'row' ->> 'body'), '[]') FROM shadowed, jsonb_array_elements(a_bucket -> 'rows') x),
	(SELECT a_direct FROM shadowed),
	'and a''s own pull gives what a''s direct SELECT gives under the same search_path');
-- 54 push under the shadowing search_path: b's row stays denied
SELECT is(atk.as('authenticated', atk.ca(), format($c$SET LOCAL search_path = atk_shadow, pg_catalog; SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_notes', :'b_row', 'update', '{"columns": {"body": "shadowed"}}', '00000000-0000-4000-8000-f20000000017'))) -> 'verdicts' -> 0 ->> 'reason',
	'RLS_DENIED', 'push with the shadowing search_path: still RLS_DENIED');
-- 55 pg_temp first on the search_path (temp objects shadow relations)
SELECT is(atk.as('authenticated', atk.ca(), format($c$SET LOCAL search_path = pg_temp, atk_shadow; SELECT kizunasync.pull(%L, '0', 1)$c$, atk.bucket(:'ub'))) -> 'rows',
	'[]'::jsonb, 'pg_temp first on the search_path: nothing');
-- 56 table names with identifier tricks
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT kizunasync.pull('[{"table": "atk_shadow.atk_notes", "params": {"owner_id": null}}]', '0', 1)$c$) ->> 'error',
	'22023', 'a qualified wire name naming the shadow table: 22023');
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT kizunasync.pull('[{"table": "ATK_NOTES", "params": {"owner_id": "00000000-0000-4000-8000-a10000000002"}}]', '0', 1)$c$) ->> 'error',
	'22023', 'a case-folded wire name: 22023 (names are exact)');

-- ------------------------------- definer rights do not leak into app code
-- 58 a policy function reading bookkeeping runs as the caller: refused
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT kizunasync.pull('[{"table": "atk_probe"}]', '0', 1)$c$) ->> 'error',
	'42501', 'a policy function reading kizunasync.changelog during pull: 42501');
-- 59 a push into a table whose policy reads bookkeeping: the policy fails as
-- the caller, so the row is refused
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_probe', '2', 'insert', '{"columns": {"v": "y"}}', '00000000-0000-4000-8000-f20000000018'))) -> 'verdicts' -> 0 ->> 'reason',
	'RLS_DENIED', 'a push whose policy function reads kizunasync.changelog: RLS_DENIED');
SELECT is((SELECT count(*) FROM public.atk_probe)::integer, 1, 'and nothing was inserted');
-- 61-62 a trigger on the app table runs as the caller during push
SELECT is(atk.as('authenticated', atk.ca(), format($c$SELECT kizunasync.push(%L, NULL, 1)$c$,
	atk.m('atk_trig', '2', 'insert', '{"columns": {"v": "y"}}', '00000000-0000-4000-8000-f20000000020'))) -> 'verdicts' -> 0 ->> 'verdict',
	'applied', 'control: an insert into the trigger table is applied');
SELECT is((SELECT string_agg(DISTINCT who, ',') FROM atk.seen), 'authenticated',
	'its trigger ran as the caller, not as the extension owner');

-- ---------------------------------------------- internal helpers directly
-- 61-... every function of the schema that is not a client RPC, as
-- authenticated and as anon (counted separately below)
CREATE TEMP TABLE helper_calls AS
SELECT p.oid::regprocedure::text AS sig, r.role,
	   atk.as(r.role, CASE r.role WHEN 'anon' THEN '{"role": "anon"}'::jsonb ELSE atk.ca() END,
		format('SELECT to_jsonb(%s(%s))', p.oid::regproc,
			(SELECT coalesce(string_agg(quote_literal(CASE format_type(t, NULL)
						WHEN 'regclass' THEN 'public.atk_notes' WHEN 'regtype' THEN 'uuid'
						WHEN 'text[]' THEN '{id}' WHEN 'bigint[]' THEN '{}' WHEN 'boolean' THEN 'false'
						WHEN 'integer' THEN '1' WHEN 'bigint' THEN '1' WHEN 'jsonb' THEN '{}' ELSE 'atk_notes' END)
					|| '::' || format_type(t, NULL), ', ' ORDER BY o), '')
			   FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, o)))) AS outcome
  FROM pg_proc p, (VALUES ('authenticated'), ('anon')) r(role)
 WHERE p.pronamespace = 'kizunasync'::regnamespace
   AND p.proname NOT IN ('pull', 'push', 'attachment_confirm', 'attachment_metadata', 'attachment_vacuum')
   AND p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype);
SELECT is((SELECT count(*) FROM helper_calls WHERE outcome ->> 'error' IS DISTINCT FROM '42501')::integer, 0,
	'every internal helper called directly as authenticated or anon: 42501 (' ||
	(SELECT count(*) FROM helper_calls) || ' calls)');
SELECT is((SELECT string_agg(sig || ' as ' || role || ': ' || outcome::text, '; ') FROM helper_calls
			WHERE outcome ->> 'error' IS DISTINCT FROM '42501'), NULL, 'no helper answered');
-- trigger functions cannot be reached either (no EXECUTE for the API roles)
SELECT is((SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'kizunasync'::regnamespace
	AND p.prorettype IN ('trigger'::regtype, 'event_trigger'::regtype)
	AND (has_function_privilege('authenticated', p.oid, 'EXECUTE') OR has_function_privilege('anon', p.oid, 'EXECUTE')))::integer,
	0, 'no trigger function of the extension is executable by the API roles');
-- service_role operator functions are not for authenticated
SELECT is(atk.as('authenticated', atk.ca(), 'SELECT to_jsonb(kizunasync.reap_tombstones(1000000))') ->> 'error', '42501',
	'authenticated may not reap tombstones');
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT to_jsonb(kizunasync.sync_table('public.atk_unsynced'))$c$) ->> 'error', '42501',
	'authenticated may not sync a table');
SELECT is(atk.as('authenticated', atk.ca(), $c$SELECT to_jsonb(kizunasync.unsync_table('public.atk_notes'))$c$) ->> 'error', '42501',
	'authenticated may not unsync a table');

-- ------------------------------------------------------------- damage
SELECT is((SELECT jsonb_agg(jsonb_build_array(owner_id, body, secret) ORDER BY id) FROM public.atk_notes),
	jsonb_build_array(jsonb_build_array(:'ua', 'a row', 's-a'), jsonb_build_array(:'ub', 'b row', 's-b')),
	'after every attack: b''s row untouched, nothing planted, a''s secret unchanged');
SELECT is((SELECT count(*) FROM kizunasync.bucket_grants WHERE user_id = :'ua' AND bucket_value = :'ub')::integer, 0,
	'a never got a grant on b''s bucket');

SELECT diag('attacks tried: ' || (71 - 5 + (SELECT count(*) FROM helper_calls) - 2) || ' (' ||
	(SELECT count(*) FROM helper_calls) || ' of them direct helper calls), plus 18 in push_security.sql');
SELECT * FROM finish();

SET client_min_messages = warning;
SELECT kizunasync.unsync_table(t) FROM unnest('{public.atk_notes,public.atk_ro,public.atk_probe,public.atk_trig}'::regclass[]) t;
DROP TABLE public.atk_notes, public.atk_ro, public.atk_unsynced, public.atk_probe, public.atk_trig;
DELETE FROM kizunasync.verdicts WHERE mutation_id::text LIKE '00000000-0000-4000-8000-f2%';
DELETE FROM kizunasync.clients WHERE client_id = '00000000-0000-4000-8000-c10000000002';
DROP SCHEMA atk_shadow CASCADE;
DROP SCHEMA atk CASCADE;
