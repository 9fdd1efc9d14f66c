-- K. Third red-team pass (statement batching, the writers' section, read-only
-- pulls, repair/sync/unsync by non-owners): defects found, and attacks that
-- fail safely, kept so they stay covered.
-- db: kz_roles_k_red2
-- owner: kz_r_k2_dbo
-- plan: 4
--
-- Each as an ordinary LOGIN role in its own session:
--   K1 (DEFECT on main 8df535e) a non-atomic push whose mutation is rejected
--      before its unit runs (COLUMN_DENIED, DELETE_WINS, RLS_DENIED by a
--      tombstone) discarded the whole per-mutation capture queue, including
--      the changes of writes that ran outside the unit's subtransaction and
--      stay committed: a policy's audit function inserting into a synced
--      table during the locked render.  The row was committed with no
--      changelog entry, so no client ever pulled it.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE ROLE kz_r_k2_api LOGIN NOSUPERUSER;
CREATE ROLE kz_r_k2_plain LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_k2_api;
RESET client_min_messages;

-- ---------------------------------------------------------------- K1
\connect - kz_r_k2_dbo
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE public.k1_audit (id bigserial PRIMARY KEY, note text NOT NULL);
ALTER TABLE public.k1_audit ENABLE ROW LEVEL SECURITY;
CREATE POLICY all_auth ON public.k1_audit TO authenticated USING (true);
GRANT SELECT ON public.k1_audit TO authenticated;
-- the policy's audit function: a SECURITY DEFINER insert into a synced table
CREATE FUNCTION public.k1_seen(i bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	INSERT INTO public.k1_audit (note) VALUES ('seen ' || i);
	RETURN true;
END $$;
CREATE TABLE public.k1_items (id bigint PRIMARY KEY, v text, locked text);
ALTER TABLE public.k1_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY audited ON public.k1_items TO authenticated USING (public.k1_seen(id)) WITH CHECK (true);
GRANT SELECT, INSERT, DELETE ON public.k1_items TO authenticated;
GRANT UPDATE (v) ON public.k1_items TO authenticated;
INSERT INTO public.k1_items VALUES (1, 'a', 'l');
SELECT kizunasync.sync_table('public.k1_items') AS n \gset
SELECT kizunasync.sync_table('public.k1_audit') AS n \gset
RESET client_min_messages;

\connect - kz_r_k2_api
\set ON_ERROR_STOP 1
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000c1", "role": "authenticated"}';
-- column "locked" is not granted: COLUMN_DENIED, decided after the locked render
SELECT kzt.is(kizunasync.push(kzt.m('k1_items', '1', 'update', '{"columns": {"locked": "x"}}', 'c101'),
							  NULL, 1) #>> '{verdicts,0,reason}',
	'COLUMN_DENIED', 'K1: a push of an ungranted column is rejected (COLUMN_DENIED)');
-- an applied mutation in the same shape, as a control
SELECT kzt.is(kizunasync.push(kzt.m('k1_items', '1', 'update', '{"columns": {"v": "b"}}', 'c102'),
							  NULL, 1) #>> '{verdicts,0,verdict}',
	'applied', 'K1: control: a push of a granted column is applied');

-- the bookkeeping is read by the superuser (the checker, not an actor)
\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.ok(count(*) >= 2, 'K1: the policy''s audit function wrote its rows during both pushes (committed)')
  FROM public.k1_audit;
SELECT kzt.is(string_agg(a.note, ', ' ORDER BY a.id), NULL,
	'K1: every committed k1_audit row has its changelog entry (none skipped when a mutation is rejected)')
  FROM public.k1_audit a
 WHERE NOT EXISTS (SELECT 1 FROM kizunasync.changelog c
					WHERE c.table_name OPERATOR(pg_catalog.=) 'k1_audit' AND c.pk OPERATOR(pg_catalog.=) a.id::text);
