-- B. Column types' code never runs as the extension owner.
-- db: kz_roles_b
-- plan: 21
--
-- kz_app_owner (LOGIN, not a superuser) owns three synced tables whose
-- columns have types with user code: a domain whose CHECK records who runs
-- it, an enum with a user cast to json (to_jsonb uses a cast to json for
-- non-built-in types), a composite holding that enum, and a range type with
-- a user subtype_diff (under a GiST index).  One table is bucketed by the
-- enum, one by the domain.  Seeding (sync_table, repair_table; called by
-- the superuser), writes by an ordinary role, and a pull and a push by a
-- member of authenticated run that code; it must never run as a superuser
-- or the extension owner (decisions/0060: as the writer, the caller, or the
-- table owner under SECURITY_RESTRICTED_OPERATION).  The recorder is
-- kzlog.observe() with the scope set per phase (kzt.phase).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\set u '00000000-0000-4000-8000-0000000000b1'
SELECT kzlog.scope(s) FROM unnest('{none,b_seed,b_write,b_control,b_pull,b_push,b_repair}'::text[]) s \g /dev/null
CREATE ROLE kz_app_owner LOGIN NOSUPERUSER;
CREATE ROLE kz_r_b_writer LOGIN NOSUPERUSER;
CREATE ROLE kz_r_b_api LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_b_api;
GRANT CREATE ON SCHEMA public TO kz_app_owner;
GRANT USAGE ON SCHEMA auth TO kz_app_owner;
RESET client_min_messages;

\connect - kz_app_owner
SET client_min_messages = warning;
CREATE DOMAIN public.b_dom AS text
	CHECK (kzlog.observe(coalesce(current_setting('kzt.phase', true), 'none'), 'domain check'));
CREATE TYPE public.b_enum AS ENUM ('red', 'green', 'blue');
CREATE FUNCTION public.b_enum_json(public.b_enum) RETURNS json LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kzlog.observe(coalesce(current_setting('kzt.phase', true), 'none'), 'enum cast to json');
	RETURN to_json($1::text);
END $$;
CREATE CAST (public.b_enum AS json) WITH FUNCTION public.b_enum_json(public.b_enum);
CREATE TYPE public.b_comp AS (color public.b_enum, label text);
CREATE FUNCTION public.b_diff(a float8, b float8) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	PERFORM kzlog.observe(coalesce(current_setting('kzt.phase', true), 'none'), 'range subtype_diff');
	RETURN a - b;
END $$;
CREATE TYPE public.b_range AS RANGE (subtype = float8, subtype_diff = public.b_diff);
CREATE TABLE public.b_things (id bigint PRIMARY KEY, owner_id uuid NOT NULL, d public.b_dom,
	e public.b_enum, c public.b_comp, span public.b_range);
CREATE INDEX b_things_r ON public.b_things USING gist (span);
CREATE TABLE public.b_by_enum (id bigint PRIMARY KEY, color public.b_enum NOT NULL, note text);
CREATE TABLE public.b_by_dom (id bigint PRIMARY KEY, tag public.b_dom NOT NULL, note text);
ALTER TABLE public.b_things ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.b_things TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
CREATE POLICY writer ON public.b_things TO kz_r_b_writer USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.b_things, public.b_by_enum, public.b_by_dom TO authenticated, kz_r_b_writer;
INSERT INTO public.b_things VALUES
	(1, :'u', 'd1', 'red', ROW('green', 'c1'), '[1,2)'),
	(2, :'u', 'd2', 'blue', ROW('red', 'c2'), '[3,5)');
INSERT INTO public.b_by_enum VALUES (1, 'red', 'n1'), (2, 'green', 'n2');
INSERT INTO public.b_by_dom VALUES (1, 'x', 'n1'), (2, 'y', 'n2');
RESET client_min_messages;

-- ------------------------------------------------ seeding, by the superuser
\connect - postgres
SET kzt.phase = 'b_seed';
\set ON_ERROR_STOP 0
SELECT kizunasync.sync_table('public.b_things', bucket_column => 'owner_id') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'B seed: sync_table of b_things (domain, enum, composite, range columns)', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.sync_table('public.b_by_enum', bucket_column => 'color') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'B seed: sync_table of b_by_enum (bucketed by the enum)', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.sync_table('public.b_by_dom', bucket_column => 'tag') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'B seed: sync_table of b_by_dom (bucketed by the domain)', :'LAST_ERROR_MESSAGE');
SELECT kzlog.clean('b_seed', 'B seed: while sync_table seeded, no column type''s code ran as a superuser or the extension owner');

-- -------------------------------------------------- writes, ordinary role
\connect - kz_r_b_writer
SET kzt.phase = 'b_write';
INSERT INTO public.b_things VALUES (3, '00000000-0000-4000-8000-0000000000b1', 'd3', 'green', ROW('blue', 'c3'), '[5,6)');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'B write: INSERT into b_things', :'LAST_ERROR_MESSAGE');
UPDATE public.b_things SET e = 'blue', c = ROW('green', 'c1b'), d = 'd1b' WHERE id = 1;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'B write: UPDATE of the enum, composite and domain columns of b_things', :'LAST_ERROR_MESSAGE');
UPDATE public.b_by_enum SET color = 'blue' WHERE id = 1;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'B write: UPDATE moving a b_by_enum row to another enum bucket', :'LAST_ERROR_MESSAGE');
UPDATE public.b_by_dom SET tag = 'z' WHERE id = 1;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'B write: UPDATE moving a b_by_dom row to another domain bucket', :'LAST_ERROR_MESSAGE');
DELETE FROM public.b_things WHERE id = 2;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'B write: DELETE from b_things', :'LAST_ERROR_MESSAGE');
DELETE FROM public.b_by_enum WHERE id = 2;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'B write: DELETE from b_by_enum (tombstone in an enum bucket)', :'LAST_ERROR_MESSAGE');
-- control: to_jsonb does use the enum's cast to json
SET kzt.phase = 'b_control';
SELECT to_jsonb(t) IS NOT NULL AS rendered FROM public.b_by_enum t WHERE id = 1 \gset
SELECT kzt.ok(EXISTS (SELECT 1 FROM kzlog.seen WHERE scope = 'b_control' AND label = 'enum cast to json' AND cu = 'kz_r_b_writer'),
	'B control: to_jsonb of an enum runs its cast to json (here as the writer, who called it)', kzlog.seen_as('b_control'));
SELECT kzt.ok(EXISTS (SELECT 1 FROM kzlog.seen WHERE scope = 'b_write' AND label = 'domain check' AND cu = 'kz_r_b_writer'),
	'B control: the domain check ran as the writer during the writes', kzlog.seen_as('b_write'));
SELECT kzlog.clean('b_write', 'B write: during the writes, no column type''s code ran as a superuser or the extension owner');

-- ----------------------------------------------- pull and push, authenticated
\connect - kz_r_b_api
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000b1", "role": "authenticated"}';
SET kzt.phase = 'b_pull';
\set r ''
SELECT kizunasync.pull('[{"table": "b_things", "params": {"owner_id": "00000000-0000-4000-8000-0000000000b1"}},
	{"table": "b_by_enum", "params": {"color": "blue"}}, {"table": "b_by_dom", "params": {"tag": "z"}}]', '0', 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'B pull: pull of b_things, an enum bucket and a domain bucket', :'LAST_ERROR_MESSAGE');
SELECT kzt.is((SELECT jsonb_agg(DISTINCT x ->> 'table' ORDER BY x ->> 'table') FROM jsonb_array_elements(nullif(:'r', '')::jsonb -> 'rows') x),
	'["b_by_dom", "b_by_enum", "b_things"]'::jsonb, 'B pull: it delivered rows of all three tables (their values were rendered)');
SELECT kzlog.clean('b_pull', 'B pull: no column type''s code ran as a superuser or the extension owner');
SET kzt.phase = 'b_push';
\set r ''
SELECT kizunasync.push('{"mutations": [
	{"mutation_id": "00000000-0000-4000-8000-00000000f101", "table": "b_things", "pk": "4", "op": "insert", "columns": {"owner_id": "00000000-0000-4000-8000-0000000000b1", "d": "d4", "e": "red", "c": {"color": "green", "label": "c4"}, "span": "[7,8)"}},
	{"mutation_id": "00000000-0000-4000-8000-00000000f102", "table": "b_things", "pk": "1", "op": "update", "columns": {"e": "green", "d": "d1c"}},
	{"mutation_id": "00000000-0000-4000-8000-00000000f103", "table": "b_by_enum", "pk": "3", "op": "insert", "columns": {"color": "red", "note": "n3"}},
	{"mutation_id": "00000000-0000-4000-8000-00000000f104", "table": "b_by_dom", "pk": "1", "op": "update", "columns": {"tag": "w"}}
	]}', NULL, 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'B push: inserts and updates of the typed columns', :'LAST_ERROR_MESSAGE');
SELECT kzt.is((SELECT jsonb_agg(x ->> 'verdict') FROM jsonb_array_elements(nullif(:'r', '')::jsonb -> 'verdicts') x),
	'["applied", "applied", "applied", "applied"]'::jsonb, 'B push: all four mutations applied');
SELECT kzlog.clean('b_push', 'B push: no column type''s code ran as a superuser or the extension owner');

-- ------------------------------------------ repair_table, by the superuser
\connect - postgres
SET kzt.phase = 'b_repair';
SELECT kizunasync.repair_table('public.b_by_enum') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'B repair: repair_table of b_by_enum (bucketed by the enum)', :'LAST_ERROR_MESSAGE');
SELECT kzlog.clean('b_repair', 'B repair: while repair_table seeded, no column type''s code ran as a superuser or the extension owner');
SELECT kzt.diag(format('B %s: %s', s, kzlog.seen_as(s))) FROM unnest('{b_seed,b_write,b_pull,b_push,b_repair}'::text[]) s;
