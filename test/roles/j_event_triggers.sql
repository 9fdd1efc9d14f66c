-- J. sync_table and unsync_table never run event triggers as the extension owner.
-- db: kz_roles_j_evt
-- owner: kz_r_j_evt_dbo
-- plan: 10
--
-- A superuser audits DDL with an ordinary event trigger whose function
-- (SECURITY INVOKER, like most) writes to "ddl_audit", found through the
-- session's search_path.  sync_table and unsync_table attach and remove the
-- capture triggers; if they did so with SQL DDL as the extension owner,
-- the audit function would run as the extension owner with the privileged
-- search_path "pg_catalog, pg_temp": "ddl_audit" would then resolve to the
-- caller's temporary table, whose trigger (the caller's code) would run as
-- the extension owner; without such a table the audit fails and so does
-- the provisioning.  decisions/0061: the triggers are created and dropped
-- through the catalog (CreateTrigger, performDeletion), which runs no
-- event trigger and resolves no name.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT kzlog.scope(s) FROM unnest('{j_evt,j_evt_setup,j_evt_control}'::text[]) s \g /dev/null
CREATE TABLE public.ddl_audit (tag text, who name DEFAULT current_user);
GRANT INSERT, SELECT ON public.ddl_audit TO PUBLIC;
CREATE FUNCTION public.j_audit() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ddl_audit (tag) VALUES (tg_tag);
END $$;
CREATE EVENT TRIGGER j_audit ON ddl_command_end EXECUTE FUNCTION public.j_audit();
RESET client_min_messages;

\connect - kz_r_j_evt_dbo
\set ON_ERROR_STOP 1
CREATE TABLE public.j_plain (id bigint PRIMARY KEY, v text);
CREATE TABLE public.j_shadowed (id bigint PRIMARY KEY, v text);
ALTER TABLE public.j_plain ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.j_shadowed ENABLE ROW LEVEL SECURITY;
CREATE FUNCTION public.j_evil() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kzlog.observe(coalesce(nullif(current_setting('kzt.phase', true), ''), 'j_evt'), 'caller''s trigger on pg_temp.ddl_audit');
	BEGIN
		EXECUTE 'ALTER ROLE kz_r_j_evt_dbo SUPERUSER';
	EXCEPTION WHEN OTHERS THEN
		NULL;
	END;
	RETURN NEW;
END $$;
\set ON_ERROR_STOP 0
-- without a shadow: the audit must not break provisioning
SELECT kizunasync.sync_table('public.j_plain') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'J event triggers: sync_table under a superuser''s DDL audit trigger', :'LAST_ERROR_MESSAGE');
INSERT INTO public.j_plain VALUES (1, 'a');
SELECT kizunasync.unsync_table('public.j_plain') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'J event triggers: unsync_table under the audit trigger', :'LAST_ERROR_MESSAGE');
-- with a shadow: the caller's temporary ddl_audit and its trigger
-- (the caller's own DDL here is audited into it as the caller: a separate scope)
SET kzt.phase = 'j_evt_setup';
CREATE TEMP TABLE ddl_audit (tag text, who name);
CREATE TRIGGER j_evil BEFORE INSERT ON pg_temp.ddl_audit FOR EACH ROW EXECUTE FUNCTION public.j_evil();
RESET kzt.phase;
SELECT kizunasync.sync_table('public.j_shadowed') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'J event triggers: sync_table with a temporary ddl_audit planted', :'LAST_ERROR_MESSAGE');
INSERT INTO public.j_shadowed VALUES (1, 'a');
SELECT kzt.expect(:'SQLSTATE', '00000', 'J event triggers: a write to the synced table', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.unsync_table('public.j_shadowed') AS n \gset
SELECT kizunasync.sync_table('public.j_shadowed') AS n \gset
-- control: in the caller's own DDL with the privileged search_path the trap is live (as the caller)
SET kzt.phase = 'j_evt_control';
SET search_path = pg_catalog, pg_temp;
CREATE TABLE public.j_control (id bigint);
RESET search_path;

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzlog.clean('j_evt', 'J event triggers: the caller''s trigger never ran as a superuser or the extension owner');
SELECT kzt.is(kzlog.seen_as('j_evt'), 'nothing ran',
	'J event triggers: no event trigger wrote to the caller''s temporary table during sync_table or unsync_table');
SELECT kzt.ok(NOT rolsuper, 'J event triggers: the database owner is not a superuser afterwards')
  FROM pg_roles WHERE rolname = 'kz_r_j_evt_dbo';
SELECT kzt.ok(EXISTS (SELECT 1 FROM kzlog.seen WHERE scope = 'j_evt_control' AND cu = 'kz_r_j_evt_dbo'),
	'J event triggers: control: the audit trigger reaches a temporary ddl_audit under that search_path, as the caller',
	kzlog.seen_as('j_evt_control'));
SELECT kzt.is((SELECT string_agg(t.tgname || ':' || t.tgenabled::text, ' ' ORDER BY t.tgname)
				 FROM pg_trigger t WHERE t.tgrelid = 'public.j_shadowed'::regclass),
	'kizunasync_capture:A kizunasync_no_truncate:O',
	'J event triggers: the capture trigger (enabled ALWAYS) and the TRUNCATE guard are attached');
SELECT kzt.is((SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'j_shadowed'), 1::bigint,
	'J event triggers: the write and the re-provisioning seed are recorded');
