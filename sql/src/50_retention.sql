-- ---------------------------------------------------------------------------
-- Retention and settings (operator functions, src/retention.c and
-- src/settings.c; EXECUTE for service_role and the database owner, see
-- grants).  SECURITY INVOKER; a client JWT is refused.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION kizunasync.reap_tombstones(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_reap_tombstones_recorded'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.reap_tombstones(integer) IS
  'removes tombstones older than their table''s TTL (bounded per call) and raises the reap horizon; returns the highest seq reaped';

CREATE OR REPLACE FUNCTION kizunasync.compact_changelog(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_compact_changelog_recorded'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.compact_changelog(integer) IS
  'removes bookkeeping nothing can deliver any more (bounded per call); returns rows removed';

CREATE OR REPLACE FUNCTION kizunasync.prune_clients(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_prune_clients_recorded'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.prune_clients(integer) IS
  'removes clients not seen and verdicts older than client_ttl_days (bounded per call), never bucket grants; returns clients removed';

-- Schedules the three retention jobs with pg_cron when it is installed in
-- this database; never requires it.  Re-running replaces the jobs.
CREATE OR REPLACE FUNCTION kizunasync.schedule_jobs()
RETURNS jsonb
AS 'MODULE_PATHNAME', 'kz_schedule_jobs'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.schedule_jobs() IS
  'schedules reap/compact/prune with pg_cron when installed (cron.schedule replaces jobs of the same name)';

-- Changes deployment settings (NULL: unchanged); returns the effective ones.
CREATE OR REPLACE FUNCTION kizunasync.configure(
	max_pull_scan integer DEFAULT NULL,
	max_pull_limit integer DEFAULT NULL,
	max_batch_size integer DEFAULT NULL,
	require_atomic boolean DEFAULT NULL,
	tombstone_ttl_days integer DEFAULT NULL,
	client_ttl_days integer DEFAULT NULL,
	hlc_max_skew_ms integer DEFAULT NULL,
	pull_wait_ms integer DEFAULT NULL,
	reap_schedule text DEFAULT NULL,
	compact_schedule text DEFAULT NULL,
	client_prune_schedule text DEFAULT NULL,
	max_pull_buckets integer DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'kz_configure'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.configure(integer, integer, integer, boolean, integer, integer, integer, integer, text, text, text, integer) IS
  'changes deployment settings (NULL leaves one unchanged) and returns every effective setting';

-- Operator view: one row per synced table.  CREATE OR REPLACE: an update
-- replaces it in place, so operators' views over it stay valid (decisions/
-- 0080); its text columns keep the default collation for that reason.
CREATE OR REPLACE VIEW kizunasync.status AS
SELECT c.table_name COLLATE "default" AS table_name,
	   c.relid AS relation,
	   c.sync_mode,
	   c.bucket_column,
	   c.key_columns,
	   c.conflict_mode,
	   (SELECT count(*) FROM kizunasync.entries e
		 WHERE e.tid = c.id AND e.kind = 'r') AS changelog_entries,
	   (SELECT count(*) FROM kizunasync.entries e
		 WHERE e.tid = c.id AND e.kind = 'd') AS tombstones,
	   COALESCE((SELECT r.reaped_seq FROM kizunasync.reap_state r WHERE r.id), 0) AS reap_horizon,
	   (SELECT k.cursor FROM kizunasync.clients k
		 WHERE c.register_clients
		 ORDER BY k.last_seen LIMIT 1) AS oldest_client_cursor,
	   (SELECT min(k.last_seen) FROM kizunasync.clients k WHERE c.register_clients) AS oldest_client_seen
  FROM kizunasync.synced_tables c;
COMMENT ON VIEW kizunasync.status IS 'per synced table: mode, bucket column, changelog size, tombstones, reap horizon, oldest registered client';
