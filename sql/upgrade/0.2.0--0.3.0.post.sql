
-- ---------------------------------------------------------------------------
-- 5. The trigger that moves the rows of a 0.1.0 or 0.2.0 dump restored later
-- (sql/src/05_entries.sql), fired in replica mode too, as in a fresh install
-- (sql/src/90_triggers.sql).
-- ---------------------------------------------------------------------------
CREATE TRIGGER kizunasync_restore_claim
	AFTER INSERT ON kizunasync.synced_tables
	FOR EACH STATEMENT EXECUTE FUNCTION kizunasync._restore_claim();
ALTER TABLE kizunasync.synced_tables ENABLE ALWAYS TRIGGER kizunasync_restore_claim;
