-- kizunasync.pull: request validation and the lifecycle signals, in gate
-- order.  Bookkeeping is written directly (as the capture would) so this
-- file tests pull alone.  Every failing call must leave nothing behind.
SET client_min_messages = warning;
CREATE SCHEMA pull_t;
CREATE TABLE pull_t.todos (id uuid PRIMARY KEY, owner_id uuid, title text, done boolean);
ALTER TABLE pull_t.todos ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON pull_t.todos USING (owner_id = auth.uid());
GRANT USAGE ON SCHEMA pull_t TO authenticated, anon;
GRANT SELECT ON pull_t.todos TO authenticated;
CREATE TABLE pull_t.notes (id bigint PRIMARY KEY, body text);
GRANT SELECT ON pull_t.notes TO authenticated;
CREATE TABLE pull_t.hidden (id bigint PRIMARY KEY, owner_id uuid, secret text);
CREATE TABLE pull_t.wide (id int PRIMARY KEY, c1 text, c2 text, c3 text, c4 text, c5 text, c6 text, c7 text, c8 text,
	c9 text, c10 text, c11 text, c12 text, c13 text, c14 text, c15 text, c16 text, c17 text);
GRANT SELECT ON pull_t.wide TO authenticated;
GRANT SELECT (owner_id, secret) ON pull_t.hidden TO authenticated;
INSERT INTO kizunasync.synced_tables (table_name, relid, bucket_column, register_clients)
VALUES ('todos', 'pull_t.todos', 'owner_id', true), ('notes', 'pull_t.notes', NULL, false),
       ('hidden', 'pull_t.hidden', 'owner_id', false), ('wide', 'pull_t.wide', NULL, false);
SELECT setval('kizunasync.change_seq', 300) AS base;
UPDATE kizunasync.reap_state SET reaped_seq = 0;
INSERT INTO pull_t.todos VALUES ('00000000-0000-4000-8000-e10000000001', '00000000-0000-4000-8000-a10000000001', 'row one', false);
INSERT INTO kizunasync.changelog
SELECT nextval('kizunasync.change_seq'), 'todos', id::text, owner_id::text FROM pull_t.todos;
RESET client_min_messages;

-- the caller: user-a through the Data API
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS claims;
SET ROLE authenticated;
\set a '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001"}}]'

-- a good call, for reference
SELECT kizunasync.pull(:'a', '0', 1) -> 'cursor' AS cursor;

-- 1. a session_id claim that is not a uuid fails first, even with a bad cursor
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "session_id": "nope"}', false) IS NOT NULL AS claims;
SELECT kizunasync.pull(:'a', 'bad', 1);
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS claims;

-- 2. cursor (before the limit check)
SELECT kizunasync.pull(:'a', NULL, 1);
SELECT kizunasync.pull(:'a', '01', 1, 0);
SELECT kizunasync.pull(:'a', '5~5', 1);
SELECT kizunasync.pull(:'a', '3:', 1);

-- 3. limit: 1 .. settings.max_pull_limit (5000); NULL means 500
SELECT kizunasync.pull(:'a', '0', 1, 0);
SELECT kizunasync.pull(:'a', '0', 1, -1);
SELECT kizunasync.pull(:'a', '0', 1, 5001);
SELECT kizunasync.pull(:'a', '0', 1, 5000) -> 'cursor' AS at_max;
SELECT kizunasync.pull(:'a', '0', 1, 1) -> 'cursor' AS at_min;
SELECT kizunasync.pull(:'a', '0', 1, NULL) -> 'cursor' AS null_limit;

-- 4. buckets: shape and limits.  The entry count: settings.max_pull_buckets
--    (default 1000; the pack's 64 is a setting away, decisions/0022).  At the
--    default: 1000 entries (1000 distinct bucket values) pass, 1001 fail; the
--    cursor does not grow with them
SELECT kizunasync.pull((SELECT jsonb_agg(jsonb_build_object('table', 'todos', 'params',
	jsonb_build_object('owner_id', format('00000000-0000-4000-8000-%s', lpad(i::text, 12, '0')))))
	FROM generate_series(1, 1001) i), '0', 1);
SELECT jsonb_array_length(p -> 'rows') AS thousand_rows, p -> 'cursor' AS thousand_cursor
  FROM kizunasync.pull((SELECT jsonb_agg(jsonb_build_object('table', 'todos', 'params', jsonb_build_object('owner_id', o)))
	FROM (SELECT format('00000000-0000-4000-8000-%s', lpad(i::text, 12, '0')) FROM generate_series(1, 999) i
		  UNION ALL SELECT '00000000-0000-4000-8000-a10000000001') s (o)), '0', 1) p;
-- the setting at the pack's 64: 64 pass, 65 fail; out of range is refused (23514)
RESET ROLE;
SELECT kizunasync.configure(max_pull_buckets => 64) -> 'max_pull_buckets' AS max_pull_buckets;
SELECT kizunasync.configure(max_pull_buckets => 0);
SELECT kizunasync.configure(max_pull_buckets => 10001);
SET ROLE authenticated;
SELECT kizunasync.pull((SELECT jsonb_agg(e) FROM (SELECT (:'a'::jsonb) -> 0 AS e FROM generate_series(1, 65)) s), '0', 1);
SELECT kizunasync.pull((SELECT jsonb_agg(e) FROM (SELECT (:'a'::jsonb) -> 0 AS e FROM generate_series(1, 64)) s), '0', 1) -> 'cursor' AS sixty_four;
SELECT kizunasync.pull('{"table": "todos"}', '0', 1);
SELECT kizunasync.pull('[1]', '0', 1);
SELECT kizunasync.pull('[{"params": {}}]', '0', 1);
SELECT kizunasync.pull('[{"table": 7}]', '0', 1);
SELECT kizunasync.pull('[{"table": ""}]', '0', 1);
SELECT kizunasync.pull(jsonb_build_array(jsonb_build_object('table', repeat('t', 64))), '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": [1]}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": {"a": 1}}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": [1]}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": 1.5}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": 100000000000000000000}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": "x"}, "extra": 1}]', '0', 1);
SELECT kizunasync.pull(jsonb_build_array(jsonb_build_object('table', 'todos', 'params', jsonb_build_object('title', repeat('x', 1025)))), '0', 1);
SELECT kizunasync.pull((SELECT jsonb_build_array(jsonb_build_object('table', 'todos', 'params', jsonb_object_agg('c' || i, i))) FROM generate_series(1, 17) i), '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"": 1}}]', '0', 1);
-- the argument is read from its jsonb as the text parser reads its text
-- (decisions/0025, item 7): a number without a decimal point is an
-- integer (1e2 is 100), with one it is not (1.0); a number jansson would
-- refuse (outside int64, or a real beyond double) is 22003 wherever it is,
-- after the depth and before the structure; keys in jsonb order (shorter
-- first), an unknown key before the table, the table before the params
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": 1e2}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": 1.0}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": 0.0000001}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": -9223372036854775808}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": 1e400}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": 1.5e400}}]', '0', 1);
SELECT kizunasync.pull('[{"table": 1, "zz": 1e19}]', '0', 1);
SELECT kizunasync.pull('[[[[1]]], 1e400]', '0', 1);
SELECT kizunasync.pull('1e400', '0', 1);
SELECT kizunasync.pull('"[[[["', '0', 1);
SELECT kizunasync.pull('[{"zz": 1, "table": 7}]', '0', 1);
SELECT kizunasync.pull('[{"table": 7, "zzzzzzz": 1}]', '0', 1);
SELECT kizunasync.pull('[{"table": 7, "params": 1}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": 1.5, "": 1}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001"}}, 7, {"x": 1}]', '0', 1);
-- each limit at the limit: 16 params, a 1024-byte value, a 63-byte name
SELECT kizunasync.pull((SELECT jsonb_build_array(jsonb_build_object('table', 'wide', 'params', jsonb_object_agg('c' || i, i))) FROM generate_series(1, 16) i), '0', 1) -> 'rows' AS sixteen_params;
SELECT kizunasync.pull((SELECT jsonb_build_array(jsonb_build_object('table', 'wide', 'params', jsonb_object_agg('c' || i, i))) FROM generate_series(1, 17) i), '0', 1);
SELECT kizunasync.pull(jsonb_build_array(jsonb_build_object('table', 'todos', 'params', jsonb_build_object('owner_id', NULL, 'title', repeat('x', 1024)))), '0', 1) -> 'rows' AS value_1024;
SELECT kizunasync.pull(jsonb_build_array(jsonb_build_object('table', repeat('t', 63))), '0', 1);
SELECT kizunasync.pull(jsonb_build_array(jsonb_build_object('table', 'wide', 'params', jsonb_build_object(repeat('c', 64), 1))), '0', 1);
-- the JSON text: 4096 bytes per entry the setting allows, at least 262,144
-- (the setting at 64): 64 entries of 3 values of 1024 bytes (about 200 KB)
-- pass; 16 values each (over 1 MB) do not, nor 5 values of 1000 bytes (325 KB)
SELECT kizunasync.pull((SELECT jsonb_agg(jsonb_build_object('table', 'wide', 'params', (SELECT jsonb_object_agg('c' || i, repeat('v', 1024)) FROM generate_series(1, 3) i))) FROM generate_series(1, 64)), '0', 1) -> 'rows' AS text_200k;
SELECT kizunasync.pull((SELECT jsonb_agg(jsonb_build_object('table', 'wide', 'params', (SELECT jsonb_object_agg('c' || i, repeat('v', 1024)) FROM generate_series(1, 16) i))) FROM generate_series(1, 64)), '0', 1);
SELECT kizunasync.pull((SELECT jsonb_agg(jsonb_build_object('table', 'wide', 'params', (SELECT jsonb_object_agg('c' || i, repeat('v', 1000)) FROM generate_series(1, 5) i))) FROM generate_series(1, 64)), '0', 1);
-- the limit counts the text as jsonb prints it, exactly and without
-- printing it: escapes, ", " and ": ", numbers as numeric_out writes them
-- (1e-5 is 0.00001).  At 262,144 bytes the next check answers (nested too
-- deeply); one byte more is too large, whatever follows
WITH b AS (SELECT jsonb_build_array(1e-5, 1e3, -0.0, 'q"b\s', E'\n\t\x01', true, false, NULL,
						'{"k\n": [1, {"x": 2}]}'::jsonb) AS b)
SELECT length((b || jsonb_build_array(repeat('x', 262144 - length(b::text) - 4)))::text) AS exact,
	   length((b || jsonb_build_array(repeat('x', 262144 - length(b::text) - 3)))::text) AS one_more FROM b;
WITH b AS (SELECT jsonb_build_array(1e-5, 1e3, -0.0, 'q"b\s', E'\n\t\x01', true, false, NULL,
						'{"k\n": [1, {"x": 2}]}'::jsonb) AS b)
SELECT kizunasync.pull((SELECT b || jsonb_build_array(repeat('x', 262144 - length(b::text) - 4)) FROM b), '0', 1);
WITH b AS (SELECT jsonb_build_array(1e-5, 1e3, -0.0, 'q"b\s', E'\n\t\x01', true, false, NULL,
						'{"k\n": [1, {"x": 2}]}'::jsonb) AS b)
SELECT kizunasync.pull((SELECT b || jsonb_build_array(repeat('x', 262144 - length(b::text) - 3)) FROM b), '0', 1);
-- numbers that print long are counted as printed, and the walk stops at
-- the limit (test/roles/h_memory.sql bounds its memory)
SELECT kizunasync.pull(('[' || rtrim(repeat('1e-1000,', 300), ',') || ']')::jsonb, '0', 1);
-- at the default (1000 entries: 4,096,000 bytes) those 325 KB pass, and
-- 1000 entries of 3 values of 1024 bytes (3.1 MB) pass; 4 values each (4.2 MB) do not
RESET ROLE;
UPDATE kizunasync.settings SET max_pull_buckets = NULL;
SET ROLE authenticated;
SELECT kizunasync.pull((SELECT jsonb_agg(jsonb_build_object('table', 'wide', 'params', (SELECT jsonb_object_agg('c' || i, repeat('v', 1000)) FROM generate_series(1, 5) i))) FROM generate_series(1, 64)), '0', 1) -> 'rows' AS text_325k;
SELECT kizunasync.pull((SELECT jsonb_agg(jsonb_build_object('table', 'wide', 'params', (SELECT jsonb_object_agg('c' || i, repeat('v', 1024)) FROM generate_series(1, 3) i))) FROM generate_series(1, 1000)), '0', 1) -> 'rows' AS text_3m;
SELECT kizunasync.pull((SELECT jsonb_agg(jsonb_build_object('table', 'wide', 'params', (SELECT jsonb_object_agg('c' || i, repeat('v', 1024)) FROM generate_series(1, 4) i))) FROM generate_series(1, 1000)), '0', 1);
-- the params key may be left out (it means {}) and an empty list is fine
SELECT kizunasync.pull('[{"table": "notes"}]', '0', 1) -> 'cursor' AS no_params;
SELECT kizunasync.pull('[]', '0', 1) - 'cursor' AS empty_list;
SELECT kizunasync.pull(NULL, '0', 1) - 'cursor' AS null_list;

-- 5. a table that is not synced, named with SQL metacharacters or not
SELECT kizunasync.pull('[{"table": "nope"}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos; DROP TABLE x"}]', '0', 1);
SELECT kizunasync.pull('[{"table": "changelog"}]', '0', 1);

-- 6. a param that is not a column of the table
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": null, "nope": 1}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id\" = owner_id --": 1}}]', '0', 1);

-- 7. RESET_REQUIRED: schema_version NULL or below the table's min_schema_version;
--    the incoming cursor is echoed and nothing is delivered
SELECT kizunasync.pull(:'a', '0', NULL);
RESET ROLE;
UPDATE kizunasync.synced_tables SET min_schema_version = 3 WHERE table_name = 'todos';
SET ROLE authenticated;
SELECT kizunasync.pull(:'a', '7:9~3', 2);
SELECT kizunasync.pull(:'a', '0', 3) -> 'rows' -> 0 -> 'seq' AS delivered_at_v3;
-- the highest min_schema_version among the named tables counts
SELECT kizunasync.pull('[{"table": "notes"}]', '0', 2) -> 'signal' AS notes_only;
SELECT kizunasync.pull('[{"table": "notes"}, {"table": "todos", "params": {"owner_id": null}}]', '0', 2) -> 'signal' AS both;
-- an empty list falls back to every synced table
SELECT kizunasync.pull('[]', '0', 2) -> 'signal' AS empty_list;
RESET ROLE;
UPDATE kizunasync.synced_tables SET min_schema_version = 1 WHERE table_name = 'todos';
SET ROLE authenticated;
-- a reset signal comes before the bucket-column check
SELECT kizunasync.pull('[{"table": "todos"}]', '0', NULL) -> 'signal' AS signal;

-- 8. KZL01: a bucketed table must be scoped by its bucket column (null counts)
SELECT kizunasync.pull('[{"table": "todos"}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"title": "row one"}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": null}}]', '0', 1) -> 'rows' AS null_bucket;

-- 9. KZL02: a key or bucket column the caller cannot read
SELECT kizunasync.pull('[{"table": "hidden", "params": {"owner_id": null}}]', '0', 1);
RESET ROLE;
REVOKE SELECT ON pull_t.todos FROM authenticated;
GRANT SELECT (id, title, done) ON pull_t.todos TO authenticated;
SET ROLE authenticated;
SELECT kizunasync.pull(:'a', '0', 1);
RESET ROLE;
GRANT SELECT ON pull_t.todos TO authenticated;
SET ROLE authenticated;

-- 10. CHECKPOINT_EXPIRED: the transfer's start (else its high-water) is
--     above 0 and below the reap horizon; bootstrap never expires
RESET ROLE;
UPDATE kizunasync.reap_state SET reaped_seq = 5;
SET ROLE authenticated;
SELECT kizunasync.pull(:'a', '4', 1);
SELECT kizunasync.pull(:'a', '4:9', 1);
SELECT kizunasync.pull(:'a', '0:1', 1) -> 'signal' AS bootstrap_continuation;
SELECT kizunasync.pull(:'a', '5', 1) -> 'signal' AS at_horizon;
SELECT kizunasync.pull(:'a', '0', 1) -> 'signal' AS bootstrap;
RESET ROLE;
UPDATE kizunasync.reap_state SET reaped_seq = 0;
SET ROLE authenticated;

-- 11. bucket values are cast through the column type (and re-rendered)
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": "not-a-uuid"}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": 7}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001", "done": "maybe"}}]', '0', 1);
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-A10000000001"}}]', '0', 1) -> 'rows' -> 0 -> 'seq' AS uppercase_uuid;
SELECT kizunasync.pull('[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001", "done": "f"}}]', '0', 1) -> 'rows' -> 0 -> 'seq' AS done_as_text;

-- nothing was written by any of the calls above except the successful
-- deliveries' grant; no client was registered (no client_id or session_id)
RESET ROLE;
SELECT user_id, table_name, bucket_value FROM kizunasync.bucket_grants;
SELECT count(*) AS clients FROM kizunasync.clients;

-- anon may not call pull at all (decisions/0020)
SET ROLE anon;
SELECT kizunasync.pull(:'a', '0', 1);
RESET ROLE;
SELECT p.prosecdef, p.proconfig,
       has_function_privilege('authenticated', p.oid, 'EXECUTE') AS authenticated,
       has_function_privilege('service_role', p.oid, 'EXECUTE') AS service_role,
       has_function_privilege('anon', p.oid, 'EXECUTE') AS anon
  FROM pg_proc p WHERE p.oid = 'kizunasync.pull(jsonb, text, integer, integer, uuid)'::regprocedure;

SELECT set_config('request.jwt.claims', '', false) IS NOT NULL AS claims;
SET client_min_messages = warning;
DELETE FROM kizunasync.bucket_grants;
DELETE FROM kizunasync.changelog WHERE table_name IN ('todos', 'notes', 'hidden');
DELETE FROM kizunasync.synced_tables WHERE table_name IN ('todos', 'notes', 'hidden', 'wide');
DROP SCHEMA pull_t CASCADE;
RESET client_min_messages;
