
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

-- ---------------------------------------------------------------------------
-- 5. Bucket labels (decisions/0013, issue 32): 0.1.0 recorded a bucket value
-- under its rendering's ->> text, so 1 and 1.0 were two buckets and the json
-- string "1" and the number 1 one.  Every changelog entry, tombstone and
-- bucket grant of a bucketed table gets the canonical label of its value,
-- in place (seqs kept, cursors stay valid), computed from the bookkeeping
-- alone (src/relabel.c: no type's code runs).  Warnings name the tables
-- whose devices may need to bootstrap again, or a repair_table.  The
-- function exists for this update only.
-- ---------------------------------------------------------------------------
CREATE FUNCTION kizunasync._upgrade_relabel() RETURNS bigint
	AS 'MODULE_PATHNAME', 'kz_upgrade_relabel' LANGUAGE C;
SELECT kizunasync._upgrade_relabel();
DROP FUNCTION kizunasync._upgrade_relabel();
