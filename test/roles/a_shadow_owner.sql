-- A (continued). The same shadowing attack by a non-superuser database
-- owner, through the provisioning and operator functions 0060 gives it.
-- db: kz_roles_a_owned
-- owner: kz_r_a_dbo
-- plan: 15
--
-- kz_r_a_dbo owns the database and its table public.o_t.  In a first
-- session it creates the table (before any shadow exists); in a second one
-- it plants every shadow (gen_names.py) and calls sync_table, the status
-- view, configure, repair_table, resync_bucket, the retention functions, schedule_jobs,
-- health(), the monitoring views and unsync_table: each must work (decisions/0060, "Who may do what"), and
-- none may run its code as a superuser or the extension owner.  One session
-- for all calls: there is one database owner.
\set ON_ERROR_STOP 1
\set role kz_r_a_dbo
\set tag dbo
SELECT 'kzatk_' || :'role' AS sch \gset
CREATE SCHEMA :"sch" AUTHORIZATION :"role";

\connect - kz_r_a_dbo
CREATE TABLE public.o_t (id bigint PRIMARY KEY, owner_id uuid, v text);
INSERT INTO public.o_t VALUES (1, '00000000-0000-4000-8000-0000000000a1', 'one'), (2, NULL, 'two');

\ir inc/atk_session.sql
SET kzt.action = 'dbo sync_table';
SELECT kizunasync.sync_table('public.o_t', bucket_column => 'owner_id') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: sync_table of its own table succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo status';
SELECT count(*) AS n FROM kizunasync.status \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: SELECT from kizunasync.status succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo configure';
SELECT kizunasync.configure(max_pull_limit => 900) IS NOT NULL AS configured \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: configure(max_pull_limit => 900) succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo repair_table';
SELECT kizunasync.repair_table('public.o_t') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: repair_table of its own table succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo resync_bucket';
SELECT kizunasync.resync_bucket('public.o_t', '{"owner_id": "00000000-0000-4000-8000-0000000000a1"}') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: resync_bucket of its own table succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo reap_tombstones';
SELECT kizunasync.reap_tombstones() IS NOT NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: reap_tombstones() succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo compact_changelog';
SELECT kizunasync.compact_changelog() IS NOT NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: compact_changelog() succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo prune_clients';
SELECT kizunasync.prune_clients() IS NOT NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: prune_clients() succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo schedule_jobs';
SELECT kizunasync.schedule_jobs() IS NOT NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: schedule_jobs() succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo health';
SELECT count(*) AS n FROM kizunasync.health() \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: health() succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo monitoring views';
SELECT count(*) AS n FROM kizunasync.metrics, kizunasync.table_metrics, kizunasync.in_flight_metrics,
	kizunasync.bookkeeping_metrics, kizunasync.retention_metrics \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: SELECT from the monitoring views succeeds', :'LAST_ERROR_MESSAGE');
SET kzt.action = 'dbo unsync_table';
SELECT kizunasync.unsync_table('public.o_t') IS NULL AS done \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'A dbo: unsync_table of its own table succeeds', :'LAST_ERROR_MESSAGE');
\ir inc/atk_verdict.sql
