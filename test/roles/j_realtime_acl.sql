-- J. Wake-up hints respect the privileges on realtime.send, and never need the writer's.
-- db: kz_roles_j_rt
-- plan: 8
--
-- Schema realtime belongs to the superuser (as Supabase's does); send is
-- called as the synced table's owner (decisions/0060).  Here only
-- kz_r_j_rt_owner may use it (USAGE on realtime, EXECUTE on send);
-- kz_r_j_rt_owner2 has USAGE but not EXECUTE.  On b703a9e the function was
-- looked up with the writer's privileges (a writer without USAGE on
-- realtime could not write to any synced table: 42501 "permission denied
-- for schema realtime") and then called through fmgr with no EXECUTE
-- check (as a table owner the administrator had denied it).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT kzlog.scope('j_rt') \g /dev/null
CREATE ROLE kz_r_j_rt_owner NOLOGIN;
CREATE ROLE kz_r_j_rt_owner2 NOLOGIN;
CREATE ROLE kz_r_j_rt_writer LOGIN NOSUPERUSER;
CREATE ROLE kz_r_j_rt_writer2 LOGIN NOSUPERUSER;
CREATE SCHEMA realtime;
GRANT USAGE ON SCHEMA realtime TO kz_r_j_rt_owner, kz_r_j_rt_owner2, kz_r_j_rt_writer2;
CREATE FUNCTION realtime.send(payload jsonb, event text, topic text, private boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kzlog.observe('j_rt', 'realtime.send ' || topic);
END $$;
REVOKE EXECUTE ON FUNCTION realtime.send(jsonb, text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION realtime.send(jsonb, text, text, boolean) TO kz_r_j_rt_owner;
CREATE TABLE public.rt_a (id bigint PRIMARY KEY, v text);
CREATE TABLE public.rt_b (id bigint PRIMARY KEY, v text);
ALTER TABLE public.rt_a OWNER TO kz_r_j_rt_owner;
ALTER TABLE public.rt_b OWNER TO kz_r_j_rt_owner2;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.rt_a, public.rt_b TO kz_r_j_rt_writer, kz_r_j_rt_writer2;
SELECT kizunasync.sync_table(t) FROM unnest('{public.rt_a,public.rt_b}'::regclass[]) t \g /dev/null
RESET client_min_messages;

-- a writer that cannot see schema realtime
\connect - kz_r_j_rt_writer
\set ON_ERROR_STOP 0
INSERT INTO public.rt_a VALUES (1, 'a');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'J realtime ACL: a writer without USAGE on schema realtime writes to a synced table', :'LAST_ERROR_MESSAGE');
-- a writer that can see it, on the table whose owner may not execute send
\connect - kz_r_j_rt_writer2
INSERT INTO public.rt_b VALUES (1, 'b');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'J realtime ACL: a write to the table whose owner may not EXECUTE send', :'LAST_ERROR_MESSAGE');
INSERT INTO public.rt_a VALUES (2, 'a');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'J realtime ACL: a write to the table whose owner may', :'LAST_ERROR_MESSAGE');

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzlog.clean('j_rt', 'J realtime ACL: send never ran as a superuser or the extension owner');
SELECT kzt.is((SELECT count(*) FROM kzlog.seen WHERE scope = 'j_rt' AND label = 'realtime.send kizunasync:rt_a' AND cu = 'kz_r_j_rt_owner'),
	2::bigint, 'J realtime ACL: send ran for both writes of rt_a, as its owner');
SELECT kzt.is((SELECT count(*) FROM kzlog.seen WHERE scope = 'j_rt' AND label LIKE '%rt_b'), 0::bigint,
	'J realtime ACL: send never ran for rt_b, whose owner may not EXECUTE it');
SELECT kzt.is((SELECT string_agg(table_name || ':' || pk, ' ' ORDER BY table_name, pk) FROM kizunasync.changelog),
	'rt_a:1 rt_a:2 rt_b:1', 'J realtime ACL: every write was recorded');
SELECT kzt.ok(NOT has_function_privilege('kz_r_j_rt_owner2', 'realtime.send(jsonb, text, text, boolean)', 'EXECUTE'),
	'J realtime ACL: control: kz_r_j_rt_owner2 may not EXECUTE realtime.send');
