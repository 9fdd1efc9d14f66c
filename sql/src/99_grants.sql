-- ---------------------------------------------------------------------------
-- Privileges (last part of the install script, decisions/0060).  Clients
-- reach the extension only through the granted functions: anon gets nothing
-- at all (not even USAGE); authenticated gets USAGE and EXECUTE on the
-- client RPCs; service_role also the operator functions and the status
-- and in_flight views; the database owner (pg_database_owner, e.g. Supabase's postgres)
-- provisions the tables it owns, changes settings and runs the operator
-- functions; the monitoring views are for pg_monitor too (the predefined
-- role a metrics exporter's login is granted), with health() for
-- service_role and the database owner.  Every bookkeeping table and internal helper stays private to
-- the extension owner.
-- ---------------------------------------------------------------------------
REVOKE ALL ON ALL TABLES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL ROUTINES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
GRANT USAGE ON SCHEMA kizunasync TO authenticated, service_role, pg_database_owner, pg_monitor;

GRANT EXECUTE ON FUNCTION
	kizunasync.pull(jsonb, text, integer, integer, uuid),
	kizunasync.push(jsonb, uuid, integer, uuid),
	kizunasync.attachment_confirm(text, text, text, bigint, text, text),
	kizunasync.attachment_metadata(text, text),
	kizunasync.attachment_vacuum(text, text)
	TO authenticated, service_role;
GRANT EXECUTE ON FUNCTION
	kizunasync.reap_tombstones(integer),
	kizunasync.compact_changelog(integer),
	kizunasync.prune_clients(integer),
	kizunasync.schedule_jobs()
	TO service_role, pg_database_owner;
GRANT EXECUTE ON FUNCTION
	kizunasync.sync_table(regclass, text, text, text[], text, boolean, text, integer, integer, boolean, boolean, text),
	kizunasync.unsync_table(regclass),
	kizunasync.repair_table(regclass),
	kizunasync.resync_bucket(regclass, jsonb),
	kizunasync.configure(integer, integer, integer, boolean, integer, integer, integer, integer, text, text, text, integer)
	TO pg_database_owner;
GRANT SELECT ON kizunasync.status TO service_role, pg_database_owner;
-- the in_flight view calls its function as the reader
GRANT EXECUTE ON FUNCTION kizunasync._in_flight() TO service_role, pg_database_owner;
GRANT SELECT ON kizunasync.in_flight TO service_role, pg_database_owner;
-- monitoring (issue 31, decisions/0060): the views call their functions
-- as the reader
GRANT EXECUTE ON FUNCTION kizunasync._in_flight(), kizunasync._settings() TO pg_monitor;
GRANT EXECUTE ON FUNCTION kizunasync._settings() TO service_role, pg_database_owner;
GRANT SELECT ON kizunasync.in_flight, kizunasync.in_flight_metrics, kizunasync.metrics, kizunasync.table_metrics,
	kizunasync.bookkeeping_metrics, kizunasync.retention_metrics TO pg_monitor;
GRANT SELECT ON kizunasync.in_flight_metrics, kizunasync.metrics, kizunasync.table_metrics,
	kizunasync.bookkeeping_metrics, kizunasync.retention_metrics TO service_role, pg_database_owner;
GRANT EXECUTE ON FUNCTION kizunasync.health() TO service_role, pg_database_owner;
