-- The monitoring views (issue 31, sql/src/56_monitoring.sql): what each
-- says, the estimates exact once ANALYZE has seen every row, the record of
-- retention runs, and that no view needs to scan a bookkeeping table (every
-- read has an index or statistics path).  Earlier tests leave bookkeeping
-- behind in this database: figures are compared with it, or as differences.
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE SCHEMA mon;
CREATE TABLE mon.a (id integer PRIMARY KEY, v text);
CREATE TABLE mon.b (id integer PRIMARY KEY, v text);
SELECT changes AS changes0 FROM kizunasync.metrics \gset
SELECT kizunasync.sync_table('mon.a', table_name => 'mon_a') AS seeded,
       kizunasync.sync_table('mon.b', table_name => 'mon_b', tombstone_ttl_days => 3) AS seeded;
RESET client_min_messages;
SELECT * FROM kizunasync.in_flight_metrics ORDER BY state;
INSERT INTO mon.a SELECT g, 'a' FROM generate_series(1, 30) g;
INSERT INTO mon.b SELECT g, 'b' FROM generate_series(1, 10) g;
DELETE FROM mon.a WHERE id <= 5;
SELECT pg_stat_force_next_flush();
ANALYZE kizunasync.entries;
SELECT table_name, entries, tombstones, tombstone_ttl_days FROM kizunasync.table_metrics
 WHERE table_name LIKE 'mon\_%' ORDER BY 1;
SELECT m.changes - :changes0 AS changes_numbered,
       m.last_seq = (SELECT last_value FROM kizunasync.change_seq) AS last_seq_is_drawn,
       m.oldest_tombstone_at IS NOT DISTINCT FROM
         (SELECT deleted_at FROM kizunasync.tombstones ORDER BY seq LIMIT 1) AS oldest_tombstone_at,
       m.oldest_tombstone_table IS NOT DISTINCT FROM
         (SELECT table_name COLLATE "default" FROM kizunasync.tombstones ORDER BY seq LIMIT 1) AS oldest_tombstone_table,
       m.clients = (SELECT count(*) FROM kizunasync.clients) AS clients,
       m.pull_wait_ms
  FROM kizunasync.metrics m;
SELECT b.relation, b.live_tuples = (SELECT count(*) FROM kizunasync.entries) AS live
  FROM kizunasync.bookkeeping_metrics b WHERE b.relation = 'entries';
SELECT count(*) AS bookkeeping_tables FROM kizunasync.bookkeeping_metrics;
-- every retention call is recorded: when, how long, rows deleted from the
-- bookkeeping, the function's result; the newest ten per job are kept
UPDATE kizunasync.tombstones SET deleted_at = now() - interval '40 days';
SELECT count(*) AS due FROM kizunasync.tombstones \gset
SELECT kizunasync.reap_tombstones() AS reaped \gset
SELECT :reaped = reap_horizon AS raised_the_horizon FROM kizunasync.metrics;
SELECT job, last_started_at IS NOT NULL AS ran, last_duration_ms >= 0 AS timed,
       last_rows_removed >= :due AS removed_the_due, last_result = (SELECT reap_horizon FROM kizunasync.metrics) AS result
  FROM kizunasync.retention_metrics WHERE job = 'reap_tombstones';
SELECT count(kizunasync.compact_changelog()) FROM generate_series(1, 12);
SELECT job, count(*) FROM kizunasync.retention_runs WHERE job = 'compact_changelog' GROUP BY 1;
SELECT job, last_rows_removed, last_result FROM kizunasync.retention_metrics WHERE job = 'compact_changelog';
-- a call that fails records nothing
SELECT count(*) AS prune_runs FROM kizunasync.retention_runs WHERE job = 'prune_clients' \gset
SELECT kizunasync.prune_clients(0);
SELECT count(*) - :prune_runs AS prune_runs_added FROM kizunasync.retention_runs WHERE job = 'prune_clients';
-- the effective settings, as configure() gives them
SELECT kizunasync._settings() = kizunasync.configure() AS same_settings;
-- no view needs a sequential scan of a bookkeeping table, which on a
-- 20 million entries would be a full scan (synced_tables, one row
-- per synced table, is what the per-table view lists)
SET enable_seqscan = off;
CREATE FUNCTION mon.seqscans(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	l text;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN ' || q LOOP
		IF l ~ 'Seq Scan on (entries|buckets|clients|verdicts|retention_runs|reap_state|settings)\M' THEN
			RETURN NEXT q || ': ' || btrim(l);
		END IF;
	END LOOP;
END $$;
SELECT mon.seqscans(v) FROM unnest(ARRAY['SELECT * FROM kizunasync.metrics', 'SELECT * FROM kizunasync.table_metrics',
	'SELECT * FROM kizunasync.in_flight_metrics', 'SELECT * FROM kizunasync.bookkeeping_metrics',
	'SELECT * FROM kizunasync.retention_metrics']) v;
RESET enable_seqscan;
SET client_min_messages = warning;
SELECT kizunasync.unsync_table('mon.a'), kizunasync.unsync_table('mon.b');
DROP SCHEMA mon CASCADE;
