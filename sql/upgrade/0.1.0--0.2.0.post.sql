
-- ---------------------------------------------------------------------------
-- 3. Synced tables: the capture trigger fires in replica mode too
-- (decisions/0082), as sync_table now creates it.  Takes a SHARE ROW
-- EXCLUSIVE lock on each synced table for the rest of the update.
-- ---------------------------------------------------------------------------
DO $upgrade$
DECLARE
	v_rel pg_catalog.regclass;
BEGIN
	FOR v_rel IN
		SELECT s.relid FROM kizunasync.synced_tables s
		 WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
						WHERE t.tgrelid OPERATOR(pg_catalog.=) s.relid::pg_catalog.oid
						  AND t.tgname OPERATOR(pg_catalog.=) 'kizunasync_capture')
		 ORDER BY s.table_name
	LOOP
		EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER kizunasync_capture', v_rel);
	END LOOP;
END
$upgrade$;

-- ---------------------------------------------------------------------------
-- 4. The extension's own triggers fire in replica mode too, as in a fresh
-- install (sql/src/90_triggers.sql).
-- ---------------------------------------------------------------------------
ALTER TABLE kizunasync.synced_tables ENABLE ALWAYS TRIGGER kizunasync_conf_changed;
ALTER EVENT TRIGGER kizunasync_on_sql_drop ENABLE ALWAYS;
-- and the trigger that moves rows of a 0.1.0 dump restored later
-- (sql/src/05_entries.sql)
CREATE TRIGGER kizunasync_restore_claim
	AFTER INSERT ON kizunasync.synced_tables
	FOR EACH STATEMENT EXECUTE FUNCTION kizunasync._restore_claim();
ALTER TABLE kizunasync.synced_tables ENABLE ALWAYS TRIGGER kizunasync_restore_claim;
