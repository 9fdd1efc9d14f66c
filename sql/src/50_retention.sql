-- ---------------------------------------------------------------------------
-- Retention (operator functions; EXECUTE for service_role only, see grants)
-- ---------------------------------------------------------------------------
CREATE FUNCTION kizunasync.reap_tombstones(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_reap_tombstones'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = '';
COMMENT ON FUNCTION kizunasync.reap_tombstones(integer) IS
  'removes tombstones older than their table''s TTL (bounded per call) and raises the reap horizon; returns the highest seq reaped';

CREATE FUNCTION kizunasync.compact_changelog(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_compact_changelog'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = '';
COMMENT ON FUNCTION kizunasync.compact_changelog(integer) IS
  'removes bookkeeping nothing can deliver any more (bounded per call); returns rows removed';

CREATE FUNCTION kizunasync.prune_clients(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_prune_clients'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = '';
COMMENT ON FUNCTION kizunasync.prune_clients(integer) IS
  'removes stale clients, verdicts older than client_ttl_days and grants of deleted users; returns clients removed';

-- Schedules the three retention jobs with pg_cron when it is installed in
-- this database; never requires it.  Re-running replaces the jobs.
CREATE FUNCTION kizunasync.schedule_jobs()
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = ''
AS $fn$
DECLARE
	s kizunasync.settings;
	have_cron boolean;
	jobs jsonb;
	j record;
BEGIN
	SELECT * INTO s FROM kizunasync.settings WHERE id;
	jobs := pg_catalog.jsonb_build_object(
		'kizunasync-reap-tombstones', s.reap_schedule,
		'kizunasync-compact-changelog', s.compact_schedule,
		'kizunasync-prune-clients', s.client_prune_schedule);
	have_cron := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron');
	IF have_cron THEN
		FOR j IN SELECT key AS name, value AS schedule FROM pg_catalog.jsonb_each_text(jobs)
		LOOP
			EXECUTE 'SELECT cron.schedule($1, $2, $3)'
			   USING j.name, j.schedule,
					 pg_catalog.format('SELECT kizunasync.%s()',
						CASE j.name
							WHEN 'kizunasync-reap-tombstones' THEN 'reap_tombstones'
							WHEN 'kizunasync-compact-changelog' THEN 'compact_changelog'
							ELSE 'prune_clients' END);
		END LOOP;
	END IF;
	RETURN pg_catalog.jsonb_build_object('jobs', jobs, 'pg_cron', have_cron);
END
$fn$;
COMMENT ON FUNCTION kizunasync.schedule_jobs() IS
  'schedules reap/compact/prune with pg_cron when installed (cron.schedule replaces jobs of the same name)';

-- Operator view: one row per synced table.
CREATE VIEW kizunasync.status AS
SELECT c.table_name,
	   c.relid AS relation,
	   c.sync_mode,
	   c.bucket_column,
	   c.key_columns,
	   c.conflict_mode,
	   (SELECT count(*) FROM kizunasync.changelog l WHERE l.table_name = c.table_name) AS changelog_entries,
	   (SELECT count(*) FROM kizunasync.tombstones t WHERE t.table_name = c.table_name) AS tombstones,
	   (SELECT r.reaped_seq FROM kizunasync.reap_state r WHERE r.id) AS reap_horizon,
	   (SELECT k.cursor FROM kizunasync.clients k
		 WHERE c.register_clients
		 ORDER BY k.last_seen LIMIT 1) AS oldest_client_cursor,
	   (SELECT min(k.last_seen) FROM kizunasync.clients k WHERE c.register_clients) AS oldest_client_seen
  FROM kizunasync.synced_tables c;
COMMENT ON VIEW kizunasync.status IS 'per synced table: mode, bucket column, changelog size, tombstones, reap horizon, oldest registered client';
