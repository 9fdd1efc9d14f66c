-- Issue 29 item 5: changes deferred to the commit stay in memory up to
-- kizunasync.capture_batch and beyond that in the transaction's store
-- (work_mem, then a temporary file), also when an entry point numbers them
-- inside a savepoint or a PL/pgSQL EXCEPTION block: recording them there
-- must not copy them into backend memory to keep in case that
-- subtransaction aborts (decisions/0010, "Numbering at commit").  The
-- backend's memory contexts are measured before and after: on d5d3e61 a
-- push inside a savepoint after 20,000 deferred changes grew them by about
-- 3.1 MB (about 160 bytes a change; 31.7 MB for 200,000) until the
-- savepoint ended.  Then what the savepoint's abort rolls back is recorded
-- again, in capture order, so that every row keeps its entry.
SET client_min_messages = warning;
CREATE SCHEMA spmem;
CREATE TABLE spmem.t (id int PRIMARY KEY, grp int NOT NULL, v text);
SELECT kizunasync.sync_table('spmem.t', bucket_column => 'grp', table_name => 'spmem_t', wakeup => false) AS seeded;
RESET client_min_messages;
-- every memory context of this backend
CREATE FUNCTION spmem.mem() RETURNS bigint LANGUAGE sql AS $$
	SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts $$;
-- the table against its bookkeeping; entries in capture order (id order here)
CREATE FUNCTION spmem.state() RETURNS text LANGUAGE sql AS $$
	SELECT format('rows=%s entries=%s rows_without_entry=%s out_of_order=%s',
		(SELECT count(*) FROM spmem.t),
		(SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'spmem_t'),
		(SELECT count(*) FROM spmem.t t WHERE NOT EXISTS
			(SELECT 1 FROM kizunasync.changelog c WHERE c.table_name = 'spmem_t' AND c.pk = t.id::text)),
		(SELECT count(*) FROM (SELECT pk::int AS id, lag(pk::int) OVER (ORDER BY seq) AS prev
		                         FROM kizunasync.changelog WHERE table_name = 'spmem_t') s
		  WHERE s.prev > s.id)) $$;
-- push inside a PL/pgSQL EXCEPTION block: is the memory bounded inside it?
CREATE FUNCTION spmem.push_in_block(undo boolean) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	before bigint := spmem.mem();
	bounded boolean;
BEGIN
	BEGIN
		PERFORM kizunasync.push('{"mutations": []}', NULL, 1);
		bounded := spmem.mem() - before < 1048576;
		IF undo THEN RAISE EXCEPTION 'undo'; END IF;
	EXCEPTION WHEN raise_exception THEN NULL;
	END;
	RETURN bounded;
END $$;

-- a push inside a savepoint, the savepoint released
BEGIN;
SET LOCAL work_mem = '64kB';
SET LOCAL kizunasync.write_time_changes = 3;
INSERT INTO spmem.t SELECT g, 1, 'a' FROM generate_series(1, 20000) g;
SELECT spmem.mem() AS before \gset
SAVEPOINT s;
SELECT kizunasync.push('{"mutations": []}', NULL, 1);
SELECT spmem.mem() - :before < 1048576 AS memory_bounded_in_savepoint;
SELECT count(*) AS recorded_in_savepoint FROM kizunasync.changelog WHERE table_name = 'spmem_t';
RELEASE SAVEPOINT s;
COMMIT;
SELECT spmem.state();

-- rolled back: the rows captured before the savepoint are recorded again at
-- commit, before a later update of one of them (whose entry must win), and
-- what the savepoint itself wrote is gone
BEGIN;
SET LOCAL work_mem = '64kB';
SET LOCAL kizunasync.write_time_changes = 3;
INSERT INTO spmem.t SELECT g, 1, 'a' FROM generate_series(20001, 40000) g;
SELECT spmem.mem() AS before \gset
SAVEPOINT s;
SELECT kizunasync.push('{"mutations": []}', NULL, 1);
SELECT spmem.mem() - :before < 1048576 AS memory_bounded_in_savepoint;
INSERT INTO spmem.t SELECT g, 1, 'gone' FROM generate_series(90001, 90005) g;
ROLLBACK TO SAVEPOINT s;
SELECT count(*) AS recorded_after_rollback_to FROM kizunasync.changelog
 WHERE table_name = 'spmem_t' AND pk::int > 20000;
UPDATE spmem.t SET grp = 2 WHERE id = 20001;
COMMIT;
-- out_of_order=1: the entry of 20001 is the update's, numbered last
SELECT spmem.state();
SELECT (SELECT bucket_value FROM kizunasync.changelog WHERE table_name = 'spmem_t' AND pk = '20001') AS bucket_of_20001,
       (SELECT seq FROM kizunasync.changelog WHERE table_name = 'spmem_t' AND pk = '20001')
     > (SELECT seq FROM kizunasync.changelog WHERE table_name = 'spmem_t' AND pk = '40000') AS update_numbered_last;
DELETE FROM spmem.t WHERE id = 20001;

-- nested savepoints: recorded in the inner one, released into the outer
-- one, which is rolled back
BEGIN;
SET LOCAL work_mem = '64kB';
SET LOCAL kizunasync.write_time_changes = 3;
INSERT INTO spmem.t SELECT g, 1, 'a' FROM generate_series(40001, 45000) g;
SAVEPOINT a;
INSERT INTO spmem.t SELECT g, 1, 'gone' FROM generate_series(90001, 91000) g;
SAVEPOINT b;
SELECT kizunasync.push('{"mutations": []}', NULL, 1);
RELEASE SAVEPOINT b;
ROLLBACK TO SAVEPOINT a;
COMMIT;
SELECT spmem.state();

-- a PL/pgSQL EXCEPTION block around an entry point, left normally and
-- rolled back
BEGIN;
SET LOCAL work_mem = '64kB';
SET LOCAL kizunasync.write_time_changes = 3;
INSERT INTO spmem.t SELECT g, 1, 'a' FROM generate_series(45001, 60000) g;
SELECT spmem.push_in_block(false) AS memory_bounded_in_block;
INSERT INTO spmem.t SELECT g, 1, 'a' FROM generate_series(60001, 75000) g;
SELECT spmem.push_in_block(true) AS memory_bounded_in_block;
COMMIT;
SELECT spmem.state();

SET client_min_messages = warning;
SELECT kizunasync.unsync_table('spmem.t');
DROP SCHEMA spmem CASCADE;
RESET client_min_messages;
