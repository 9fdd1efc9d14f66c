-- Wake-up hints through Supabase Realtime (a stand-in realtime.send that logs
-- its calls): one private broadcast per table per transaction, withdrawn
-- with a rolled-back subtransaction, never failing the write.
SET client_min_messages = warning;
CREATE SCHEMA realtime;
CREATE TABLE realtime.sent (n serial, payload jsonb, event text, topic text, private boolean);
CREATE FUNCTION realtime.send(payload jsonb, event text, topic text, private boolean DEFAULT true)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF payload->>'t' = 'wk_fail' THEN RAISE EXCEPTION 'broadcast service down'; END IF;
  INSERT INTO realtime.sent (payload, event, topic, private) VALUES (payload, event, topic, private);
END $$;
CREATE TABLE wk_rt (id integer PRIMARY KEY, v text);
CREATE TABLE wk_other (id integer PRIMARY KEY, v text);
CREATE TABLE wk_fail (id integer PRIMARY KEY, v text);
SELECT kizunasync.sync_table('wk_rt') + kizunasync.sync_table('wk_other') + kizunasync.sync_table('wk_fail') AS seeded;
RESET client_min_messages;

-- several changes of two tables in one transaction: one hint each
BEGIN;
INSERT INTO wk_rt VALUES (1, 'a'), (2, 'b');
UPDATE wk_rt SET v = 'c' WHERE id = 1;
DELETE FROM wk_rt WHERE id = 2;
INSERT INTO wk_other VALUES (1, 'a');
COMMIT;
SELECT payload, event, topic, private FROM realtime.sent ORDER BY n;
TRUNCATE realtime.sent;

-- a rolled-back transaction sends nothing
BEGIN;
INSERT INTO wk_rt VALUES (3, 'a');
ROLLBACK;
SELECT count(*) AS after_rollback FROM realtime.sent;

-- a hint sent in a rolled-back savepoint is withdrawn and re-sent by the next change
BEGIN;
SAVEPOINT s1;
INSERT INTO wk_rt VALUES (4, 'a');
ROLLBACK TO SAVEPOINT s1;
INSERT INTO wk_rt VALUES (5, 'a');
INSERT INTO wk_rt VALUES (6, 'a');
COMMIT;
SELECT topic FROM realtime.sent ORDER BY n;
TRUNCATE realtime.sent;

-- hints switched off for a table
SELECT kizunasync.sync_table('wk_rt', wakeup => false);
INSERT INTO wk_rt VALUES (7, 'a');
SELECT count(*) AS switched_off FROM realtime.sent;

-- a failing realtime.send never fails the write
INSERT INTO wk_fail VALUES (1, 'a');
SELECT count(*) AS written FROM wk_fail;

SET client_min_messages = warning;
SELECT kizunasync.unsync_table('wk_rt'), kizunasync.unsync_table('wk_other'), kizunasync.unsync_table('wk_fail');
DROP TABLE wk_rt, wk_other, wk_fail;
DROP SCHEMA realtime CASCADE;
RESET client_min_messages;
