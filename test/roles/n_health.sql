-- N. kizunasync.health() for a non-superuser database owner (issue 31 part 3).
-- db: kz_roles_health
-- owner: kz_r_n_owner
-- plan: 42
--
-- kz_r_n_owner (LOGIN NOSUPERUSER) owns kz_roles_health and its tables.  In
-- its own sessions health() returns one row per check, and every warning
-- (and error) is provoked once and then fixed the way its "fix" says: the
-- retention jobs never run, a tombstone past its TTL, a transaction
-- holding seqs in flight past pull_wait_ms, a prepared transaction holding
-- seqs, dead bookkeeping rows, synced tables without row level security
-- (error when authenticated may SELECT them, warning when not), no wake-up
-- hints, SQL objects older than the files and an SQL-language function in
-- the extension's schema, a write-time budget of 1.  What only a superuser
-- can do (time passing for a tombstone, settings that are superuser GUCs,
-- a catalog made to look older) is done as postgres between the owner's
-- sessions.  An ordinary role and a member of authenticated may not call
-- it (42501).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE ROLE kz_r_n_plain LOGIN NOSUPERUSER;
CREATE ROLE kz_r_n_auth LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_n_auth;
-- dead rows stay where the bloat check counts them
ALTER TABLE kizunasync.entries SET (autovacuum_enabled = off);
RESET client_min_messages;

\connect - kz_r_n_owner
CREATE TABLE public.open_t (id integer PRIMARY KEY, v text);
GRANT SELECT ON public.open_t TO authenticated;
CREATE TABLE public.shut_t (id integer PRIMARY KEY, v text);
CREATE TABLE public.rls_t (id integer PRIMARY KEY, v text);
ALTER TABLE public.rls_t ENABLE ROW LEVEL SECURITY;
SET client_min_messages = error;
SELECT kizunasync.sync_table('public.open_t') IS NOT NULL AS synced \gset
SELECT kizunasync.sync_table('public.shut_t') IS NOT NULL AS synced \gset
SELECT kizunasync.sync_table('public.rls_t') IS NOT NULL AS synced \gset
RESET client_min_messages;
\set ON_ERROR_STOP 0

-- the checks, in order
SELECT string_agg(name, ',' ORDER BY ord) AS names FROM kizunasync.health() WITH ORDINALITY h (name, status, detail, fix, ord) \gset
SELECT kzt.is(:'names', 'retention_jobs,reap_horizon,seqs_in_flight,prepared_transactions,bookkeeping_bloat,row_level_security,wakeup_hints,extension_version,write_time_budget',
	'N owner: health() returns its nine checks in order');
SELECT kzt.ok(bool_and(status IN ('ok', 'warning', 'error') AND detail <> '' AND (status = 'ok') = (fix IS NULL)),
	'N owner: every row has a status, a sentence, and a fix unless ok') FROM kizunasync.health();

-- retention_jobs: never run here, no pg_cron in this database
SELECT status AS st, detail AS dt FROM kizunasync.health() WHERE name = 'retention_jobs' \gset
SELECT kzt.is(:'st', 'warning', 'N owner: retention_jobs warns when pg_cron is absent and the reap never ran');
SELECT kzt.ok(:'dt' LIKE '%never run%', 'N owner: ... and says the reap never ran', :'dt');
SELECT kizunasync.reap_tombstones() IS NOT NULL AND kizunasync.compact_changelog() IS NOT NULL
	AND kizunasync.prune_clients() IS NOT NULL AS ran \gset
SELECT status AS st FROM kizunasync.health() WHERE name = 'retention_jobs' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: retention_jobs is ok once the jobs ran');

-- row_level_security: an error for open_t (authenticated may SELECT it)
SELECT status AS st, detail AS dt FROM kizunasync.health() WHERE name = 'row_level_security' \gset
SELECT kzt.is(:'st', 'error', 'N owner: row_level_security is an error for a synced table without RLS that authenticated may read');
SELECT kzt.ok(:'dt' LIKE '%open_t%' AND :'dt' NOT LIKE '%shut_t%' AND :'dt' NOT LIKE '%rls_t%',
	'N owner: ... naming that table only', :'dt');
ALTER TABLE public.open_t ENABLE ROW LEVEL SECURITY;
SELECT status AS st, detail AS dt FROM kizunasync.health() WHERE name = 'row_level_security' \gset
SELECT kzt.is(:'st', 'warning', 'N owner: a warning for a synced table without RLS that authenticated may not read');
SELECT kzt.ok(:'dt' LIKE '%shut_t%', 'N owner: ... naming it', :'dt');
ALTER TABLE public.shut_t ENABLE ROW LEVEL SECURITY;
SELECT status AS st FROM kizunasync.health() WHERE name = 'row_level_security' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: row_level_security is ok once every synced table has RLS');

-- reap_horizon: a tombstone, then (as postgres) 40 days pass
INSERT INTO public.rls_t VALUES (1, 'a'), (2, 'b');
DELETE FROM public.rls_t WHERE id = 1;
SELECT status AS st FROM kizunasync.health() WHERE name = 'reap_horizon' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: reap_horizon is ok with a fresh tombstone');
\connect - postgres
UPDATE kizunasync.entries SET deleted_at = now() - interval '40 days' WHERE kind = 'd';
\connect - kz_r_n_owner
\set ON_ERROR_STOP 0
SELECT status AS st, detail AS dt FROM kizunasync.health() WHERE name = 'reap_horizon' \gset
SELECT kzt.is(:'st', 'warning', 'N owner: reap_horizon warns about a tombstone 40 days old with a TTL of 30');
SELECT kzt.ok(:'dt' LIKE '%rls_t%' AND :'dt' LIKE '%TTL of 30 days%', 'N owner: ... naming its table and TTL', :'dt');
SELECT kizunasync.reap_tombstones() > 0 AS reaped \gset
SELECT status AS st FROM kizunasync.health() WHERE name = 'reap_horizon' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: reap_horizon is ok after reap_tombstones()');

-- seqs_in_flight: this very transaction holds a seq past pull_wait_ms
SELECT kizunasync.configure(pull_wait_ms => 100) IS NOT NULL AS configured \gset
BEGIN;
INSERT INTO public.rls_t VALUES (3, 'c');
SELECT pg_sleep(0.3);
SELECT status AS st, detail AS dt, pg_backend_pid() AS me FROM kizunasync.health() WHERE name = 'seqs_in_flight' \gset
COMMIT;
SELECT kzt.is(:'st', 'warning', 'N owner: seqs_in_flight warns about a transaction holding a seq longer than pull_wait_ms');
SELECT kzt.ok(:'dt' LIKE '%backend ' || :'me' || ' (1 seqs%', 'N owner: ... naming its backend and seqs', :'dt');
SELECT status AS st FROM kizunasync.health() WHERE name = 'seqs_in_flight' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: seqs_in_flight is ok once it committed');

-- prepared_transactions
BEGIN;
INSERT INTO public.rls_t VALUES (4, 'd');
PREPARE TRANSACTION 'kz_r_n ''gid''';
SELECT status AS st, detail AS dt FROM kizunasync.health() WHERE name = 'prepared_transactions' \gset
SELECT kzt.is(:'st', 'warning', 'N owner: prepared_transactions warns about a prepared transaction holding a seq');
SELECT kzt.ok(:'dt' LIKE '%''kz_r_n ''''gid'''''' (1 seqs%', 'N owner: ... naming its gid, quoted', :'dt');
ROLLBACK PREPARED 'kz_r_n ''gid''';
SELECT status AS st FROM kizunasync.health() WHERE name = 'prepared_transactions' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: prepared_transactions is ok once it is resolved');

-- bookkeeping_bloat: 1,500 entries superseded twice each
INSERT INTO public.rls_t SELECT g, 'x' FROM generate_series(100, 1599) g;
UPDATE public.rls_t SET v = 'y' WHERE id >= 100;
UPDATE public.rls_t SET v = 'z' WHERE id >= 100;
SELECT status AS st FROM kizunasync.health() WHERE name = 'bookkeeping_bloat' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: bookkeeping_bloat is ok while this session''s statistics are not reported');
\connect - kz_r_n_owner
\set ON_ERROR_STOP 0
SELECT status AS st, detail AS dt FROM kizunasync.health() WHERE name = 'bookkeeping_bloat' \gset
SELECT kzt.is(:'st', 'warning', 'N owner: bookkeeping_bloat warns about 3,000 dead entries beside 1,500 live');
SELECT kzt.ok(:'dt' ~ 'kizunasync\.entries \(30[0-9][0-9] dead rows', 'N owner: ... naming the table and its dead rows', :'dt');
VACUUM kizunasync.entries;
SELECT kzt.expect(:'SQLSTATE', '00000', 'N owner: the database owner may VACUUM kizunasync.entries, the fix', :'LAST_ERROR_MESSAGE');
SELECT status AS st FROM kizunasync.health() WHERE name = 'bookkeeping_bloat' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: bookkeeping_bloat is ok after VACUUM');

-- wakeup_hints: no Realtime here, NOTIFY off by default
SELECT status AS st FROM kizunasync.health() WHERE name = 'wakeup_hints' \gset
SELECT kzt.is(:'st', 'warning', 'N owner: wakeup_hints warns without Realtime and notify_fallback');
\connect - postgres
ALTER DATABASE kz_roles_health SET kizunasync.notify_fallback = on;
\connect - kz_r_n_owner
\set ON_ERROR_STOP 0
SELECT status AS st, detail AS dt FROM kizunasync.health() WHERE name = 'wakeup_hints' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: wakeup_hints is ok with notify_fallback on');
SELECT kzt.ok(:'dt' LIKE '%NOTIFY%', 'N owner: ... saying the hints go out as NOTIFY', :'dt');

-- extension_version: ok as installed; a catalog made to look older; a planted SQL function
SELECT status AS st FROM kizunasync.health() WHERE name = 'extension_version' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: extension_version is ok as installed');
\connect - postgres
UPDATE pg_extension SET extversion = '0.1.9' WHERE extname = 'kizunasync';
\connect - kz_r_n_owner
\set ON_ERROR_STOP 0
SELECT status AS st, detail AS dt FROM kizunasync.health() WHERE name = 'extension_version' \gset
SELECT kzt.is(:'st', 'warning', 'N owner: extension_version warns when the SQL objects are older than the files');
SELECT kzt.ok(:'dt' LIKE '%version 0.1.9; the installed files are version%', 'N owner: ... naming both versions', :'dt');
\connect - postgres
UPDATE pg_extension e SET extversion = a.default_version FROM pg_available_extensions a
 WHERE a.name = 'kizunasync' AND e.extname = 'kizunasync';
CREATE FUNCTION kizunasync.kz_r_n_planted() RETURNS integer LANGUAGE sql AS 'SELECT 1';
\connect - kz_r_n_owner
\set ON_ERROR_STOP 0
SELECT status AS st, detail AS dt FROM kizunasync.health() WHERE name = 'extension_version' \gset
SELECT kzt.is(:'st', 'error', 'N owner: extension_version is an error for an SQL-language function in schema kizunasync');
SELECT kzt.ok(:'dt' LIKE '%kizunasync.kz_r_n_planted()%', 'N owner: ... naming it', :'dt');
\connect - postgres
DROP FUNCTION kizunasync.kz_r_n_planted();

-- write_time_budget: a superuser setting of 1
\connect - kz_r_n_owner
\set ON_ERROR_STOP 0
SELECT status AS st FROM kizunasync.health() WHERE name = 'write_time_budget' \gset
SELECT kzt.is(:'st', 'ok', 'N owner: write_time_budget is ok with the default share of this cluster');
\connect - postgres
ALTER ROLE kz_r_n_owner IN DATABASE kz_roles_health SET kizunasync.write_time_changes = 1;
\connect - kz_r_n_owner
\set ON_ERROR_STOP 0
SELECT status AS st, detail AS dt FROM kizunasync.health() WHERE name = 'write_time_budget' \gset
SELECT kzt.is(:'st', 'warning', 'N owner: write_time_budget warns when a transaction may number only 1 change while it runs');
SELECT kzt.ok(:'dt' LIKE '%at most 1 change while it runs (max_connections%', 'N owner: ... with the figures behind it', :'dt');
\connect - postgres
ALTER ROLE kz_r_n_owner IN DATABASE kz_roles_health RESET kizunasync.write_time_changes;

-- everything fixed: no warning left
\connect - kz_r_n_owner
\set ON_ERROR_STOP 0
SELECT coalesce(string_agg(name || ' ' || status, ', ') FILTER (WHERE status <> 'ok'), 'none') AS bad FROM kizunasync.health() \gset
SELECT kzt.is(:'bad', 'none', 'N owner: after every fix, every check is ok');
SELECT count(*) AS n FROM kizunasync.metrics, kizunasync.table_metrics, kizunasync.in_flight_metrics,
	kizunasync.bookkeeping_metrics, kizunasync.retention_metrics \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'N owner: the database owner reads the monitoring views', :'LAST_ERROR_MESSAGE');

-- refused to anybody else
\connect - kz_r_n_plain
\set ON_ERROR_STOP 0
SELECT count(*) FROM kizunasync.health();
SELECT kzt.expect(:'SQLSTATE', '42501', 'N plain: health() is refused (42501)', :'LAST_ERROR_MESSAGE');
SELECT count(*) FROM kizunasync.metrics;
SELECT kzt.expect(:'SQLSTATE', '42501', 'N plain: the monitoring views are refused (42501)', :'LAST_ERROR_MESSAGE');
\connect - kz_r_n_auth
\set ON_ERROR_STOP 0
SELECT count(*) FROM kizunasync.health();
SELECT kzt.expect(:'SQLSTATE', '42501', 'N authenticated: health() is refused (42501)', :'LAST_ERROR_MESSAGE');
SELECT count(*) FROM kizunasync.bookkeeping_metrics;
SELECT kzt.expect(:'SQLSTATE', '42501', 'N authenticated: the monitoring views are refused (42501)', :'LAST_ERROR_MESSAGE');
