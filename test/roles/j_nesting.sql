-- J. pull and push do not nest: application code they run cannot call them again.
-- db: kz_roles_j_nest
-- plan: 8
--
-- push and pull run application code as the caller: triggers, policies,
-- defaults.  kz_r_j_nest_owner, an ordinary role, owns synced tables with
-- an UPDATE trigger that itself calls kizunasync.push (a rejected update
-- of another table), and a policy that calls kizunasync.pull.  On
-- b703a9e the nested push threw away the outer push's queued change (a
-- committed update that no pull ever delivers) and reset its state.
-- decisions/0061: an entry point called while another one is running in
-- the same backend is refused with 0A000; outside a pull or push the same
-- code works, and the refusal leaves nothing behind.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE ROLE kz_r_j_nest_owner LOGIN NOSUPERUSER;
CREATE ROLE kz_r_j_nest_api LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_j_nest_api;
GRANT CREATE ON SCHEMA public TO kz_r_j_nest_owner;
RESET client_min_messages;

\connect - kz_r_j_nest_owner
\set ON_ERROR_STOP 1
CREATE TABLE public.nest_items (id bigint PRIMARY KEY, v text);
CREATE TABLE public.nest_side (id bigint PRIMARY KEY, v text);
CREATE TABLE public.nest_pol (id bigint PRIMARY KEY, v text);
ALTER TABLE public.nest_items ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.nest_side ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.nest_pol ENABLE ROW LEVEL SECURITY;
CREATE POLICY p ON public.nest_items TO authenticated USING (true) WITH CHECK (true);
CREATE POLICY p ON public.nest_side TO authenticated USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.nest_items, public.nest_side, public.nest_pol TO authenticated;
INSERT INTO public.nest_items VALUES (1, 'one'), (2, 'two');
INSERT INTO public.nest_pol VALUES (1, 'one');
-- an AFTER UPDATE trigger that pushes (a rejected mutation: no such row)
CREATE FUNCTION public.nest_push() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kizunasync.push(jsonb_build_object('mutations', jsonb_build_array(jsonb_build_object(
		'mutation_id', gen_random_uuid(), 'table', 'nest_side', 'pk', '999', 'op', 'update',
		'columns', jsonb_build_object('v', 'nested')))), NULL, 1);
	RETURN NEW;
END $$;
CREATE TRIGGER zz_nest_push AFTER UPDATE ON public.nest_items FOR EACH ROW EXECUTE FUNCTION public.nest_push();
-- a policy that pulls
CREATE FUNCTION public.nest_pulls() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RETURN kizunasync.pull('[{"table": "nest_side"}]', '0', 1) IS NOT NULL;
END $$;
CREATE POLICY p ON public.nest_pol TO authenticated USING (public.nest_pulls());
\connect - postgres
SELECT kizunasync.sync_table(t) FROM unnest('{public.nest_items,public.nest_side,public.nest_pol}'::regclass[]) t \g /dev/null

\connect - kz_r_j_nest_api
\set ON_ERROR_STOP 0
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-00000000ee01", "role": "authenticated"}';
-- control: outside a push the trigger's own push works
UPDATE public.nest_items SET v = 'plain update' WHERE id = 2;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'J nesting: control: a plain UPDATE whose trigger pushes works', :'LAST_ERROR_MESSAGE');
-- the push whose update fires the trigger
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000ee11", "table": "nest_items", "pk": "1", "op": "update", "columns": {"v": "pushed"}}]}',
	NULL, 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '0A000', 'J nesting: a push whose trigger calls push fails with 0A000', :'LAST_ERROR_MESSAGE');
SELECT kzt.ok(:'LAST_ERROR_MESSAGE' LIKE '%kizunasync.push() cannot be called while kizunasync.push() is running%',
	'J nesting: the error names both calls', :'LAST_ERROR_MESSAGE');
-- the refusal leaves nothing behind: the next push of this session works
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000ee12", "table": "nest_side", "pk": "5", "op": "insert", "columns": {"v": "after"}}]}',
	NULL, 1) -> 'verdicts' -> 0 ->> 'verdict' AS v \gset
SELECT kzt.is(:'v', 'applied', 'J nesting: after the refusal a push in the same session works');
-- ... also after catching it in the same transaction
BEGIN;
DO $$
BEGIN
	PERFORM kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000ee13", "table": "nest_items", "pk": "1", "op": "update", "columns": {"v": "pushed"}}]}', NULL, 1);
EXCEPTION WHEN feature_not_supported THEN
	NULL;
END $$;
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000ee14", "table": "nest_side", "pk": "6", "op": "insert", "columns": {"v": "after, same transaction"}}]}',
	NULL, 1) -> 'verdicts' -> 0 ->> 'verdict' AS v \gset
COMMIT;
SELECT kzt.is(:'v', 'applied', 'J nesting: after a caught refusal a push in the same transaction works');
-- a pull whose policy pulls
SELECT kizunasync.pull('[{"table": "nest_pol"}]', '0', 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '0A000', 'J nesting: a pull whose policy calls pull fails with 0A000', :'LAST_ERROR_MESSAGE');

\connect - postgres
\set ON_ERROR_STOP 1
-- every committed version of a synced row has its entry
SELECT kzt.is((SELECT string_agg(format('%s:%s', i.id, l.row_xmin::text = i.xmin::text), ' ' ORDER BY i.id)
				 FROM public.nest_items i LEFT JOIN kizunasync.changelog l
				   ON l.table_name = 'nest_items' AND l.pk = i.id::text),
	'1:t 2:t',
	'J nesting: every committed version of nest_items has its changelog entry (nothing was lost)');
SELECT kzt.is((SELECT string_agg(id || ':' || v, ' ' ORDER BY id) FROM public.nest_items),
	'1:one 2:plain update',
	'J nesting: the refused push changed nothing');
