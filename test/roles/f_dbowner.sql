-- F. A non-superuser database owner runs the extension; nobody else can.
-- db: kz_roles_owned
-- owner: kz_dbowner
-- plan: 54
--
-- Supabase's "postgres" is not a superuser but owns the database.  The
-- runner made kz_dbowner (LOGIN NOSUPERUSER) the owner of kz_roles_owned and
-- installed the stand-ins and the extension there as postgres.  Per
-- decisions/0060 (pg_database_owner): in its own session kz_dbowner can
-- provision (sync_table, unsync_table, repair_table, resync_bucket) the tables it owns,
-- read kizunasync.status and kizunasync.in_flight, configure the settings and run the retention
-- functions and schedule_jobs; it cannot provision another role's table
-- (42501) nor touch a bookkeeping table directly (42501).  An ordinary role
-- that is not the database owner can do none of it (42501), a member of
-- authenticated included.
-- Target API (being implemented): kizunasync.configure(max_pull_scan,
-- max_pull_limit, max_batch_size, require_atomic, tombstone_ttl_days,
-- client_ttl_days, hlc_max_skew_ms, reap_schedule, compact_schedule,
-- client_prune_schedule; all DEFAULT NULL = unchanged) RETURNS jsonb (the
-- effective settings keyed by name); kizunasync.repair_table(regclass)
-- RETURNS bigint.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE ROLE kz_r_f_other NOLOGIN;
CREATE ROLE kz_r_f_plain LOGIN NOSUPERUSER;
CREATE ROLE kz_r_f_auth LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_f_auth;
-- each of them owns a table of its own
CREATE TABLE public.t_kz_r_f_plain (id bigint PRIMARY KEY, v text);
CREATE TABLE public.t_kz_r_f_auth (id bigint PRIMARY KEY, v text);
ALTER TABLE public.t_kz_r_f_plain OWNER TO kz_r_f_plain;
ALTER TABLE public.t_kz_r_f_auth OWNER TO kz_r_f_auth;
-- tables of another role: one unsynced, one synced
CREATE TABLE public.t_other (id bigint PRIMARY KEY, v text);
CREATE TABLE public.t_other_synced (id bigint PRIMARY KEY, v text);
ALTER TABLE public.t_other OWNER TO kz_r_f_other;
ALTER TABLE public.t_other_synced OWNER TO kz_r_f_other;
SELECT kizunasync.sync_table('public.t_other_synced') AS n \gset
RESET client_min_messages;

\connect - kz_dbowner
CREATE TABLE public.t (id bigint PRIMARY KEY, owner_id uuid, v text);
INSERT INTO public.t VALUES (1, '00000000-0000-4000-8000-0000000000f1', 'one'), (2, NULL, 'two');
\set ON_ERROR_STOP 0
\set n ''
SELECT kizunasync.sync_table('public.t', bucket_column => 'owner_id') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: sync_table of its own table', :'LAST_ERROR_MESSAGE');
SELECT kzt.is(nullif(:'n', ''), '2', 'F dbowner: sync_table recorded the 2 existing rows');
\set n ''
SELECT count(*) AS n FROM kizunasync.status WHERE table_name = 't' \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: SELECT * FROM kizunasync.status', :'LAST_ERROR_MESSAGE');
SELECT kzt.is(nullif(:'n', ''), '1', 'F dbowner: the status view shows its table');
\set n ''
SELECT count(*) AS n FROM kizunasync.in_flight \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: SELECT * FROM kizunasync.in_flight', :'LAST_ERROR_MESSAGE');
SELECT kzt.is(nullif(:'n', ''), '0', 'F dbowner: nothing is in flight');
\set cfg ''
SELECT kizunasync.configure(max_pull_limit => 1000) AS cfg \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: configure(max_pull_limit => 1000)', :'LAST_ERROR_MESSAGE');
SELECT kzt.is((nullif(:'cfg', '')::jsonb ->> 'max_pull_limit'), '1000', 'F dbowner: configure returns the effective max_pull_limit, 1000');
SELECT kzt.ok(coalesce(nullif(:'cfg', '')::jsonb ?& '{client_prune_schedule,client_ttl_days,compact_schedule,hlc_max_skew_ms,max_batch_size,max_pull_limit,max_pull_scan,reap_schedule,require_atomic,tombstone_ttl_days}'::text[], false),
	'F dbowner: configure returns every setting, keyed by name', 'got ' || coalesce(nullif(:'cfg', ''), 'nothing'));
\set cfg ''
SELECT kizunasync.configure() AS cfg \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: configure() with no arguments', :'LAST_ERROR_MESSAGE');
SELECT kzt.is((nullif(:'cfg', '')::jsonb ->> 'max_pull_limit') || ' ' || (nullif(:'cfg', '')::jsonb ->> 'max_batch_size'), '1000 500',
	'F dbowner: configure() changes nothing (NULL = unchanged): max_pull_limit 1000, max_batch_size still the default 500');
SELECT kizunasync.reap_tombstones() IS NOT NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: reap_tombstones()', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.compact_changelog() IS NOT NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: compact_changelog()', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.prune_clients() IS NOT NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: prune_clients()', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.schedule_jobs() IS NOT NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: schedule_jobs()', :'LAST_ERROR_MESSAGE');
\set n ''
SELECT kizunasync.repair_table('public.t') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: repair_table of its own table', :'LAST_ERROR_MESSAGE');
SELECT kzt.ok(nullif(:'n', '') IS NOT NULL, 'F dbowner: repair_table returns a count', 'got ' || coalesce(nullif(:'n', ''), 'nothing'));
\set n ''
SELECT kizunasync.resync_bucket('public.t', '{"owner_id": "00000000-0000-4000-8000-0000000000f1"}') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: resync_bucket of its own table', :'LAST_ERROR_MESSAGE');
SELECT kzt.is(nullif(:'n', ''), '1', 'F dbowner: resync_bucket writes the bucket''s 1 entry again');
-- what it cannot do
SELECT kizunasync.sync_table('public.t_other') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '42501', 'F dbowner: sync_table of another role''s table is refused (42501)', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.unsync_table('public.t_other_synced') IS NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '42501', 'F dbowner: unsync_table of another role''s synced table is refused (42501)', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.repair_table('public.t_other_synced') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '42501', 'F dbowner: repair_table of another role''s synced table is refused (42501)', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.resync_bucket('public.t_other_synced', '{}') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '42501', 'F dbowner: resync_bucket of another role''s synced table is refused (42501)', :'LAST_ERROR_MESSAGE');
-- every bookkeeping relation, directly
SELECT kzt.ok(bool_and(st = '42501'), format('F dbowner: %s of every bookkeeping table directly is refused (42501)', op),
		string_agg(format('%s: %s', rel, st), ', ') FILTER (WHERE st <> '42501'))
  FROM (SELECT op, c.relname AS rel,
			   kzt.try(format(CASE op WHEN 'SELECT' THEN 'SELECT 1 FROM kizunasync.%1$I LIMIT 1'
									  WHEN 'UPDATE' THEN 'UPDATE kizunasync.%1$I SET %2$I = %2$I'
									  ELSE 'DELETE FROM kizunasync.%1$I' END,
					c.relname, (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0
							AND NOT a.attisdropped AND a.attidentity = '' AND a.attgenerated = '' ORDER BY a.attnum LIMIT 1))) AS st
		  FROM pg_class c, unnest('{SELECT,UPDATE,DELETE}'::text[]) op
		 WHERE c.relnamespace = 'kizunasync'::regnamespace AND c.relkind = 'r') x
 GROUP BY op ORDER BY op;
SELECT kzt.is(kzt.try('SELECT nextval(''kizunasync.change_seq'')'), '42501', 'F dbowner: nextval of the change sequence is refused (42501)');
-- and last: unsync its own table
SELECT kizunasync.unsync_table('public.t') IS NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'F dbowner: unsync_table of its own table', :'LAST_ERROR_MESSAGE');

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is((SELECT max_pull_limit FROM kizunasync.settings), 1000, 'F: the setting kz_dbowner configured is in kizunasync.settings');
SELECT kzt.is((SELECT string_agg(table_name, ',' ORDER BY table_name) FROM kizunasync.synced_tables), 't_other_synced',
	'F: kz_dbowner''s table is unsynced, the other role''s is still synced');
-- ordinary roles that are not the database owner: every call refused, also
-- on a table they own
\connect - kz_r_f_plain
CREATE TEMP TABLE calls (c text);
INSERT INTO calls VALUES
	(format('SELECT kizunasync.sync_table(%L)', 'public.t_' || current_user)),
	('SELECT kizunasync.unsync_table(''public.t_other_synced'')'),
	('SELECT kizunasync.repair_table(''public.t_other_synced'')'),
	('SELECT kizunasync.resync_bucket(''public.t_other_synced'', ''{}'')'),
	('SELECT kizunasync.configure(max_pull_limit => 1)'),
	('SELECT * FROM kizunasync.status'),
	('SELECT * FROM kizunasync.in_flight'),
	('SELECT * FROM kizunasync._in_flight()'),
	('SELECT kizunasync.reap_tombstones()'),
	('SELECT kizunasync.compact_changelog()'),
	('SELECT kizunasync.prune_clients()'),
	('SELECT kizunasync.schedule_jobs()');
SELECT kzt.is(kzt.try(c), '42501', 'F plain role: ' || c || ' is refused (42501)') FROM calls ORDER BY c;
\connect - kz_r_f_auth
CREATE TEMP TABLE calls (c text);
INSERT INTO calls VALUES
	(format('SELECT kizunasync.sync_table(%L)', 'public.t_' || current_user)),
	('SELECT kizunasync.unsync_table(''public.t_other_synced'')'),
	('SELECT kizunasync.repair_table(''public.t_other_synced'')'),
	('SELECT kizunasync.resync_bucket(''public.t_other_synced'', ''{}'')'),
	('SELECT kizunasync.configure(max_pull_limit => 1)'),
	('SELECT * FROM kizunasync.status'),
	('SELECT * FROM kizunasync.in_flight'),
	('SELECT * FROM kizunasync._in_flight()'),
	('SELECT kizunasync.reap_tombstones()'),
	('SELECT kizunasync.compact_changelog()'),
	('SELECT kizunasync.prune_clients()'),
	('SELECT kizunasync.schedule_jobs()');
SELECT kzt.is(kzt.try(c), '42501', 'F member of authenticated: ' || c || ' is refused (42501)') FROM calls ORDER BY c;
