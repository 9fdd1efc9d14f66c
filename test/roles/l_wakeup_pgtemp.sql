-- L. The wake-up hint never runs the writer's temporary objects as the table owner.
-- db: kz_roles_l_wake
-- plan: 14
--
-- Issue 23 item 2.  Schema realtime belongs to the superuser (as Supabase's
-- does) and its send is called as the synced table's owner kz_r_l_owner
-- (decisions/0060).  Here send and what it runs name relations unqualified,
-- which resolves the writer's pg_temp first: send hands l_own's hint to a
-- function with its own SET search_path, l_nopath's to one without, and
-- l_trig's to realtime.messages, whose trigger (own SET search_path) names
-- message_log.  An ordinary LOGIN writer, in its own session, plants
-- temporary tables messages and message_log with a trigger that records
-- who runs it and tries GRANT ALL on the owner's tables to the writer; a
-- member of authenticated does the same and pushes.  Per decisions/0002 and
-- 0060 no hint is sent as the owner while the session's temporary schema
-- holds anything, whoever writes (also the owner's own SECURITY DEFINER
-- function, called by the writer); before and after, hints go out as the
-- owner.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT kzlog.scope(s) FROM unnest('{l_send,l_evil,l_control}'::text[]) s \g /dev/null
CREATE ROLE kz_r_l_owner NOLOGIN;
CREATE ROLE kz_r_l_writer LOGIN NOSUPERUSER;
CREATE ROLE kz_r_l_api LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_l_api;
CREATE SCHEMA realtime;
GRANT USAGE ON SCHEMA realtime TO PUBLIC;
CREATE TABLE realtime.messages (topic text, event text, payload jsonb, private boolean);
CREATE TABLE realtime.message_log (topic text);
GRANT INSERT ON realtime.messages, realtime.message_log TO kz_r_l_owner;
CREATE FUNCTION realtime.store_own_path(p jsonb, e text, t text) RETURNS void
LANGUAGE plpgsql SET search_path = realtime AS $$
BEGIN
	INSERT INTO messages VALUES (t, e, p, true);
END $$;
CREATE FUNCTION realtime.store_no_path(p jsonb, e text, t text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO messages VALUES (t, e, p, true);
END $$;
CREATE FUNCTION realtime.log_message() RETURNS trigger
LANGUAGE plpgsql SET search_path = realtime AS $$
BEGIN
	INSERT INTO message_log VALUES (NEW.topic);
	RETURN NEW;
END $$;
CREATE TRIGGER log_message AFTER INSERT ON realtime.messages FOR EACH ROW EXECUTE FUNCTION realtime.log_message();
CREATE FUNCTION realtime.send(payload jsonb, event text, topic text, private boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kzlog.observe('l_send', 'send ' || topic);
	CASE topic
		WHEN 'kizunasync:l_own' THEN PERFORM realtime.store_own_path(payload, event, topic);
		WHEN 'kizunasync:l_nopath' THEN PERFORM realtime.store_no_path(payload, event, topic);
		ELSE INSERT INTO realtime.messages VALUES (topic, event, payload, private);
	END CASE;
END $$;
CREATE TABLE public.l_own (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text);
CREATE TABLE public.l_nopath (LIKE public.l_own INCLUDING ALL);
CREATE TABLE public.l_trig (LIKE public.l_own INCLUDING ALL);
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY '{l_own,l_nopath,l_trig}'::text[] LOOP
		EXECUTE format('ALTER TABLE public.%I OWNER TO kz_r_l_owner', t);
		EXECUTE format('ALTER TABLE public.%I ENABLE ROW LEVEL SECURITY', t);
		EXECUTE format('CREATE POLICY own ON public.%I TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid())', t);
		EXECUTE format('CREATE POLICY writer ON public.%I TO kz_r_l_writer USING (true) WITH CHECK (true)', t);
		EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON public.%I TO authenticated, kz_r_l_writer', t);
		PERFORM kizunasync.sync_table(format('public.%I', t)::regclass, bucket_column => 'owner_id');
	END LOOP;
END $$;
-- the owner's own SECURITY DEFINER function, qualified and with a pinned path
CREATE FUNCTION public.l_add(p_id bigint) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
	INSERT INTO public.l_own VALUES (p_id, '00000000-0000-4000-8000-0000000000e1', 'by the owner''s function')
$$;
ALTER FUNCTION public.l_add(bigint) OWNER TO kz_r_l_owner;
REVOKE EXECUTE ON FUNCTION public.l_add(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.l_add(bigint) TO kz_r_l_writer;
RESET client_min_messages;

-- the writer, its temporary schema empty: hints go out (as the owner)
\connect - kz_r_l_writer
\set ON_ERROR_STOP 0
INSERT INTO public.l_own VALUES (1, '00000000-0000-4000-8000-0000000000e1', 'before');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'L wake-up pg_temp: an INSERT by the writer, its temporary schema empty', :'LAST_ERROR_MESSAGE');
INSERT INTO public.l_trig VALUES (1, '00000000-0000-4000-8000-0000000000e1', 'before');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'L wake-up pg_temp: an INSERT into the table whose hint fires the trigger on realtime.messages', :'LAST_ERROR_MESSAGE');
-- the writer plants its temporary tables and trigger
\set ON_ERROR_STOP 1
CREATE TEMP TABLE messages (topic text, event text, payload jsonb, private boolean);
CREATE TEMP TABLE message_log (topic text);
CREATE FUNCTION pg_temp.evil() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kzlog.observe(coalesce(nullif(current_setting('kzt.phase', true), ''), 'l_evil'), TG_TABLE_NAME || ' trigger', 'kz_r_l_owner');
	BEGIN
		GRANT ALL ON public.l_own, public.l_nopath, public.l_trig TO kz_r_l_writer, kz_r_l_api;
	EXCEPTION WHEN OTHERS THEN
		NULL;
	END;
	RETURN NEW;
END $$;
CREATE TRIGGER evil BEFORE INSERT ON pg_temp.messages FOR EACH ROW EXECUTE FUNCTION pg_temp.evil();
CREATE TRIGGER evil BEFORE INSERT ON pg_temp.message_log FOR EACH ROW EXECUTE FUNCTION pg_temp.evil();
GRANT ALL ON messages, message_log TO PUBLIC;
-- control: the trap is live in the writer's own session (as the writer)
BEGIN;
SET LOCAL kzt.phase = 'l_control';
INSERT INTO messages VALUES ('t', 'e', '{}', true);
INSERT INTO message_log VALUES ('t');
COMMIT;
\set ON_ERROR_STOP 0
INSERT INTO public.l_own VALUES (2, '00000000-0000-4000-8000-0000000000e1', 'planted');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'L wake-up pg_temp: an INSERT by the writer with its temporary trap planted (send with its own search_path)', :'LAST_ERROR_MESSAGE');
INSERT INTO public.l_nopath VALUES (2, '00000000-0000-4000-8000-0000000000e1', 'planted');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'L wake-up pg_temp: the same, send calling a function without a search_path', :'LAST_ERROR_MESSAGE');
INSERT INTO public.l_trig VALUES (2, '00000000-0000-4000-8000-0000000000e1', 'planted');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'L wake-up pg_temp: the same, a trigger on realtime.messages naming its table unqualified', :'LAST_ERROR_MESSAGE');
SELECT public.l_add(5);
SELECT kzt.expect(:'SQLSTATE', '00000', 'L wake-up pg_temp: the same, through the owner''s SECURITY DEFINER function (the writing role is the owner)', :'LAST_ERROR_MESSAGE');

-- a member of authenticated plants the same in its session and pushes
\connect - kz_r_l_api
\set ON_ERROR_STOP 1
CREATE TEMP TABLE messages (topic text, event text, payload jsonb, private boolean);
CREATE FUNCTION pg_temp.evil() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kzlog.observe('l_evil', TG_TABLE_NAME || ' trigger (push)', 'kz_r_l_owner');
	BEGIN
		GRANT ALL ON public.l_own, public.l_nopath, public.l_trig TO kz_r_l_writer, kz_r_l_api;
	EXCEPTION WHEN OTHERS THEN
		NULL;
	END;
	RETURN NEW;
END $$;
CREATE TRIGGER evil BEFORE INSERT ON pg_temp.messages FOR EACH ROW EXECUTE FUNCTION pg_temp.evil();
GRANT ALL ON messages TO PUBLIC;
\set ON_ERROR_STOP 0
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-0000000000e2", "role": "authenticated"}', true) \g /dev/null
SELECT kizunasync.push(batch => '{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000e201", "table": "l_own", "pk": "3", "op": "insert", "columns": {"owner_id": "00000000-0000-4000-8000-0000000000e2", "v": "pushed"}}]}', last_mutation_id => NULL, schema_version => 1) -> 'verdicts' -> 0 ->> 'verdict' AS verdict \gset
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
COMMIT;
SELECT kzt.ok(:'st' = '00000' AND :'verdict' = 'applied', 'L wake-up pg_temp: a push by a member of authenticated with its temporary trap planted',
	format('SQLSTATE %s, verdict %s: %s', :'st', :'verdict', :'msg'));

-- the writer drops its temporary objects: hints go out again
\connect - kz_r_l_writer
\set ON_ERROR_STOP 1
CREATE TEMP TABLE scratch (x int);
DROP TABLE scratch;
\set ON_ERROR_STOP 0
INSERT INTO public.l_own VALUES (4, '00000000-0000-4000-8000-0000000000e1', 'after');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'L wake-up pg_temp: an INSERT after the writer dropped its temporary objects', :'LAST_ERROR_MESSAGE');

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzlog.clean('l_evil', 'L wake-up pg_temp: the writers'' temporary triggers never ran as the table owner, a superuser or the extension owner');
SELECT kzt.is((SELECT string_agg(format('%s %s %s', c.relname, r.rolname, p.priv), ', ' ORDER BY c.relname, r.rolname, p.priv)
		FROM pg_class c, pg_roles r, unnest('{TRUNCATE,TRIGGER,REFERENCES}'::text[]) p(priv)
		WHERE c.oid IN ('public.l_own'::regclass, 'public.l_nopath'::regclass, 'public.l_trig'::regclass)
		  AND r.rolname IN ('kz_r_l_writer', 'kz_r_l_api')
		  AND has_table_privilege(r.oid, c.oid, p.priv)),
	NULL, 'L wake-up pg_temp: no GRANT on the owner''s tables was committed');
SELECT kzt.is(kzlog.seen_as('l_send'), 'send kizunasync:l_own as kz_r_l_owner x2; send kizunasync:l_trig as kz_r_l_owner x1',
	'L wake-up pg_temp: send ran as the owner for the writes made with the temporary schema empty, and for no other');
SELECT kzt.is((SELECT string_agg(topic, ' ' ORDER BY topic) FROM realtime.messages), 'kizunasync:l_own kizunasync:l_own kizunasync:l_trig',
	'L wake-up pg_temp: those hints reached realtime.messages');
SELECT kzt.is((SELECT string_agg(table_name || ':' || pk, ' ' ORDER BY table_name, pk) FROM kizunasync.changelog),
	'l_nopath:2 l_own:1 l_own:2 l_own:3 l_own:4 l_own:5 l_trig:1 l_trig:2', 'L wake-up pg_temp: every write was recorded');
SELECT kzt.is(kzlog.seen_as('l_control'), 'message_log trigger as kz_r_l_writer x1; messages trigger as kz_r_l_writer x1',
	'L wake-up pg_temp: control: in the writer''s own session its triggers run, as the writer');
