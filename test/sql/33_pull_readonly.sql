-- Read-only pulls (issue 15, decisions/0085).  A pull in a READ ONLY
-- transaction (what the Data API runs a GET in) returns the page a
-- read-write one returns and writes nothing.  A page that needs a write --
-- the caller's first row of a bucket value (its grant), a registered
-- client's bootstrap -- answers KZL03 with a hint to retry on the primary;
-- never 25006 from deep inside, never a different page.
SET client_min_messages = warning;
CREATE SCHEMA ro;
GRANT USAGE ON SCHEMA ro TO authenticated;
CREATE TABLE ro.items (id int PRIMARY KEY, owner_id uuid NOT NULL, v text);
ALTER TABLE ro.items ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON ro.items USING (owner_id = auth.uid());
GRANT SELECT ON ro.items TO authenticated;
CREATE TABLE ro.notes (id int PRIMARY KEY, v text);
GRANT SELECT ON ro.notes TO authenticated;
INSERT INTO ro.items VALUES (1, '00000000-0000-4000-8000-a10000000001', 'one'),
	(2, '00000000-0000-4000-8000-a10000000001', 'two'), (3, '00000000-0000-4000-8000-a10000000002', 'three');
INSERT INTO ro.notes VALUES (1, 'note');
SELECT kizunasync.sync_table('ro.items', bucket_column => 'owner_id', table_name => 'ro_items') AS seeded;
SELECT kizunasync.sync_table('ro.notes', table_name => 'ro_notes', register_clients => true) AS seeded;
DELETE FROM kizunasync.bucket_grants;
CREATE FUNCTION ro.brief(p jsonb) RETURNS text LANGUAGE sql AS $$
	SELECT format('rows=[%s] tombstones=[%s] has_more=%s signal=%s',
		(SELECT coalesce(string_agg(r ->> 'pk', ',' ORDER BY (r ->> 'seq')::bigint), '') FROM jsonb_array_elements(p -> 'rows') r),
		(SELECT coalesce(string_agg(t ->> 'pk', ',' ORDER BY (t ->> 'seq')::bigint), '') FROM jsonb_array_elements(p -> 'tombstones') t),
		p ->> 'has_more', coalesce(p -> 'signal' ->> 'type', 'null')) $$;
RESET client_min_messages;
\set a '[{"table": "ro_items", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001"}}]'
\set n '[{"table": "ro_notes"}]'
\set ua '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}'
\set ub '{"sub": "00000000-0000-4000-8000-a10000000002", "role": "authenticated"}'
\set client '00000000-0000-4000-8000-c10000000033'

-- 1. user a's first pull of its bucket delivers rows: the grant must be
-- written, which READ ONLY cannot; nothing is written
BEGIN READ ONLY;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT ro.brief(kizunasync.pull(:'a', '0', 1));
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT count(*) AS grants FROM kizunasync.bucket_grants;
-- default_transaction_read_only is the same thing
SET default_transaction_read_only = on;
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT ro.brief(kizunasync.pull(:'a', '0', 1));
ROLLBACK;
RESET default_transaction_read_only;

-- 2. read-write (the retry on the primary): the page and the grant
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT kizunasync.pull(:'a', '0', 1) AS rw \gset
COMMIT;
SELECT ro.brief(:'rw');
SELECT count(*) AS grants FROM kizunasync.bucket_grants;

-- 3. now READ ONLY gives the very same page
BEGIN READ ONLY;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT kizunasync.pull(:'a', '0', 1) = :'rw'::jsonb AS same_page;
COMMIT;

-- 4. a delete: the tombstone reaches user a read-only (the grant is held),
-- the same page as read-write
SELECT :'rw'::jsonb ->> 'cursor' AS c1 \gset
DELETE FROM ro.items WHERE id = 2;
BEGIN READ ONLY;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT kizunasync.pull(:'a', :'c1', 1) AS ro2 \gset
COMMIT;
SELECT ro.brief(:'ro2');
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT kizunasync.pull(:'a', :'c1', 1) = :'ro2'::jsonb AS same_page;
COMMIT;

-- 5. user b names user a's bucket: RLS withholds every row, so no grant is
-- needed and READ ONLY answers (no rows, no tombstones)
BEGIN READ ONLY;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ub', true) IS NOT NULL AS claims;
SELECT ro.brief(kizunasync.pull(:'a', '0', 1));
COMMIT;

-- 6. a table that registers clients: a bootstrap (cursor 0) records the reap
-- horizon it began at, which READ ONLY cannot (KZL03); user a holds the
-- table's grant already (a pull without a client id, read-write)
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT ro.brief(kizunasync.pull(:'n', '0', 1));
COMMIT;
BEGIN READ ONLY;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT ro.brief(kizunasync.pull(:'n', '0', 1, 500, :'client'));
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT count(*) AS registered FROM kizunasync.clients WHERE client_id = :'client';
-- read-write: registered, with its cursor
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT kizunasync.pull(:'n', '0', 1, 500, :'client') AS rwn \gset
COMMIT;
SELECT cursor = (:'rwn'::jsonb ->> 'cursor') AS registry_has_cursor, bootstrap_horizon
  FROM kizunasync.clients WHERE client_id = :'client';
-- the same bootstrap again, and a delta pull, READ ONLY: the registry already
-- holds this horizon, so both answer; the registry is left as it was
BEGIN READ ONLY;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT kizunasync.pull(:'n', '0', 1, 500, :'client') = :'rwn'::jsonb AS same_bootstrap_page;
COMMIT;
INSERT INTO ro.notes VALUES (2, 'another');
BEGIN READ ONLY;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT ro.brief(kizunasync.pull(:'n', :'rwn'::jsonb ->> 'cursor', 1, 500, :'client'));
COMMIT;
SELECT cursor = (:'rwn'::jsonb ->> 'cursor') AS registry_unchanged
  FROM kizunasync.clients WHERE client_id = :'client';
-- a reap since: a new bootstrap must record the new horizon (KZL03)
UPDATE kizunasync.reap_state SET reaped_seq = 1;
BEGIN READ ONLY;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ua', true) IS NOT NULL AS claims;
SELECT ro.brief(kizunasync.pull(:'n', '0', 1, 500, :'client'));
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
UPDATE kizunasync.reap_state SET reaped_seq = 0;

-- 7. a client registered to another user: 42501, read-only as read-write
-- (user b holds the table's grant)
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ub', true) IS NOT NULL AS claims;
SELECT ro.brief(kizunasync.pull(:'n', '0', 1));
COMMIT;
BEGIN READ ONLY;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', :'ub', true) IS NOT NULL AS claims;
SELECT ro.brief(kizunasync.pull(:'n', '0', 1, 500, :'client'));
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;

SET client_min_messages = warning;
SELECT kizunasync.unsync_table('ro.items');
SELECT kizunasync.unsync_table('ro.notes');
DELETE FROM kizunasync.clients;
DROP SCHEMA ro CASCADE;
RESET client_min_messages;
