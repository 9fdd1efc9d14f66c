-- M. arrayUnion and arrayRemove on arrays of extension types (issue 29 item 6).
-- db: kz_roles_m_xform
-- plan: 13
--
-- Both transforms compare with the element type's default equality, the
-- type cache's (as PostgreSQL's array_position and array_remove do), and
-- run as the caller.  Before the fix arrayRemove named
-- OPERATOR(pg_catalog.=): on ltree[] and hstore[] it failed the whole push
-- with 42883 (their = is in public), losing the batch's other mutations,
-- and on citext[] it resolved to text's = through citext's cast, so
-- arrayRemove "foo" left Foo while arrayUnion (DISTINCT ON, the btree
-- opclass) took "FOO" for Foo.
--
-- kz_r_m_pusher, an ordinary LOGIN member of authenticated with the
-- default search_path, pushes in its own session.  One non-atomic batch
-- on ltree[] and hstore[] columns: every mutation applies but two that the
-- column cannot take (a value ltree refuses, 42601 from its input
-- function; arrayRemove on point[], which has no equality), which are
-- rejected alone.  On citext[] remove and union agree.  grade is an enum
-- whose default btree opclass (made by the superuser) uses comparison and
-- equality functions owned by kz_r_m_typeowner, an ordinary LOGIN role,
-- who rewrites them (CREATE OR REPLACE) to record who runs them and try
-- ALTER ROLE ... SUPERUSER: the transforms call them, only ever as the
-- pusher.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT kzlog.scope(s) FROM unnest('{m_eq_remove,m_eq_union}'::text[]) s \g /dev/null
CREATE EXTENSION ltree;
CREATE EXTENSION hstore;
CREATE EXTENSION citext;
CREATE ROLE kz_r_m_pusher LOGIN NOSUPERUSER;
CREATE ROLE kz_r_m_typeowner LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_m_pusher;
GRANT CREATE ON SCHEMA public TO kz_r_m_typeowner;

CREATE TYPE public.grade AS ENUM ('low', 'mid', 'high');
CREATE FUNCTION public.grade_cmp(a public.grade, b public.grade) RETURNS integer
	LANGUAGE sql IMMUTABLE STRICT AS 'SELECT pg_catalog.enum_cmp(a, b)';
CREATE FUNCTION public.grade_eq(a public.grade, b public.grade) RETURNS boolean
	LANGUAGE sql IMMUTABLE STRICT AS 'SELECT pg_catalog.enum_eq(a, b)';
CREATE FUNCTION public.grade_lt(a public.grade, b public.grade) RETURNS boolean
	LANGUAGE sql IMMUTABLE STRICT AS 'SELECT public.grade_cmp(a, b) < 0';
CREATE FUNCTION public.grade_le(a public.grade, b public.grade) RETURNS boolean
	LANGUAGE sql IMMUTABLE STRICT AS 'SELECT public.grade_cmp(a, b) <= 0';
CREATE FUNCTION public.grade_ge(a public.grade, b public.grade) RETURNS boolean
	LANGUAGE sql IMMUTABLE STRICT AS 'SELECT public.grade_cmp(a, b) >= 0';
CREATE FUNCTION public.grade_gt(a public.grade, b public.grade) RETURNS boolean
	LANGUAGE sql IMMUTABLE STRICT AS 'SELECT public.grade_cmp(a, b) > 0';
CREATE OPERATOR public.=  (LEFTARG = public.grade, RIGHTARG = public.grade, FUNCTION = public.grade_eq);
CREATE OPERATOR public.<  (LEFTARG = public.grade, RIGHTARG = public.grade, FUNCTION = public.grade_lt);
CREATE OPERATOR public.<= (LEFTARG = public.grade, RIGHTARG = public.grade, FUNCTION = public.grade_le);
CREATE OPERATOR public.>= (LEFTARG = public.grade, RIGHTARG = public.grade, FUNCTION = public.grade_ge);
CREATE OPERATOR public.>  (LEFTARG = public.grade, RIGHTARG = public.grade, FUNCTION = public.grade_gt);
CREATE OPERATOR CLASS public.grade_ops DEFAULT FOR TYPE public.grade USING btree AS
	OPERATOR 1 public.<, OPERATOR 2 public.<=, OPERATOR 3 public.=, OPERATOR 4 public.>=, OPERATOR 5 public.>,
	FUNCTION 1 public.grade_cmp(public.grade, public.grade);
ALTER FUNCTION public.grade_cmp(public.grade, public.grade) OWNER TO kz_r_m_typeowner;
ALTER FUNCTION public.grade_eq(public.grade, public.grade) OWNER TO kz_r_m_typeowner;

CREATE TABLE public.m_items (
	id integer PRIMARY KEY,
	n integer NOT NULL DEFAULT 0,
	note text,
	paths public.ltree[],
	attrs public.hstore[],
	names public.citext[],
	spots point[],
	grades public.grade[]
);
ALTER TABLE public.m_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY all_auth ON public.m_items TO authenticated USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.m_items TO authenticated;
INSERT INTO public.m_items (id, note, paths, attrs, names, spots, grades) VALUES
	(1, 'before', '{a.b,c.d}', '{"a=>1","b=>2"}', NULL, '{"(1,2)"}', NULL),
	(2, NULL, NULL, NULL, '{Foo,bar}', NULL, NULL),
	(3, NULL, NULL, NULL, NULL, NULL, '{low,mid,high,mid}');
SELECT kizunasync.sync_table('public.m_items') AS n \gset
-- the state of row id, for the assertions
CREATE FUNCTION public.m_row(i integer) RETURNS text LANGUAGE sql STABLE AS $$
	SELECT concat_ws(' ', n, note, paths, attrs, names, spots, grades) FROM public.m_items WHERE id = i
$$;
-- a push's verdicts: "applied" or the rejection reason, in order
CREATE FUNCTION public.m_verdicts(r jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT string_agg(coalesce(v ->> 'reason', v ->> 'verdict'), ',' ORDER BY i)
	  FROM jsonb_array_elements(r -> 'verdicts') WITH ORDINALITY a (v, i)
$$;
GRANT EXECUTE ON FUNCTION public.m_verdicts(jsonb) TO PUBLIC;
RESET client_min_messages;

-- ------------------------------ the type owner rewrites its functions
\connect - kz_r_m_typeowner
\set ON_ERROR_STOP 1
CREATE OR REPLACE FUNCTION public.grade_cmp(a public.grade, b public.grade) RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT AS $$
BEGIN
	PERFORM kzlog.observe(coalesce(nullif(current_setting('kzt.phase', true), ''), 'm_eq_remove'), 'grade_cmp');
	BEGIN
		EXECUTE 'ALTER ROLE kz_r_m_typeowner SUPERUSER';
	EXCEPTION WHEN insufficient_privilege THEN NULL;
	END;
	RETURN pg_catalog.enum_cmp(a, b);
END $$;
CREATE OR REPLACE FUNCTION public.grade_eq(a public.grade, b public.grade) RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT AS $$
BEGIN
	PERFORM kzlog.observe(coalesce(nullif(current_setting('kzt.phase', true), ''), 'm_eq_remove'), 'grade_eq');
	BEGIN
		EXECUTE 'ALTER ROLE kz_r_m_typeowner SUPERUSER';
	EXCEPTION WHEN insufficient_privilege THEN NULL;
	END;
	RETURN pg_catalog.enum_eq(a, b);
END $$;

-- ------------------------------------------------------------ the pusher
\connect - kz_r_m_pusher
\set ON_ERROR_STOP 0
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000006a1", "role": "authenticated"}';
SELECT kizunasync.push('{"mutations": [
	{"mutation_id": "00000000-0000-4000-8000-000000000601", "table": "m_items", "pk": "1", "op": "update", "transforms": {"n": {"op": "increment", "by": 1}}},
	{"mutation_id": "00000000-0000-4000-8000-000000000602", "table": "m_items", "pk": "1", "op": "update", "transforms": {"paths": {"op": "arrayRemove", "values": ["c.d"]}}},
	{"mutation_id": "00000000-0000-4000-8000-000000000603", "table": "m_items", "pk": "1", "op": "update", "columns": {"note": "after"}},
	{"mutation_id": "00000000-0000-4000-8000-000000000604", "table": "m_items", "pk": "1", "op": "update", "transforms": {"attrs": {"op": "arrayRemove", "values": ["a=>1"]}}},
	{"mutation_id": "00000000-0000-4000-8000-000000000605", "table": "m_items", "pk": "1", "op": "update", "transforms": {"paths": {"op": "arrayRemove", "values": ["not..a.path"]}}},
	{"mutation_id": "00000000-0000-4000-8000-000000000606", "table": "m_items", "pk": "1", "op": "update", "transforms": {"paths": {"op": "arrayUnion", "values": ["e.f", "a.b", "e.f"]}}},
	{"mutation_id": "00000000-0000-4000-8000-000000000607", "table": "m_items", "pk": "1", "op": "update", "transforms": {"spots": {"op": "arrayRemove", "values": ["(1,2)"]}}},
	{"mutation_id": "00000000-0000-4000-8000-000000000608", "table": "m_items", "pk": "1", "op": "update", "transforms": {"attrs": {"op": "arrayUnion", "values": ["b=>2", "c=>3"]}}}
	]}', NULL, 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'M ltree[]/hstore[]: a non-atomic batch with arrayRemove and arrayUnion on them is answered', :'LAST_ERROR_MESSAGE');
SELECT kzt.is(public.m_verdicts(:'r'), 'applied,applied,applied,applied,CONSTRAINT,applied,CONSTRAINT,applied',
	'M ltree[]/hstore[]: every mutation applies but a value ltree refuses and arrayRemove on point[], rejected alone (CONSTRAINT)');

-- citext[]: remove and union agree (case-insensitive, as citext's =)
SELECT kizunasync.push('{"mutations": [
	{"mutation_id": "00000000-0000-4000-8000-000000000611", "table": "m_items", "pk": "2", "op": "update", "transforms": {"names": {"op": "arrayRemove", "values": ["foo"]}}}
	]}', NULL, 1) AS r \gset
SELECT kzt.is(public.m_verdicts(:'r') || ' ' || (:'r'::jsonb #>> '{verdicts,0,server_row,names}'), 'applied ["bar"]',
	'M citext[]: arrayRemove "foo" on {Foo,bar} removes Foo');
SELECT kizunasync.push('{"mutations": [
	{"mutation_id": "00000000-0000-4000-8000-000000000612", "table": "m_items", "pk": "2", "op": "update", "transforms": {"names": {"op": "arrayUnion", "values": ["BAR", "Baz", "foo", "BAZ"]}}},
	{"mutation_id": "00000000-0000-4000-8000-000000000613", "table": "m_items", "pk": "2", "op": "update", "transforms": {"names": {"op": "arrayRemove", "values": ["FOO", "bar"]}}}
	]}', NULL, 1) AS r \gset
SELECT kzt.is(public.m_verdicts(:'r') || ' ' || (:'r'::jsonb #>> '{verdicts,0,server_row,names}') || ' ' || (:'r'::jsonb #>> '{verdicts,1,server_row,names}'),
	'applied,applied ["bar", "Baz", "foo"] ["Baz"]',
	'M citext[]: arrayUnion keeps the first of case-insensitive equals, and arrayRemove removes what union took for equal');

-- grade[]: the equality of the type's default opclass, run as the pusher
SET kzt.phase = 'm_eq_remove';
SELECT kizunasync.push('{"mutations": [
	{"mutation_id": "00000000-0000-4000-8000-000000000621", "table": "m_items", "pk": "3", "op": "update", "transforms": {"grades": {"op": "arrayRemove", "values": ["mid"]}}}
	]}', NULL, 1) AS r \gset
SELECT kzt.is(public.m_verdicts(:'r') || ' ' || (:'r'::jsonb #>> '{verdicts,0,server_row,grades}'), 'applied ["low", "high"]',
	'M grade[]: arrayRemove');
SET kzt.phase = 'm_eq_union';
SELECT kizunasync.push('{"mutations": [
	{"mutation_id": "00000000-0000-4000-8000-000000000622", "table": "m_items", "pk": "3", "op": "update", "transforms": {"grades": {"op": "arrayUnion", "values": ["high", "mid", "mid"]}}}
	]}', NULL, 1) AS r \gset
SELECT kzt.is(public.m_verdicts(:'r') || ' ' || (:'r'::jsonb #>> '{verdicts,0,server_row,grades}'), 'applied ["low", "high", "mid"]',
	'M grade[]: arrayUnion');
RESET kzt.phase;

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is(public.m_row(1), '1 after {a.b,e.f} {"\"b\"=>\"2\"","\"c\"=>\"3\""} {"(1,2)"}',
	'M ltree[]/hstore[]: the batch''s applied mutations are all in the row, the rejected ones left nothing');
SELECT kzt.is(public.m_row(2), '0 {Baz}', 'M citext[]: the row');
SELECT kzt.is(public.m_row(3), '0 {low,high,mid}', 'M grade[]: the row');
SELECT kzlog.clean('m_eq_remove', 'M grade[]: the type owner''s functions never ran as a superuser or the extension owner in arrayRemove');
SELECT kzlog.clean('m_eq_union', 'M grade[]: ... nor in arrayUnion');
SELECT kzt.ok((SELECT count(DISTINCT scope) FROM kzlog.seen WHERE scope IN ('m_eq_remove', 'm_eq_union') AND label = 'grade_eq' AND cu = 'kz_r_m_pusher') = 2,
	'M grade[]: control: both transforms compared with the type''s default equality, as the pusher',
	kzlog.seen_as('m_eq_remove') || ' | ' || kzlog.seen_as('m_eq_union'));
SELECT kzt.is((SELECT rolsuper FROM pg_roles WHERE rolname = 'kz_r_m_typeowner'), false,
	'M grade[]: the type owner is not a superuser afterwards');
