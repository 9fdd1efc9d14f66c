-- Issue 29 item 3: a transaction past its write-time budget that switches
-- to READ ONLY after its writes (SET TRANSACTION READ ONLY, which PostgreSQL
-- allows) commits, and PREPAREs, with every change recorded: the numbering
-- at commit (decisions/0010, "Numbering at commit") draws its seqs although
-- the transaction is now read-only, because the transaction wrote them.
-- The switch still holds for everything else, also for an operator
-- function's own recording.  On d5d3e61 the COMMIT and
-- the PREPARE failed with "cannot execute nextval() in a read-only
-- transaction" and the rows were rolled back.
SET client_min_messages = warning;
CREATE SCHEMA rocommit;
CREATE TABLE rocommit.t (id int PRIMARY KEY, grp int NOT NULL);
CREATE SEQUENCE rocommit.other;
SELECT kizunasync.sync_table('rocommit.t', bucket_column => 'grp', table_name => 'rocommit_t', wakeup => false) AS seeded;
RESET client_min_messages;
-- the table against its bookkeeping
CREATE FUNCTION rocommit.state() RETURNS text LANGUAGE sql AS $$
	SELECT format('rows=%s entries=%s rows_without_entry=%s tombstones=%s',
		(SELECT count(*) FROM rocommit.t),
		(SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'rocommit_t'),
		(SELECT count(*) FROM rocommit.t t WHERE NOT EXISTS
			(SELECT 1 FROM kizunasync.changelog c WHERE c.table_name = 'rocommit_t' AND c.pk = t.id::text)),
		(SELECT count(*) FROM kizunasync.tombstones WHERE table_name = 'rocommit_t')) $$;

-- 600 rows, three numbered while the transaction runs, the rest at commit
BEGIN;
SET LOCAL kizunasync.write_time_changes = 3;
INSERT INTO rocommit.t SELECT g, 1 FROM generate_series(1, 600) g;
SET TRANSACTION READ ONLY;
COMMIT;
SELECT rocommit.state();

-- deletes (tombstones) and updates, numbered at commit too
BEGIN;
SET LOCAL kizunasync.write_time_changes = 3;
DELETE FROM rocommit.t WHERE id <= 100;
UPDATE rocommit.t SET grp = 2 WHERE id > 500;
SET TRANSACTION READ ONLY;
COMMIT;
SELECT rocommit.state();

-- PREPARE numbers at PRE_PREPARE (500 changes: over the prepared bound's
-- default, kizunasync.prepared_changes, which this transaction raises)
BEGIN;
SET LOCAL kizunasync.write_time_changes = 3;
SET LOCAL kizunasync.prepared_changes = 512;
INSERT INTO rocommit.t SELECT g, 1 FROM generate_series(601, 1100) g;
SET TRANSACTION READ ONLY;
PREPARE TRANSACTION 'kz_rocommit';
COMMIT PREPARED 'kz_rocommit';
SELECT rocommit.state();

-- An entry point that numbers what is pending (push) under the read-only
-- flag: the changes are recorded, and the transaction is as read-only as
-- before for everything else.
BEGIN;
SET LOCAL kizunasync.write_time_changes = 3;
INSERT INTO rocommit.t SELECT g, 1 FROM generate_series(1201, 1300) g;
SET TRANSACTION READ ONLY;
SELECT kizunasync.push('{"mutations": []}', NULL, 1);
SELECT count(*) AS recorded_in_transaction FROM kizunasync.changelog
 WHERE table_name = 'rocommit_t' AND pk::int BETWEEN 1201 AND 1300;
SHOW transaction_read_only;
SAVEPOINT s;
SELECT nextval('rocommit.other');
ROLLBACK TO SAVEPOINT s;
INSERT INTO rocommit.t VALUES (5000, 1);
ROLLBACK;
SELECT rocommit.state();

-- Only what the transaction captured from its own writes is numbered under
-- the read-only flag: an operator function that records rows the
-- transaction did not write (repair_table, for a row written with the
-- capture trigger disabled) is still refused after the switch, although
-- the transaction has an xid.
ALTER TABLE rocommit.t DISABLE TRIGGER kizunasync_capture;
INSERT INTO rocommit.t VALUES (9000, 1);
ALTER TABLE rocommit.t ENABLE ALWAYS TRIGGER kizunasync_capture;
BEGIN;
INSERT INTO rocommit.t VALUES (9001, 1);
SET TRANSACTION READ ONLY;
SELECT kizunasync.repair_table('rocommit.t');
ROLLBACK;
SELECT rocommit.state();

SET client_min_messages = warning;
SELECT kizunasync.unsync_table('rocommit.t');
DROP SCHEMA rocommit CASCADE;
RESET client_min_messages;
