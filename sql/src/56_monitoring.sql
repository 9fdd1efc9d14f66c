-- ---------------------------------------------------------------------------
-- Monitoring (issue 31; README "Monitoring"; monitoring/queries.yaml maps
-- these views to Prometheus metrics for postgres_exporter).
--
-- Cheap enough to read every 15 s beside 20 million entries:
-- no view scans a bookkeeping table.  Counts that an exact answer would have
-- to scan for are estimates: PostgreSQL's live-row count of the table
-- (pg_stat, kept current by every commit) times the share ANALYZE's
-- most-common-value statistics give the value (what the planner estimates
-- for "column = value"); before the first ANALYZE of a table they are NULL.
-- Every other figure is a probe of an index's first entry, a catalog or
-- statistics read, or kizunasync.in_flight (see its cost in the README).
--
-- With status, these views are the only operator-facing SQL that names the
-- bookkeeping's columns: a change of the bookkeeping's layout rewrites their
-- bodies, never their columns (CREATE OR REPLACE, decisions/0080).  Readable
-- by pg_monitor, service_role and the database owner (99_grants.sql,
-- decisions/0060): no row data, keys, bucket values or user ids.
-- ---------------------------------------------------------------------------

-- The effective settings, as configure() returns them, changing nothing.
CREATE OR REPLACE FUNCTION kizunasync._settings()
RETURNS jsonb
AS 'MODULE_PATHNAME', 'kz_settings_effective'
LANGUAGE C STABLE;
COMMENT ON FUNCTION kizunasync._settings() IS
  'the effective settings, as configure() returns them (read it through the monitoring views)';

-- Internal: ANALYZE's statistics of the bookkeeping's columns, as the
-- estimates below use them: for column = v the share is freqs[position of v
-- in vals] when v is a most common value, else other_share (what is left,
-- spread over the other distinct values), as PostgreSQL's var_eq_const
-- does; for column IS NOT NULL it is 1 - null_frac.
CREATE OR REPLACE VIEW kizunasync._column_stats AS
SELECT s.starelid AS relid,
	   a.attname::pg_catalog.text AS column_name,
	   s.stanullfrac AS null_frac,
	   m.vals,
	   m.freqs,
	   GREATEST(1::pg_catalog.float8 OPERATOR(pg_catalog.-) s.stanullfrac
				OPERATOR(pg_catalog.-) COALESCE((SELECT pg_catalog.sum(f) FROM pg_catalog.unnest(m.freqs) f), 0), 0)
		 OPERATOR(pg_catalog./) GREATEST(
			 CASE WHEN s.stadistinct OPERATOR(pg_catalog.>=) 0 THEN s.stadistinct
				  ELSE (0 OPERATOR(pg_catalog.-) s.stadistinct) OPERATOR(pg_catalog.*) GREATEST(c.reltuples, 0) END
			 OPERATOR(pg_catalog.-) COALESCE(pg_catalog.cardinality(m.vals), 0), 1) AS other_share
  FROM pg_catalog.pg_statistic s
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.starelid
  JOIN pg_catalog.pg_attribute a
	ON a.attrelid OPERATOR(pg_catalog.=) s.starelid AND a.attnum OPERATOR(pg_catalog.=) s.staattnum
 CROSS JOIN LATERAL (SELECT
		(CASE 1 WHEN s.stakind1 THEN s.stavalues1::pg_catalog.text WHEN s.stakind2 THEN s.stavalues2::pg_catalog.text
				WHEN s.stakind3 THEN s.stavalues3::pg_catalog.text WHEN s.stakind4 THEN s.stavalues4::pg_catalog.text
				WHEN s.stakind5 THEN s.stavalues5::pg_catalog.text END)::pg_catalog.text[] AS vals,
		CASE 1 WHEN s.stakind1 THEN s.stanumbers1 WHEN s.stakind2 THEN s.stanumbers2
			   WHEN s.stakind3 THEN s.stanumbers3 WHEN s.stakind4 THEN s.stanumbers4
			   WHEN s.stakind5 THEN s.stanumbers5 END AS freqs) m
 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'kizunasync'::pg_catalog.regnamespace
   AND NOT s.stainherit;
COMMENT ON VIEW kizunasync._column_stats IS
  'internal: ANALYZE''s most common values of the bookkeeping''s columns, for the monitoring views'' estimates';

-- Per synced table.  The entries (decisions/0092) hold both kinds: the
-- share of (tid, kind) = (id, k) in the multivariate most-common-values
-- list ANALYZE keeps for the pair (the statistics object
-- kizunasync.entries_tid_kind); a table not in that list (more tables than
-- the statistics target keeps) gets the share of its id times that of the
-- kind, as the planner estimates independent columns.
CREATE OR REPLACE VIEW kizunasync.table_metrics AS
SELECT c.table_name COLLATE "default" AS table_name,
	   c.relid AS relation,
	   CASE WHEN pg_catalog.pg_stat_get_live_tuples('kizunasync.entries'::pg_catalog.regclass) OPERATOR(pg_catalog.=) 0 THEN 0
	   ELSE pg_catalog.round(pg_catalog.pg_stat_get_live_tuples('kizunasync.entries'::pg_catalog.regclass)
				OPERATOR(pg_catalog.*) CASE WHEN m.listed THEN m.rows
											ELSE t.share OPERATOR(pg_catalog.*) k.rows END)::pg_catalog.int8 END AS entries,
	   CASE WHEN pg_catalog.pg_stat_get_live_tuples('kizunasync.entries'::pg_catalog.regclass) OPERATOR(pg_catalog.=) 0 THEN 0
	   ELSE pg_catalog.round(pg_catalog.pg_stat_get_live_tuples('kizunasync.entries'::pg_catalog.regclass)
				OPERATOR(pg_catalog.*) CASE WHEN m.listed THEN m.tombs
											ELSE t.share OPERATOR(pg_catalog.*) k.tombs END)::pg_catalog.int8 END AS tombstones,
	   COALESCE(c.tombstone_ttl_days,
				(kizunasync._settings() OPERATOR(pg_catalog.->>) 'tombstone_ttl_days')::pg_catalog.int4) AS tombstone_ttl_days
  FROM kizunasync.synced_tables c
  LEFT JOIN LATERAL (SELECT COALESCE(st.freqs[pg_catalog.array_position(st.vals, c.id::pg_catalog.text)], st.other_share) AS share
					   FROM kizunasync._column_stats st
					  WHERE st.relid OPERATOR(pg_catalog.=) 'kizunasync.entries'::pg_catalog.regclass
						AND st.column_name OPERATOR(pg_catalog.=) 'tid') t ON true
  LEFT JOIN LATERAL (SELECT COALESCE(st.freqs[pg_catalog.array_position(st.vals, 'r')], st.other_share) AS rows,
							COALESCE(st.freqs[pg_catalog.array_position(st.vals, 'd')], st.other_share) AS tombs
					   FROM kizunasync._column_stats st
					  WHERE st.relid OPERATOR(pg_catalog.=) 'kizunasync.entries'::pg_catalog.regclass
						AND st.column_name OPERATOR(pg_catalog.=) 'kind') k ON true
  CROSS JOIN LATERAL (SELECT pg_catalog.count(*) OPERATOR(pg_catalog.>) 0 AS listed,
							 COALESCE(pg_catalog.sum(i.frequency) FILTER (WHERE i."values"[2] OPERATOR(pg_catalog.=) 'r'), 0) AS rows,
							 COALESCE(pg_catalog.sum(i.frequency) FILTER (WHERE i."values"[2] OPERATOR(pg_catalog.=) 'd'), 0) AS tombs
						FROM pg_catalog.pg_statistic_ext x
						JOIN pg_catalog.pg_statistic_ext_data xd ON xd.stxoid OPERATOR(pg_catalog.=) x.oid
					   CROSS JOIN LATERAL pg_catalog.pg_mcv_list_items(xd.stxdmcv) i
					   WHERE x.stxrelid OPERATOR(pg_catalog.=) 'kizunasync.entries'::pg_catalog.regclass
						 AND x.stxname OPERATOR(pg_catalog.=) 'entries_tid_kind' AND NOT xd.stxdinherit
						 AND i."values"[1] OPERATOR(pg_catalog.=) c.id::pg_catalog.text) m;
COMMENT ON VIEW kizunasync.table_metrics IS
  'per synced table: estimated changelog entries and tombstones (NULL before the first ANALYZE), the tombstone TTL in days';

-- One row: the database's sync as a whole.
CREATE OR REPLACE VIEW kizunasync.metrics AS
SELECT q.last_seq,
	   GREATEST(q.last_seq OPERATOR(pg_catalog.-) COALESCE(r.first_seq, q.last_seq OPERATOR(pg_catalog.+) 1)
				OPERATOR(pg_catalog.+) 1, 0) AS changes,
	   COALESCE(r.reaped_seq, 0) AS reap_horizon,
	   r.reaped_at AS reap_horizon_raised_at,
	   o.deleted_at AS oldest_tombstone_at,
	   o.table_name COLLATE "default" AS oldest_tombstone_table,
	   COALESCE(o.ttl_days,
				(kizunasync._settings() OPERATOR(pg_catalog.->>) 'tombstone_ttl_days')::pg_catalog.int4) AS oldest_tombstone_ttl_days,
	   pg_catalog.pg_stat_get_live_tuples('kizunasync.clients'::pg_catalog.regclass) AS clients,
	   (SELECT k.last_seen FROM kizunasync.clients k ORDER BY k.last_seen LIMIT 1) AS oldest_client_seen,
	   pg_catalog.pg_stat_get_live_tuples('kizunasync.verdicts'::pg_catalog.regclass) AS ledger_verdicts,
	   CASE WHEN pg_catalog.pg_stat_get_live_tuples('kizunasync.verdicts'::pg_catalog.regclass) OPERATOR(pg_catalog.=) 0 THEN 0
	   ELSE (SELECT pg_catalog.round(pg_catalog.pg_stat_get_live_tuples(st.relid)
				OPERATOR(pg_catalog.*) (1 OPERATOR(pg_catalog.-) st.null_frac))::pg_catalog.int8
		  FROM kizunasync._column_stats st
		 WHERE st.relid OPERATOR(pg_catalog.=) 'kizunasync.verdicts'::pg_catalog.regclass
		   AND st.column_name OPERATOR(pg_catalog.=) 'reason') END AS ledger_rejections,
	   (kizunasync._settings() OPERATOR(pg_catalog.->>) 'pull_wait_ms')::pg_catalog.int4 AS pull_wait_ms
  FROM (SELECT CASE WHEN s.is_called THEN s.last_value ELSE s.last_value OPERATOR(pg_catalog.-) 1 END AS last_seq
		  FROM kizunasync.change_seq s) q
  LEFT JOIN kizunasync.reap_state r ON r.id
  LEFT JOIN LATERAL (SELECT e.deleted_at, c.table_name, c.tombstone_ttl_days AS ttl_days
					   FROM kizunasync.entries e
					   LEFT JOIN kizunasync.synced_tables c ON c.id OPERATOR(pg_catalog.=) e.tid
					  WHERE e.kind OPERATOR(pg_catalog.=) 'd'
					  ORDER BY e.seq LIMIT 1) o ON true;
COMMENT ON VIEW kizunasync.metrics IS
  'one row: the last seq drawn, changes numbered in this incarnation, the reap horizon, the lowest-numbered tombstone, registered clients (estimate), the ledger (estimates), pull_wait_ms';

-- Seqs in flight (kizunasync.in_flight) in two rows, running and prepared:
-- how many transactions, how many seqs, since when the oldest (NULL: none,
-- or its start unknown).
CREATE OR REPLACE VIEW kizunasync.in_flight_metrics AS
SELECT s.state COLLATE "default" AS state,
	   pg_catalog.count(i.seqs) AS transactions,
	   COALESCE(pg_catalog.sum(i.seqs), 0)::pg_catalog.int8 AS seqs,
	   pg_catalog.min(i.since) AS oldest_since
  FROM (VALUES ('running'::pg_catalog.text), ('prepared')) s (state)
  LEFT JOIN kizunasync.in_flight i
	ON (i.prepared_gid IS NOT NULL) OPERATOR(pg_catalog.=) (s.state OPERATOR(pg_catalog.=) 'prepared')
 GROUP BY s.state;
COMMENT ON VIEW kizunasync.in_flight_metrics IS
  'seqs in flight by state (running, prepared): transactions, seqs, the oldest one''s start';

-- Per bookkeeping table (every table of schema kizunasync): its bytes with
-- indexes and TOAST, live and dead rows, the last VACUUM and ANALYZE.
CREATE OR REPLACE VIEW kizunasync.bookkeeping_metrics AS
SELECT c.relname::pg_catalog.text AS relation,
	   pg_catalog.pg_total_relation_size(c.oid) AS bytes,
	   pg_catalog.pg_stat_get_live_tuples(c.oid) AS live_tuples,
	   pg_catalog.pg_stat_get_dead_tuples(c.oid) AS dead_tuples,
	   GREATEST(pg_catalog.pg_stat_get_last_vacuum_time(c.oid),
				pg_catalog.pg_stat_get_last_autovacuum_time(c.oid)) AS last_vacuum,
	   GREATEST(pg_catalog.pg_stat_get_last_analyze_time(c.oid),
				pg_catalog.pg_stat_get_last_autoanalyze_time(c.oid)) AS last_analyze
  FROM pg_catalog.pg_class c
 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'kizunasync'::pg_catalog.regnamespace
   AND c.relkind OPERATOR(pg_catalog.=) 'r';
COMMENT ON VIEW kizunasync.bookkeeping_metrics IS
  'per bookkeeping table: bytes with indexes and TOAST, live and dead rows, last vacuum and analyze';

-- Per retention job: its newest recorded call (kizunasync.retention_runs).
CREATE OR REPLACE VIEW kizunasync.retention_metrics AS
SELECT j.job COLLATE "default" AS job,
	   r.started_at AS last_started_at,
	   r.duration_ms AS last_duration_ms,
	   r.rows_removed AS last_rows_removed,
	   r.result AS last_result
  FROM (VALUES ('reap_tombstones'::pg_catalog.text), ('compact_changelog'), ('prune_clients')) j (job)
  LEFT JOIN LATERAL (SELECT x.started_at, x.duration_ms, x.rows_removed, x.result
					   FROM kizunasync.retention_runs x
					  WHERE x.job OPERATOR(pg_catalog.=) j.job
					  ORDER BY x.id DESC LIMIT 1) r ON true;
COMMENT ON VIEW kizunasync.retention_metrics IS
  'per retention job: when its newest recorded call started, how long it took, how many bookkeeping rows it deleted, what it returned';

-- One row per check of the deployment: name, status (ok, warning, error),
-- a sentence, and the fix (src/health.c).  For the database owner and
-- service_role.
CREATE OR REPLACE FUNCTION kizunasync.health(
	OUT name text,
	OUT status text,
	OUT detail text,
	OUT fix text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kz_health'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.health() IS
  'one row per check of this deployment: name, status (ok, warning, error), what was found, and the fix';
