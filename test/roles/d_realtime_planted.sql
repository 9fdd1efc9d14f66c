-- D. A planted realtime.send is never called.
-- db: kz_roles_d
-- plan: 7
--
-- The database has no Supabase Realtime.  kz_r_d_planter, an ordinary role
-- with CREATE on the database, creates schema realtime and
-- realtime.send(jsonb, text, text, boolean), which records the role it runs
-- as and tries to make the planter a superuser.  Synced writes (wake-up hints
-- are on by default) by an ordinary writer and by a push must never call
-- it: decisions/0060 calls realtime.send only when schema realtime is owned
-- by a superuser; above all never as a superuser, the extension owner or
-- the table's owner (kz_r_d_owner).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT kzlog.scope(s) FROM unnest('{d_planted,d_control}'::text[]) s \g /dev/null
CREATE ROLE kz_r_d_owner NOLOGIN;
CREATE ROLE kz_r_d_planter LOGIN NOSUPERUSER;
CREATE ROLE kz_r_d_writer LOGIN NOSUPERUSER;
CREATE ROLE kz_r_d_api LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_d_api;
GRANT CREATE ON DATABASE kz_roles_d TO kz_r_d_planter;
CREATE TABLE public.d_items (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text);
ALTER TABLE public.d_items OWNER TO kz_r_d_owner;
ALTER TABLE public.d_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.d_items TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
CREATE POLICY writer ON public.d_items TO kz_r_d_writer USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.d_items TO authenticated, kz_r_d_writer;
SELECT kizunasync.sync_table('public.d_items', bucket_column => 'owner_id') AS n \gset
RESET client_min_messages;

\connect - kz_r_d_planter
CREATE SCHEMA realtime;
GRANT USAGE ON SCHEMA realtime TO PUBLIC;
CREATE FUNCTION realtime.send(payload jsonb, event text, topic text, private boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kzlog.observe(coalesce(nullif(current_setting('kzt.phase', true), ''), 'd_planted'), 'planted realtime.send', 'kz_r_d_owner');
	BEGIN
		EXECUTE format('ALTER ROLE %I SUPERUSER', 'kz_r_d_planter');
	EXCEPTION WHEN OTHERS THEN
		NULL;
	END;
END $$;

-- an ordinary writer
\connect - kz_r_d_writer
\set ON_ERROR_STOP 0
INSERT INTO public.d_items VALUES (1, '00000000-0000-4000-8000-0000000000d1', 'written');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'D planted: an INSERT into the synced table by an ordinary writer succeeds', :'LAST_ERROR_MESSAGE');
UPDATE public.d_items SET v = 'updated' WHERE id = 1;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'D planted: an UPDATE by the writer succeeds', :'LAST_ERROR_MESSAGE');

-- a push
\connect - kz_r_d_api
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000d1", "role": "authenticated"}';
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000f201", "table": "d_items", "pk": "2", "op": "insert", "columns": {"owner_id": "00000000-0000-4000-8000-0000000000d1", "v": "pushed"}}]}',
	NULL, 1) -> 'verdicts' -> 0 ->> 'verdict' AS verdict \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'D planted: a push into the synced table succeeds', :'LAST_ERROR_MESSAGE');

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzlog.clean('d_planted', 'D planted: the planted realtime.send never ran as a superuser, the extension owner or the table owner');
SELECT kzt.is(kzlog.seen_as('d_planted'), 'nothing ran',
	'D planted: the planted realtime.send (schema realtime not owned by a superuser) was never called');
SELECT kzt.ok(NOT rolsuper, 'D planted: the planter is not a superuser afterwards') FROM pg_roles WHERE rolname = 'kz_r_d_planter';
-- control: the planted function does record when it is called
\connect - kz_r_d_planter
SET kzt.phase = 'd_control';
SELECT realtime.send('{}', 'e', 't', true) IS NULL AS called \gset
\connect - postgres
SELECT kzt.ok(EXISTS (SELECT 1 FROM kzlog.seen WHERE scope = 'd_control' AND cu = 'kz_r_d_planter'),
	'D planted: control: the planted function records the role it runs as', kzlog.seen_as('d_control'));
