-- J. Operators in kizunasync's own caller-side SQL are qualified: a planted operator never runs as another caller.
-- db: kz_roles_j_op
-- plan: 7
--
-- Statements that read and write application rows run as the caller with
-- the caller's search_path (decisions/0060), so the names of our own SQL in
-- them must be qualified.  PostgreSQL prefers an operator that matches the
-- operand types exactly, in any schema on the path, over pg_catalog's
-- that needs a coercion: for a key column of a domain type, "key IS NOT
-- DISTINCT FROM $2" (push's insert-key check) resolved to
-- public.=(kid, text), and for an enum array column "u.e = ANY (...)"
-- (push's arrayRemove) to public.=(mood, mood).  kz_r_j_op_planter has
-- CREATE on public (as on older or permissive installations) and plants
-- both; kz_r_j_op_victim, a member of authenticated with the default
-- search_path, pushes.  On b703a9e the planter's function ran as the
-- victim; now every operator of those statements is OPERATOR(pg_catalog.x).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT kzlog.scope(s) FROM unnest('{j_op,j_op_control}'::text[]) s \g /dev/null
CREATE ROLE kz_r_j_op_planter LOGIN NOSUPERUSER;
CREATE ROLE kz_r_j_op_victim LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_j_op_victim;
GRANT CREATE ON SCHEMA public TO kz_r_j_op_planter;
CREATE DOMAIN public.kid AS text;
CREATE TYPE public.mood AS ENUM ('calm', 'glad', 'sad');
CREATE TABLE public.op_items (id public.kid PRIMARY KEY, tags public.mood[], prev jsonb);
ALTER TABLE public.op_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY all_auth ON public.op_items TO authenticated USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.op_items TO authenticated;
INSERT INTO public.op_items VALUES ('k1', '{calm,glad,sad}', '{"a": 1}');
SELECT kizunasync.sync_table('public.op_items') AS n \gset
RESET client_min_messages;

\connect - kz_r_j_op_planter
\set ON_ERROR_STOP 1
CREATE FUNCTION public.op_kid_eq(a public.kid, b text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kzlog.observe(coalesce(nullif(current_setting('kzt.phase', true), ''), 'j_op'), 'planted =(kid, text)', 'kz_r_j_op_victim');
	RETURN a::text = b;
END $$;
CREATE FUNCTION public.op_mood_eq(a public.mood, b public.mood) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kzlog.observe(coalesce(nullif(current_setting('kzt.phase', true), ''), 'j_op'), 'planted =(mood, mood)', 'kz_r_j_op_victim');
	RETURN a::text = b::text;
END $$;
CREATE OPERATOR public.= (LEFTARG = public.kid, RIGHTARG = text, FUNCTION = public.op_kid_eq);
CREATE OPERATOR public.= (LEFTARG = public.mood, RIGHTARG = public.mood, FUNCTION = public.op_mood_eq);

\connect - kz_r_j_op_victim
\set ON_ERROR_STOP 0
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000f1", "role": "authenticated"}';
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-0000000000f2", "table": "op_items", "pk": "k2", "op": "insert", "columns": {"id": "k2", "tags": ["calm"]}}]}',
	NULL, 1) -> 'verdicts' -> 0 ->> 'verdict' AS v \gset
SELECT kzt.is(:'v', 'applied', 'J caller operators: an insert naming its key column (the insert-key check)');
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-0000000000f3", "table": "op_items", "pk": "k1", "op": "update", "transforms": {"tags": {"op": "arrayRemove", "values": ["glad"]}}}]}',
	NULL, 1) -> 'verdicts' -> 0 ->> 'verdict' AS v \gset
SELECT kzt.is(:'v', 'applied', 'J caller operators: an arrayRemove on the enum array column');
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-0000000000f4", "table": "op_items", "pk": "k1", "op": "update", "precondition": {"prev": {"a": 1}}, "columns": {"prev": {"a": 2}}}]}',
	NULL, 1) -> 'verdicts' -> 0 ->> 'verdict' AS v \gset
SELECT kzt.is(:'v', 'applied', 'J caller operators: an update with a precondition');
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-0000000000f5", "table": "op_items", "pk": "k2", "op": "delete", "precondition": {"tags": ["calm"]}}]}',
	NULL, 1) -> 'verdicts' -> 0 ->> 'verdict' AS v \gset
SELECT kzt.is(:'v', 'applied', 'J caller operators: a delete with a precondition');
-- control: in the victim's own SQL the planted operators are live
SET kzt.phase = 'j_op_control';
SELECT 'k1'::public.kid = 'k1'::text AS eq, 'calm'::public.mood = 'calm'::public.mood AS eq2 \gset

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzlog.clean('j_op', 'J caller operators: the planted operators never ran in kizunasync''s statements as the victim');
SELECT kzt.is((SELECT string_agg(id || ':' || tags::text, ' ' ORDER BY id) FROM public.op_items), 'k1:{calm,sad}',
	'J caller operators: the mutations did what they say');
SELECT kzt.ok((SELECT count(DISTINCT label) FROM kzlog.seen WHERE scope = 'j_op_control' AND cu = 'kz_r_j_op_victim') = 2,
	'J caller operators: control: the victim''s own comparisons reach both planted operators', kzlog.seen_as('j_op_control'));
