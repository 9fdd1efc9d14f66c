-- Self-test of the replay harness's helper schema kzc (pgTAP), run by
-- replay.py in the replay database before the cases.  It needs no engine:
-- it checks the comparison tiers, the projection, the masks, the C-4 check,
-- the deterministic deleted_at and the privileged server writes.
\set ON_ERROR_STOP on
\set QUIET on
SET client_min_messages = warning;
SELECT plan(41);

-- compare(rpc, actual text, err, expected, declared) -> (tier1, tier2, have, why)
CREATE TEMP VIEW page AS SELECT
  '{"cursor": "1", "has_more": false, "rows": [{"pk": "p1", "row": {"owner_id": "u", "title": "a"}, "seq": "1", "table": "todos"}], "signal": null, "tombstones": []}'::jsonb AS g;

SELECT is((kzc.compare('pull', g::text, '', g, '{owner_id,title}')).tier1, true, 'identical page: tier 1') FROM page;
SELECT is((kzc.compare('pull', jsonb_set(g, '{cursor}', '"2"')::text, '', g, '{owner_id,title}')).tier1, false,
          'other checkpoint cursor: not tier 1') FROM page;
SELECT is((kzc.compare('pull', jsonb_set(g, '{cursor}', '"2"')::text, '', g, '{owner_id,title}')).tier2, true,
          'other checkpoint cursor: tier 2') FROM page;
SELECT is((kzc.compare('pull', jsonb_set(g, '{cursor}', '"0:1"')::text, '', g, '{owner_id,title}')).tier2, false,
          'continuation for a checkpoint: not even tier 2') FROM page;
SELECT is((kzc.compare('pull', jsonb_set(g, '{cursor}', '"6~5"')::text, '', g, '{owner_id,title}')).tier2, true,
          'holes are masked at tier 2') FROM page;
SELECT is((kzc.compare('pull', jsonb_set(g, '{rows,0,seq}', '1')::text, '', g, '{owner_id,title}')).tier2, false,
          'a numeric seq is not even tier 2') FROM page;
SELECT is((kzc.compare('pull', jsonb_set(g, '{rows,0,row,title}', '"b"')::text, '', g, '{owner_id,title}')).tier2, false,
          'different row content: not tier 2') FROM page;
SELECT is((kzc.compare('pull', (g || '{"extra": 1}')::text, '', g, '{owner_id,title}')).tier2, false,
          'an extra top-level key is a difference') FROM page;
SELECT is((kzc.compare('pull', (g - 'signal')::text, '', g, '{owner_id,title}')).tier2, false,
          'a missing top-level key is a difference') FROM page;
SELECT is((kzc.compare('pull', jsonb_set(g, '{rows,0,row}', '{"owner_id": "u", "title": "a", "id": "p1", "likes": 0}')::text,
                       '', g, '{owner_id,title}')).tier1, true,
          'row images are projected to the declared columns') FROM page;
SELECT is((kzc.compare('pull', jsonb_set(g, '{rows,0,row}', '{"owner_id": "u"}')::text, '', g, '{owner_id,title}')).tier2, false,
          'a declared column missing from the row is a difference') FROM page;
SELECT is((kzc.compare('pull', (g || '{"conflicts": []}')::text, '', g, '{owner_id,title}')).tier1, true,
          'an empty conflicts list is dropped') FROM page;
SELECT is((kzc.compare('pull', (g || '{"conflicts": [{"pk": "p1"}]}')::text, '', g, '{owner_id,title}')).tier2, false,
          'a non-empty conflicts list is kept') FROM page;
SELECT is((kzc.compare('pull', jsonb_set(g, '{rows,0,row,title}', '"[1, 2]"')::text, '', g, '{owner_id,title}')).tier1, false,
          'row order and values are exact') FROM page;
SELECT is((kzc.compare('pull', '{"rows": [1, 2]}', '', '{"rows": [2, 1]}', '{}')).tier2, false,
          'array order is significant');

-- C-4: jsonb equality treats 1 and 1.0 alike, tier 1 must not
SELECT is((kzc.compare('push', '{"verdicts": [{"server_row": {"likes": 1.0}}]}', '', '{"verdicts": [{"server_row": {"likes": 1}}]}', '{likes}')).tier1,
          false, 'C-4: 1.0 is not byte-equal to 1');
SELECT is((kzc.compare('push', '{"verdicts": [{"server_row": {"likes": 1.0}}]}', '', '{"verdicts": [{"server_row": {"likes": 1}}]}', '{likes}')).tier2,
          true, 'C-4: but 1.0 passes tier 2');
SELECT alike((kzc.compare('push', '{"verdicts": [{"server_row": {"likes": 1.0}}]}', '', '{"verdicts": [{"server_row": {"likes": 1}}]}', '{likes}')).why,
          'canonical JSON (C-4): $.verdicts[0].server_row.likes is 1.0%', 'C-4: the reason names the path');
SELECT is(kzc.c4_problem('{"a": [0, 2147483647]}'), NULL, 'C-4: integers 0..2^31-1 are fine');
SELECT isnt(kzc.c4_problem('{"a": 2147483648}'), NULL, 'C-4: 2^31 is not');
SELECT isnt(kzc.c4_problem('{"a": -1}'), NULL, 'C-4: negatives are not');

-- push: server_row projected in verdicts and in the atomic-abort shape
SELECT is((kzc.compare('push', '{"verdicts": [{"mutation_id": "m", "server_row": {"id": "x", "title": "t"}, "verdict": "rejected", "reason": "PRECONDITION"}]}',
                       '', '{"verdicts": [{"mutation_id": "m", "server_row": {"title": "t"}, "verdict": "rejected", "reason": "PRECONDITION"}]}', '{title}')).tier1,
          true, 'push: verdict server_row projected');
SELECT is((kzc.compare('push', '{"batch": {"outcome": "aborted", "server_row": {"id": "x", "title": "t"}}}',
                       '', '{"batch": {"outcome": "aborted", "server_row": {"title": "t"}}}', '{title}')).tier1,
          true, 'push: batch server_row projected');

-- errors and malformed results
SELECT is((kzc.compare('pull', '', '42883: function does not exist', '{}', '{}')).why,
          'error: 42883: function does not exist', 'an rpc error is reported with its message');
SELECT is((kzc.compare('pull', '<SQL NULL>', '', '{}', '{}')).tier2, false, 'SQL NULL result is a difference');
SELECT is((kzc.compare('pull', 'not json', '', '{}', '{}')).tier2, false, 'a non-JSON result is a difference');

-- masks
SELECT is(kzc.mask('{"cursor": "0:3~1.2", "rows": [{"seq": "4"}], "conflicts": [{"winner_seq": "9"}], "tombstones": [{"deleted_at": "2026-01-01T00:00:03.000Z"}]}'),
          '{"cursor": "<start>:<seq>", "rows": [{"seq": "<seq>"}], "conflicts": [{"winner_seq": "<seq>"}], "tombstones": [{"deleted_at": "<deleted_at>"}]}',
          'mask keeps only the token shape and hides deleted_at');
SELECT is(kzc.mask('{"cursor": "06"}'), '{"cursor": "06"}', 'mask leaves a malformed token (leading zero) as it is');

-- privileged server writes on the fixture
CALL kzc.reset('{"server": {"min_schema_version": 1, "tombstone_ttl_days": 30, "tables": {}}}', 1);
CALL kzc.server_upsert('todos', '00000000-0000-4000-8000-e10000000001',
                       '{"title": "a", "owner_id": "00000000-0000-4000-8000-a10000000001", "labels": ["x"]}', NULL, 1);
SELECT is((SELECT row(title, done, likes, labels)::text FROM public.todos), '(a,,0,{x})',
          'upsert inserts key + columns; other columns keep their defaults');
CALL kzc.server_upsert('todos', '00000000-0000-4000-8000-e10000000001', '{"done": true}', NULL, 2);
SELECT is((SELECT row(title, done)::text FROM public.todos), '(a,t)', 'upsert of an existing row merges only the listed columns');
CALL kzc.server_upsert('seats', '["1", "12"]', '{"holder": "ada", "owner_id": "00000000-0000-4000-8000-a10000000001"}', NULL, 3);
SELECT is((SELECT row(hall, seat, holder)::text FROM public.seats), '(1,12,ada)', 'composite pk spells the key columns');
CALL kzc.server_upsert('notices', '7', '{"body": "b", "owner_id": "00000000-0000-4000-8000-a10000000001"}', NULL, 3);
SELECT is((SELECT id FROM public.notices), 7::bigint, 'integer pk');
CALL kzc.server_delete('seats', '["1", "12"]', 4);
SELECT is((SELECT count(*) FROM public.seats), 0::bigint, 'delete by composite pk');

-- hlc seeding on an hlc-mode table (a config row is made when no engine
-- provisioned the table; it is removed again at the end)
CREATE TEMP TABLE made_conf AS
  SELECT NOT EXISTS (SELECT 1 FROM kizunasync.synced_tables WHERE table_name = 'todos') AS made;
INSERT INTO kizunasync.synced_tables (table_name, relid) VALUES ('todos', 'public.todos') ON CONFLICT DO NOTHING;
CALL kzc.reset('{"server": {"min_schema_version": 1, "tombstone_ttl_days": 30, "tables": {"todos": {"bucket_column": "owner_id", "conflict_mode": "hlc"}}}}', 1);
CALL kzc.server_upsert('todos', '00000000-0000-4000-8000-e10000000002',
                       '{"title": "h", "owner_id": "00000000-0000-4000-8000-a10000000001"}', '2026-01-01T00:00:01.000Z|0|x', 1);
CALL kzc.server_upsert('todos', '00000000-0000-4000-8000-e10000000002', '{"done": true}', '2026-01-01T00:00:02.000Z|0|x', 2);
SELECT is((SELECT column_hlc FROM kizunasync.row_hlc WHERE table_name = 'todos' AND pk = '00000000-0000-4000-8000-e10000000002'),
          '{"title": "2026-01-01T00:00:01.000Z|0|x", "owner_id": "2026-01-01T00:00:01.000Z|0|x", "done": "2026-01-01T00:00:02.000Z|0|x"}'::jsonb,
          'hlc seeds the per-column high-water of the written columns');
CALL kzc.server_delete('todos', '00000000-0000-4000-8000-e10000000002', 3);
SELECT is((SELECT count(*) FROM kizunasync.row_hlc), 0::bigint, 'a server delete clears the row''s hlc entry');
DELETE FROM kizunasync.synced_tables WHERE table_name = 'todos' AND (SELECT made FROM made_conf);

-- deterministic deleted_at
-- (the entries written directly: kizunasync.tombstones is a read-only view of them)
INSERT INTO kizunasync.entries (seq, bucket, tid, kind, key, deleted_at, snapshot)
	VALUES (901, 1, -1, 'd', '\x7470'::bytea, now(), '{}');
CALL kzc.stamp(5);
SELECT is((SELECT deleted_at FROM kizunasync.entries WHERE seq = 901), '2026-01-01 00:00:05+00'::timestamptz,
          'a new tombstone gets its step''s timestamp');
CALL kzc.stamp(6);
SELECT is((SELECT deleted_at FROM kizunasync.entries WHERE seq = 901), '2026-01-01 00:00:05+00'::timestamptz,
          'a stamped tombstone keeps it');
UPDATE kizunasync.entries SET deleted_at = now() WHERE seq = 901;
CALL kzc.stamp(7);
SELECT is((SELECT deleted_at FROM kizunasync.entries WHERE seq = 901), '2026-01-01 00:00:07+00'::timestamptz,
          'a tombstone re-stamped by the engine gets the new step''s timestamp');

-- reset
CALL kzc.reset('{"server": {"min_schema_version": 2, "tombstone_ttl_days": 30, "max_pull_scan": 2, "tables": {}}}', 5);
SELECT is((SELECT (SELECT count(*) FROM public.todos) + (SELECT count(*) FROM public.notices)
               + (SELECT count(*) FROM kizunasync.tombstones) + (SELECT count(*) FROM kizunasync.changelog)),
          0::bigint, 'reset empties the fixture and the bookkeeping');
SELECT is((SELECT row(last_value, is_called)::text FROM kizunasync.change_seq), '(5,f)', 'reset restarts the change sequence');
SELECT is((SELECT max_pull_scan FROM kizunasync.settings), 2, 'reset applies max_pull_scan');
CALL kzc.reset('{"server": {"min_schema_version": 1, "tombstone_ttl_days": 30, "tables": {}}}', 1);

SELECT * FROM finish();
