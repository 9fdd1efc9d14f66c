-- D (continued). A real Realtime: a cancel is not swallowed, other errors
-- only warn, and send runs as the table owner.
-- db: kz_roles_d2
-- plan: 8
--
-- Schema realtime is owned by the superuser here (as Supabase's is), so
-- hints are sent.  realtime.send's behaviour is chosen per session with
-- kzt.send_mode: 'sleep' (pg_sleep(5)), 'raise' (an error), anything else
-- records the role it runs as.  Per decisions/0060: a statement timeout
-- during the hint cancels the statement (57014, the row is not committed),
-- any other error becomes a WARNING and the write commits (issue 10 point
-- 8), and send runs as the table's owner T (kz_r_d2_owner), not as a
-- superuser.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT kzlog.scope(s) FROM unnest('{d2_send}'::text[]) s \g /dev/null
CREATE ROLE kz_r_d2_owner NOLOGIN;
CREATE ROLE kz_r_d2_writer LOGIN NOSUPERUSER;
CREATE ROLE kz_r_d2_api LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_d2_api;
CREATE SCHEMA realtime;
GRANT USAGE ON SCHEMA realtime TO PUBLIC;
CREATE FUNCTION realtime.send(payload jsonb, event text, topic text, private boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	CASE current_setting('kzt.send_mode', true)
		WHEN 'sleep' THEN PERFORM pg_sleep(5);
		WHEN 'raise' THEN RAISE EXCEPTION 'realtime is down' USING ERRCODE = 'XX000';
		ELSE PERFORM kzlog.observe('d2_send', 'realtime.send', NULL);
	END CASE;
END $$;
CREATE TABLE public.d2_items (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text);
ALTER TABLE public.d2_items OWNER TO kz_r_d2_owner;
ALTER TABLE public.d2_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.d2_items TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
CREATE POLICY writer ON public.d2_items TO kz_r_d2_writer USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.d2_items TO authenticated, kz_r_d2_writer;
SELECT kizunasync.sync_table('public.d2_items', bucket_column => 'owner_id') AS n \gset
RESET client_min_messages;

\connect - kz_r_d2_writer
\set ON_ERROR_STOP 0
-- a statement timeout while the hint is being sent
SET kzt.send_mode = 'sleep';
SET statement_timeout = '500ms';
INSERT INTO public.d2_items VALUES (1, '00000000-0000-4000-8000-0000000000d2', 'timed out');
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
RESET statement_timeout;
SELECT kzt.expect(:'st', '57014', 'D legit: a statement timeout during realtime.send cancels the INSERT (57014)', :'msg');
SELECT kzt.is((SELECT count(*) FROM public.d2_items WHERE id = 1), 0::bigint, 'D legit: and the timed-out row is not committed');
-- another error only warns
SET kzt.send_mode = 'raise';
INSERT INTO public.d2_items VALUES (2, '00000000-0000-4000-8000-0000000000d2', 'hint failed');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'D legit: an error in realtime.send other than a cancel does not fail the INSERT', :'LAST_ERROR_MESSAGE');
SELECT kzt.is((SELECT count(*) FROM public.d2_items WHERE id = 2), 1::bigint, 'D legit: and the row is committed');
-- a normal hint
SET kzt.send_mode = 'record';
INSERT INTO public.d2_items VALUES (3, '00000000-0000-4000-8000-0000000000d2', 'hinted');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'D legit: an INSERT with a working realtime.send succeeds', :'LAST_ERROR_MESSAGE');

-- a push under a statement timeout
\connect - kz_r_d2_api
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000d2", "role": "authenticated"}';
SET kzt.send_mode = 'sleep';
SET statement_timeout = '500ms';
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000f301", "table": "d2_items", "pk": "4", "op": "insert", "columns": {"owner_id": "00000000-0000-4000-8000-0000000000d2", "v": "pushed, timed out"}}]}',
	NULL, 1) AS r \gset
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
RESET statement_timeout;
SELECT kzt.expect(:'st', '57014', 'D legit: a statement timeout during realtime.send cancels a push (57014)', :'msg');
SELECT kzt.is((SELECT count(*) FROM public.d2_items WHERE id = 4), 0::bigint, 'D legit: and the pushed row is not committed');

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is(kzlog.seen_as('d2_send'), 'realtime.send as kz_r_d2_owner x1',
	'D legit: realtime.send ran once, as the table owner (not as a superuser or the extension owner)');
