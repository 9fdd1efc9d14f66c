-- Statement-level batching of capture (src/capture_batch.c): a statement's
-- changes are recorded when it ends, in capture order, leaving exactly the
-- bookkeeping that recording each row from its trigger leaves.  Two tables
-- get the same statements, one with kizunasync.capture_batch = 1 (each row
-- recorded from its trigger) and one batched (chunks of 2 and of 1000), and
-- their bookkeeping is compared after every statement.  Then the
-- subtransaction cases: a statement's rows captured before an application
-- trigger's exception block wrote a synced row and rolled it back keep their
-- entries; a rolled-back savepoint or a failed statement leaves none.
\set ON_ERROR_STOP 1
SET client_min_messages = error;
BEGIN;
SELECT plan(21);
-- These checks read the bookkeeping inside the writing transaction: every
-- change numbered while the transaction runs, none left for its commit
-- (decisions/0010, "Numbering at commit"; idle_big_txn.spec covers that).
SET LOCAL kizunasync.write_time_changes = 1000000;

CREATE TABLE public.bx1 (id integer PRIMARY KEY, owner text, v integer);
CREATE TABLE public.bx2 (LIKE public.bx1 INCLUDING ALL);
CREATE TABLE public.bx3 (LIKE public.bx1 INCLUDING ALL);
-- rows inserted with v = -5 are deleted again by a trigger of the same statement
CREATE FUNCTION pg_temp.undo() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.v = -5 THEN EXECUTE format('DELETE FROM %s WHERE id = $1', TG_TABLE_NAME) USING NEW.id; END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER zz_undo AFTER INSERT ON bx1 FOR EACH ROW EXECUTE FUNCTION pg_temp.undo();
CREATE TRIGGER zz_undo AFTER INSERT ON bx2 FOR EACH ROW EXECUTE FUNCTION pg_temp.undo();
CREATE TRIGGER zz_undo AFTER INSERT ON bx3 FOR EACH ROW EXECUTE FUNCTION pg_temp.undo();
SELECT kizunasync.sync_table('public.bx1', bucket_column => 'owner', wakeup => false);
SELECT kizunasync.sync_table('public.bx2', bucket_column => 'owner', wakeup => false);
SELECT kizunasync.sync_table('public.bx3', bucket_column => 'owner', wakeup => false);

-- The bookkeeping of a table, in seq order, with seqs made relative.
CREATE FUNCTION pg_temp.shape(tn text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(format('%s:%s:%s:%s', kind, pk, bucket, rn), ' ' ORDER BY seq), '')
    FROM (SELECT kind, pk, bucket, seq, rank() OVER (ORDER BY seq) AS rn FROM (
            SELECT 'u' AS kind, pk::text, bucket_value::text AS bucket, seq
              FROM kizunasync.changelog WHERE table_name = tn
            UNION ALL
            SELECT 'd', pk::text, bucket_value::text, seq
              FROM kizunasync.tombstones WHERE table_name = tn) a) b $$;
-- Run one statement on the three tables: per row, in chunks of 2, in chunks of 1000.
CREATE FUNCTION pg_temp.each(stmt text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('kizunasync.capture_batch', '1', true);
  EXECUTE replace(stmt, '%T', 'bx1');
  PERFORM set_config('kizunasync.capture_batch', '2', true);
  EXECUTE replace(stmt, '%T', 'bx2');
  PERFORM set_config('kizunasync.capture_batch', '1000', true);
  EXECUTE replace(stmt, '%T', 'bx3');
  PERFORM set_config('kizunasync.capture_batch', '1000', true);
END $$;
CREATE FUNCTION pg_temp.same(what text) RETURNS text LANGUAGE sql AS $$
  SELECT is(pg_temp.shape('bx2') || ' / ' || pg_temp.shape('bx3'),
            pg_temp.shape('bx1') || ' / ' || pg_temp.shape('bx1'), what) $$;

SELECT pg_temp.each($$ INSERT INTO %T SELECT g, CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, 0 FROM generate_series(1, 7) g $$);
SELECT pg_temp.same('insert of 7 rows: one entry each, in insertion order');
SELECT is(pg_temp.shape('bx3'), 'u:1:b:1 u:2:a:2 u:3:b:3 u:4:a:4 u:5:b:5 u:6:a:6 u:7:b:7',
          'recorded by the end of the statement');
SELECT pg_temp.each($$ UPDATE %T SET v = v + 1 $$);
SELECT pg_temp.same('update of every row');
SELECT pg_temp.each($$ UPDATE %T SET owner = 'c' WHERE id % 3 = 0 $$);
SELECT pg_temp.same('bucket moves: tombstone before entry, per row');
SELECT pg_temp.each($$ UPDATE %T SET id = id + 100 WHERE id <= 2 $$);
SELECT pg_temp.same('key changes');
SELECT pg_temp.each($$ UPDATE %T SET id = CASE id WHEN 101 THEN 200 ELSE 101 END WHERE id IN (101, 102) $$);
SELECT pg_temp.same('a key takes the key another row of the statement leaves');
SELECT pg_temp.each($$ INSERT INTO %T VALUES (30, 'a', 0), (31, 'b', -5), (32, 'b', 0), (33, 'a', -5) $$);
SELECT pg_temp.same('a trigger of the statement deletes rows it inserted (entry, then tombstone of the same key)');
SELECT pg_temp.each($$ WITH d AS (DELETE FROM %T WHERE id = 5 RETURNING id, v)
                       INSERT INTO %T SELECT id, 'z', v FROM d $$);
SELECT pg_temp.same('delete and re-insert of one key in one statement');
SELECT pg_temp.each($$ UPDATE %T SET v = v $$);
SELECT pg_temp.same('an update that changes nothing records nothing');
SELECT pg_temp.each($$ DELETE FROM %T WHERE id > 5 $$);
SELECT pg_temp.same('deletes');

-- a savepoint rolled back takes its statement's changes with it
SAVEPOINT s;
SELECT pg_temp.each($$ INSERT INTO %T VALUES (50, 'a', 0), (51, 'a', 0) $$);
ROLLBACK TO SAVEPOINT s;
SELECT pg_temp.same('rolled-back savepoint');
SELECT ok(pg_temp.shape('bx3') !~ ':5[01]:', 'no entry of the rolled-back rows');

-- a statement that fails in its trigger phase records nothing
CREATE FUNCTION pg_temp.boom() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id = 62 THEN RAISE EXCEPTION 'boom'; END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER zz_boom AFTER INSERT ON bx3 FOR EACH ROW EXECUTE FUNCTION pg_temp.boom();
SELECT throws_ok($$ INSERT INTO bx3 VALUES (60, 'a', 0), (61, 'a', 0), (62, 'a', 0) $$,
                 'P0001', 'boom', 'a statement whose third row fails');
SELECT ok(pg_temp.shape('bx3') !~ ':6[0-2]:', 'no entry of its rows');
DROP TRIGGER zz_boom ON bx3;

-- An application trigger whose exception block writes a synced row and is
-- rolled back: the rows its statement captured before it must keep their
-- entries (they were recorded inside that block, then rolled back with it).
CREATE TABLE public.by (id integer PRIMARY KEY, owner text);
SELECT kizunasync.sync_table('public.by', bucket_column => 'owner', wakeup => false);
CREATE FUNCTION pg_temp.side() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    INSERT INTO public.by VALUES (NEW.id, 'side');
    IF NEW.v < 0 THEN RAISE EXCEPTION 'undo'; END IF;
  EXCEPTION WHEN raise_exception THEN NULL;
  END;
  RETURN NULL;
END $$;
CREATE TRIGGER zz_side AFTER INSERT ON bx3 FOR EACH ROW EXECUTE FUNCTION pg_temp.side();
SELECT lives_ok($$ INSERT INTO bx3 VALUES (70, 'a', -1), (71, 'a', -1), (72, 'a', 1) $$,
                'rows whose trigger writes and rolls back a synced row');
SELECT is((SELECT string_agg(pk, ',' ORDER BY seq) FROM kizunasync.changelog WHERE table_name = 'bx3' AND pk IN ('70', '71', '72')),
          '70,71,72', 'every row of the statement has its entry, in capture order');
SELECT is((SELECT string_agg(pk, ',' ORDER BY seq) FROM kizunasync.changelog WHERE table_name = 'by'),
          '72', 'of the side rows only the one that stayed has an entry');
SELECT ok((SELECT max(seq) FROM kizunasync.changelog WHERE table_name = 'bx3' AND pk = '71') <
          (SELECT seq FROM kizunasync.changelog WHERE table_name = 'by' AND pk = '72'),
          'rows captured before the side row are numbered before it');
SELECT is((SELECT count(*) FROM public.bx3 b
            WHERE NOT EXISTS (SELECT 1 FROM kizunasync.changelog c
                               WHERE c.table_name = 'bx3' AND c.pk = b.id::text))::int, 0,
          'every row of the table has an entry');
DROP TRIGGER zz_side ON bx3;

-- chunks: a statement larger than the batch is recorded in order too
SET LOCAL kizunasync.capture_batch = 3;
INSERT INTO bx3 SELECT g, 'k', 0 FROM generate_series(1000, 1009) g;
SELECT is((SELECT string_agg(pk, ',' ORDER BY seq) FROM kizunasync.changelog WHERE table_name = 'bx3' AND pk::int >= 1000),
          '1000,1001,1002,1003,1004,1005,1006,1007,1008,1009', 'ten rows in chunks of three, in order');
SELECT is((SELECT max(seq) - min(seq) FROM kizunasync.changelog WHERE table_name = 'bx3' AND pk::int >= 1000),
          9::bigint, 'numbered densely');

SELECT * FROM finish();
ROLLBACK;
