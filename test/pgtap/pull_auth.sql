-- kizunasync.pull under attack: every attempt by anon, or by one
-- authenticated user against another's data, fails safely (an error, or a
-- page without the data).  Real capture; two users; RLS on owner; a column
-- revoked from authenticated.
-- The file runs in autocommit: a pull never delivers its own transaction's
-- uncommitted changes (decisions/0010), so the writes must commit first.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT plan(32);

CREATE SCHEMA att;
GRANT USAGE ON SCHEMA att TO authenticated, anon;
CREATE TABLE att.todos (id uuid PRIMARY KEY, owner_id uuid NOT NULL, title text, secret text);
ALTER TABLE att.todos ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON att.todos USING (owner_id = auth.uid());
GRANT SELECT (id, owner_id, title) ON att.todos TO authenticated;
GRANT SELECT ON att.todos TO anon;
CREATE TABLE att.private (id int PRIMARY KEY, v text);
DO $$ BEGIN PERFORM kizunasync.sync_table('att.todos', bucket_column => 'owner_id', table_name => 'todos', register_clients => true); END $$;
INSERT INTO att.todos VALUES
  ('00000000-0000-4000-8000-e10000000001', '00000000-0000-4000-8000-a10000000001', 'a one', 's-a1'),
  ('00000000-0000-4000-8000-e10000000002', '00000000-0000-4000-8000-a10000000002', 'b one', 's-b1'),
  ('00000000-0000-4000-8000-e10000000003', '00000000-0000-4000-8000-a10000000002', 'b two', 's-b2');
-- user-b pulls its bucket (gets a grant), then b's row 3 is deleted
BEGIN;
SET LOCAL ROLE authenticated;
DO $$ BEGIN
	PERFORM set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000002", "role": "authenticated"}', true);
	PERFORM kizunasync.pull('[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000002"}}]', '0', 1, 500,
	                        '00000000-0000-4000-8000-c10000000002');
END $$;
COMMIT;
DELETE FROM att.todos WHERE id = '00000000-0000-4000-8000-e10000000003';

CREATE FUNCTION att.pull_as(sub text, buckets text, cur text DEFAULT '0', client uuid DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('request.jwt.claims', json_build_object('sub', sub, 'role', 'authenticated')::text, true);
	RETURN kizunasync.pull(buckets::jsonb, cur, 1, 500, client);
END $$;
GRANT EXECUTE ON FUNCTION att.pull_as(text, text, text, uuid) TO authenticated, anon;
\set A '00000000-0000-4000-8000-a10000000001'
\set Bb '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000002"}}]'
\set Ab '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001"}}]'

-- anon
SET ROLE anon;
SELECT throws_ok($$SELECT kizunasync.pull('[]', '0', 1)$$, '42501', NULL, 'anon cannot call pull');
SELECT throws_ok($$SELECT att.pull_as('00000000-0000-4000-8000-a10000000001', '[]')$$, '42501', NULL, 'anon with a forged sub cannot call pull');
RESET ROLE;

SET ROLE authenticated;
-- another user's bucket, widening, probing
SELECT is(att.pull_as(:'A', :'Bb') -> 'rows', '[]', 'user-a pulling user-b''s bucket gets no row');
SELECT is(att.pull_as(:'A', '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000002", "title": "b one"}}]') -> 'rows', '[]',
          'extra params do not widen');
SELECT is(jsonb_array_length(att.pull_as(:'A', :'Ab' ) -> 'rows'), 1, 'user-a gets exactly its own row');
SELECT ok(NOT (att.pull_as(:'A', :'Ab') -> 'rows' -> 0 -> 'row' ? 'secret'), 'a revoked column is not delivered');
SELECT is(att.pull_as(:'A', '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001", "secret": "s-a1"}}]') -> 'rows', '[]',
          'a param on a revoked column cannot probe its value');
SELECT is(att.pull_as(:'A', '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000002", "secret": "s-b1"}}]') -> 'rows', '[]',
          'nor another user''s revoked value');
-- deleted keys
SELECT is(att.pull_as(:'A', :'Bb') -> 'tombstones', '[]', 'user-a does not learn user-b''s deleted key');
SELECT is(jsonb_array_length(att.pull_as('00000000-0000-4000-8000-a10000000002', :'Bb') -> 'tombstones'), 1, 'user-b (holding the grant) does');
SELECT is(set_config('request.jwt.claims', '{"role": "authenticated"}', true) || (kizunasync.pull(:'Bb', '0', 1) -> 'tombstones')::text,
          '{"role": "authenticated"}[]', 'without a sub there are no tombstones');
-- identifiers and shapes
SELECT throws_ok($$SELECT att.pull_as('00000000-0000-4000-8000-a10000000001', '[{"table": "todos\"; DROP TABLE att.todos; --"}]')$$, '22023', NULL, 'injection through a table name');
SELECT throws_ok($$SELECT att.pull_as('00000000-0000-4000-8000-a10000000001', '[{"table": "todos", "params": {"owner_id\" IS NOT NULL OR \"x": 1}}]')$$, '22023', NULL, 'injection through a param name');
SELECT throws_ok($$SELECT att.pull_as('00000000-0000-4000-8000-a10000000001', '[{"table": "changelog"}]')$$, '22023', NULL, 'a bookkeeping table cannot be pulled');
SELECT throws_ok($$SELECT att.pull_as('00000000-0000-4000-8000-a10000000001', '[{"table": "private"}]')$$, '22023', NULL, 'an unsynced table cannot be pulled');
SELECT throws_ok($$SELECT att.pull_as('00000000-0000-4000-8000-a10000000001', '[{"table": "pg_authid"}]')$$, '22023', NULL, 'a catalog cannot be pulled');
SELECT throws_ok($$SELECT att.pull_as('00000000-0000-4000-8000-a10000000001', '[{"table": "todos"}]')$$, 'KZL01', NULL, 'an unscoped pull of a bucketed table is refused');
SELECT throws_ok($$SELECT att.pull_as('00000000-0000-4000-8000-a10000000001', '[[[[[[[[]]]]]]]]')$$, '22023', NULL, 'deep nesting');
SELECT throws_ok($$SELECT att.pull_as('00000000-0000-4000-8000-a10000000001', '[{"table": "todos", "params": {"owner_id": "x\u0001y"}}]')$$, '22P02', NULL, 'a control character in a uuid value');
SELECT throws_ok($$SELECT kizunasync.pull('[]', '1~' || (SELECT string_agg(i::text, '.') FROM generate_series(1, 513) i), 1)$$, '22023', NULL, 'a cursor with too many holes');
SELECT throws_ok($$SELECT kizunasync.pull('[]', '0', 1, 2147483647)$$, '22023', NULL, 'an enormous limit');
SELECT throws_ok($$SELECT kizunasync.pull('[]', '99999999999999999999', 1)$$, '22023', NULL, 'a cursor that overflows bigint');
-- claims
SELECT throws_ok($$SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "session_id": "x''; --"}', true), kizunasync.pull('[]', '0', 1)$$,
                 '22P02', NULL, 'a session_id that is not a uuid');
SELECT lives_ok($$SELECT set_config('request.jwt.claims', '{"sub": "not-a-uuid"}', true), kizunasync.pull('[]', '0', 1)$$,
                 'a sub that is not a uuid (third-party auth) is a user id like any other');
-- client registry takeover
SELECT throws_ok($$SELECT att.pull_as('00000000-0000-4000-8000-a10000000001', '[{"table": "todos", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001"}}]', '0', '00000000-0000-4000-8000-c10000000002')$$,
                 '42501', NULL, 'user-a cannot take over user-b''s client id');
-- internal objects
SELECT throws_ok($$SELECT kizunasync.cursor_parse('0')$$, '42501', NULL, 'internal helpers are not executable');
SELECT throws_ok($$SELECT count(*) FROM kizunasync.changelog$$, '42501', NULL, 'the changelog is not readable');
SELECT throws_ok($$SELECT count(*) FROM kizunasync.bucket_grants$$, '42501', NULL, 'grants are not readable');
SELECT throws_ok($$INSERT INTO kizunasync.bucket_grants VALUES ('00000000-0000-4000-8000-a10000000001', 'todos', '00000000-0000-4000-8000-a10000000002')$$,
                 '42501', NULL, 'a grant cannot be forged');
RESET ROLE;

-- a hostile search_path before the call changes nothing
CREATE SCHEMA evil;
GRANT USAGE ON SCHEMA evil TO authenticated;
CREATE FUNCTION evil.to_jsonb(anyelement) RETURNS jsonb LANGUAGE sql AS $$ SELECT '"pwned"'::jsonb $$;
CREATE FUNCTION evil.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE sql AS $$ SELECT NULL::text::anyelement $$;
CREATE TABLE evil.changelog (seq bigint, table_name text, pk text, bucket_value text);
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA evil TO authenticated;
SET ROLE authenticated;
SELECT att.pull_as(:'A', :'Ab') AS normal \gset
SET search_path = evil, public, pg_catalog;
SELECT is(att.pull_as(:'A', :'Ab'), :'normal'::jsonb, 'a hostile search_path does not change the page');
RESET search_path;
RESET ROLE;
-- and nothing the attempts did left a trace: one grant each for a and b, one client (b's)
SELECT is((SELECT count(*)::int FROM kizunasync.bucket_grants WHERE table_name = 'todos'), 2, 'grants: one per user that received a row');
SELECT is((SELECT array_agg(client_id::text) FROM kizunasync.clients
			WHERE user_id IN ('00000000-0000-4000-8000-a10000000001', '00000000-0000-4000-8000-a10000000002')),
		  ARRAY['00000000-0000-4000-8000-c10000000002'], 'clients: only user-b''s');

SELECT * FROM finish();
DROP SCHEMA evil CASCADE;
DROP SCHEMA att CASCADE;   -- and the event trigger forgets the table's bookkeeping
DELETE FROM kizunasync.clients WHERE client_id = '00000000-0000-4000-8000-c10000000002';
