-- ---------------------------------------------------------------------------
-- The extension's own triggers (install only: an upgrade keeps them, and
-- replaces their functions in place).
-- ---------------------------------------------------------------------------
-- Both fire in replica mode too (session_replication_role = replica): a
-- configuration change must reach every backend's cache, and a synced table
-- dropped in such a session must still lose its bookkeeping.
CREATE TRIGGER kizunasync_conf_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON kizunasync.synced_tables
	FOR EACH STATEMENT EXECUTE FUNCTION kizunasync._conf_changed();
ALTER TABLE kizunasync.synced_tables ENABLE ALWAYS TRIGGER kizunasync_conf_changed;
-- rows of an older release's dump held until their synced table is restored (05_entries.sql)
CREATE TRIGGER kizunasync_restore_claim
	AFTER INSERT ON kizunasync.synced_tables
	FOR EACH STATEMENT EXECUTE FUNCTION kizunasync._restore_claim();
ALTER TABLE kizunasync.synced_tables ENABLE ALWAYS TRIGGER kizunasync_restore_claim;

CREATE EVENT TRIGGER kizunasync_on_sql_drop ON sql_drop
	EXECUTE FUNCTION kizunasync._on_sql_drop();
ALTER EVENT TRIGGER kizunasync_on_sql_drop ENABLE ALWAYS;
