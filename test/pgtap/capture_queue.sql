-- The push queue: changes captured while queuing is on draw no seq until
-- flushed; discarded or rolled-back ones never draw one, so numbering stays
-- dense in a sequential replay.
\set ON_ERROR_STOP 1
BEGIN;
SELECT plan(17);
CREATE TABLE public.qt (id integer PRIMARY KEY, owner text, v text);
SELECT kizunasync.sync_table('public.qt', bucket_column => 'owner');
CREATE FUNCTION pg_temp.last_seq() RETURNS bigint LANGUAGE sql AS
  $$ SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM kizunasync.change_seq $$;
CREATE TEMP TABLE base AS SELECT pg_temp.last_seq() AS s;

SELECT is(kizunasync_test.capture_queue('begin'), '0', 'queuing on, queue empty');
INSERT INTO qt VALUES (1, 'a', 'x');
UPDATE qt SET owner = 'b' WHERE id = 1;
SELECT is(pg_temp.last_seq(), (SELECT s FROM base), 'queued changes draw no seq');
SELECT is(kizunasync_test.capture_queued_op('qt', '1'), 'u', 'newest queued op of the row is an upsert');
SELECT is(kizunasync_test.capture_queued_op('qt', '2'), NULL, 'no op queued for another row');
SELECT is(kizunasync_test.capture_queue('discard'), '0', 'discard empties the queue');
SELECT is(pg_temp.last_seq(), (SELECT s FROM base), 'a discarded mutation drew no seq');

-- (discard drops bookkeeping only: push rolls its subtransaction back; here
-- the row really moved to owner b)
-- a mutation inside a savepoint that is rolled back: its queued changes go with it
SAVEPOINT m;
UPDATE qt SET v = 'y' WHERE id = 1;
SELECT is(kizunasync_test.capture_queue('begin'), '1', 'one change queued in the savepoint');
ROLLBACK TO SAVEPOINT m;
SELECT is(kizunasync_test.capture_queue('begin'), '0', 'savepoint rollback dropped it');

DELETE FROM qt WHERE id = 1;
SELECT is(kizunasync_test.capture_queued_op('qt', '1'), 'd', 'a delete queues a tombstone');
SELECT is(kizunasync_test.capture_queue('flush'), '0', 'flush numbers and records');
SELECT is(pg_temp.last_seq(), (SELECT s + 1 FROM base), 'the flushed delete took exactly the next seq');
SELECT is((SELECT seq FROM kizunasync.tombstones WHERE table_name = 'qt' AND pk = '1'),
          (SELECT s + 1 FROM base), 'tombstone recorded at that seq');

-- move-out captured in the queue keeps its order: tombstone first
INSERT INTO qt VALUES (2, 'a', 'x');
UPDATE qt SET owner = 'c' WHERE id = 2;
SELECT is(kizunasync_test.capture_queue('flush'), '0', 'flushed');
SELECT results_eq(
  $$ SELECT kind, seq - (SELECT s FROM base) FROM (
       SELECT 'entry' AS kind, seq FROM kizunasync.changelog WHERE table_name = 'qt'
       UNION ALL SELECT 'tombstone:' || (bucket_value COLLATE "default"), seq FROM kizunasync.tombstones WHERE table_name = 'qt') x
     ORDER BY seq $$,
  $$ VALUES ('tombstone:b', 1::bigint), ('tombstone:a', 3), ('entry', 4) $$,
  'delete; then insert (2, superseded), move-out tombstone (3), entry (4): dense, in capture order');
SELECT lives_ok($$ SELECT kizunasync_test.capture_queue('end') $$, 'end with an empty queue');

-- leaving changes unflushed is an error at end and at commit
SELECT kizunasync_test.capture_queue('begin');
INSERT INTO qt VALUES (3, 'a', 'x');
SELECT throws_ok($$ SELECT kizunasync_test.capture_queue('end') $$, 'XX000',
  '1 captured changes were neither flushed nor discarded', 'end refuses unflushed changes');
SELECT kizunasync_test.capture_queue('discard');
SELECT kizunasync_test.capture_queue('end');
INSERT INTO qt VALUES (4, 'a', 'x');
SELECT is(pg_temp.last_seq(), (SELECT s + 5 FROM base), 'queuing off: changes are numbered at once again');

SELECT * FROM finish();
ROLLBACK;
