-- ---------------------------------------------------------------------------
-- The extension's own triggers (install only: an upgrade keeps them, and
-- replaces their functions in place).
-- ---------------------------------------------------------------------------
CREATE TRIGGER kizunasync_conf_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON kizunasync.synced_tables
	FOR EACH STATEMENT EXECUTE FUNCTION kizunasync._conf_changed();

CREATE EVENT TRIGGER kizunasync_on_sql_drop ON sql_drop
	EXECUTE FUNCTION kizunasync._on_sql_drop();
