-- kizunasync.pull reads rows as the caller: RLS policies (two users, a
-- policy stricter than the bucket), column privileges (a revoked column),
-- and renders every row exactly as to_jsonb does (in UTC).
SET client_min_messages = warning;
CREATE SCHEMA pull_t;
GRANT USAGE ON SCHEMA pull_t TO authenticated, service_role;
-- a team-bucketed table whose policy is stricter than the bucket: private
-- rows are visible to their owner only
CREATE TABLE pull_t.docs (id bigint PRIMARY KEY, team int, owner_id uuid, private boolean, title text, secret text);
ALTER TABLE pull_t.docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY team_read ON pull_t.docs FOR SELECT USING (NOT private OR owner_id = auth.uid());
GRANT SELECT (id, team, owner_id, private, title) ON pull_t.docs TO authenticated;
GRANT SELECT ON pull_t.docs TO service_role;
-- every column type a row may carry
CREATE TABLE pull_t.kinds (gone int,
	id uuid PRIMARY KEY, owner_id uuid, i2 smallint, i4 integer, i8 bigint, n numeric, n3 numeric(10,3),
	f4 real, f8 double precision, b boolean, t text, vc varchar(5), ch char(3), d date, ts timestamp,
	tstz timestamptz, tm time, iv interval, by bytea, j json, jb jsonb, ta text[], ia int[][], u uuid,
	nul text, inet_v inet, mon numeric(12,2));
ALTER TABLE pull_t.kinds DROP COLUMN gone;  -- attribute numbers with a hole
ALTER TABLE pull_t.kinds ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON pull_t.kinds USING (owner_id = auth.uid());
GRANT SELECT ON pull_t.kinds TO authenticated;
INSERT INTO kizunasync.synced_tables (table_name, relid, bucket_column)
VALUES ('docs', 'pull_t.docs', 'team'), ('kinds', 'pull_t.kinds', 'owner_id');
SELECT setval('kizunasync.change_seq', 200) AS base;
UPDATE kizunasync.reap_state SET reaped_seq = 0;
CREATE FUNCTION pull_t.cl(t text, k text, b text) RETURNS bigint LANGUAGE sql AS $$
	DELETE FROM kizunasync.changelog WHERE table_name = t AND pk = k;
	INSERT INTO kizunasync.changelog VALUES (nextval('kizunasync.change_seq'), t, k, b)
	RETURNING seq $$;
CREATE FUNCTION pull_t.tomb(t text, k text, b text, col text, v jsonb) RETURNS bigint LANGUAGE sql AS $$
	DELETE FROM kizunasync.changelog WHERE table_name = t AND pk = k;
	INSERT INTO kizunasync.tombstones VALUES (nextval('kizunasync.change_seq'), t, k, b,
		jsonb_build_object(col, v), '2026-01-01 00:00:30+00')
	RETURNING seq $$;
INSERT INTO pull_t.docs VALUES
	(1, 1, '00000000-0000-4000-8000-a10000000001', false, 'team note', 's1'),
	(2, 1, '00000000-0000-4000-8000-a10000000001', true, 'a private', 's2'),
	(3, 1, '00000000-0000-4000-8000-a10000000002', true, 'b private', 's3'),
	(4, 2, '00000000-0000-4000-8000-a10000000002', false, 'team 2 note', 's4');
SELECT pull_t.cl('docs', id::text, team::text) FROM pull_t.docs ORDER BY id;
RESET client_min_messages;

\set t1 '[{"table": "docs", "params": {"team": 1}}]'
-- user-a: the team's public row and its own private row; never user-b's private
-- row, never the revoked column "secret"
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS as_a;
SET ROLE authenticated;
SELECT r ->> 'seq' AS seq, r ->> 'pk' AS pk, r -> 'row' AS row
  FROM jsonb_array_elements(kizunasync.pull(:'t1', '200', 1) -> 'rows') r;
-- the same rows a direct SELECT of the readable columns gives user-a
SELECT id, title FROM pull_t.docs WHERE team = 1 ORDER BY id;
-- params only narrow: asking for a column value the policy hides yields nothing
SELECT kizunasync.pull('[{"table": "docs", "params": {"team": 1, "owner_id": "00000000-0000-4000-8000-a10000000002"}}]', '200', 1) -> 'rows' AS b_rows_for_a;
-- a param on the revoked column matches nothing (it cannot be probed)
SELECT kizunasync.pull('[{"table": "docs", "params": {"team": 1, "secret": "s1"}}]', '200', 1) -> 'rows' AS probe_secret;
-- the bucket value is cast through the column type: "1" and 1 are the same bucket
SELECT jsonb_array_length(kizunasync.pull('[{"table": "docs", "params": {"team": "1"}}]', '200', 1) -> 'rows') AS team_as_text;
-- user-b: the public row and its own private row
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000002", "role": "authenticated"}', false) IS NOT NULL AS as_b;
SELECT string_agg(r ->> 'pk', ',') AS b_sees FROM jsonb_array_elements(kizunasync.pull(:'t1', '200', 1) -> 'rows') r;
-- user-c: a stranger with no grant and no visible row
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000003", "role": "authenticated"}', false) IS NOT NULL AS as_c;
SELECT string_agg(r ->> 'pk', ',') AS c_sees FROM jsonb_array_elements(kizunasync.pull(:'t1', '200', 1) -> 'rows') r;
-- service_role bypasses RLS and reads every column it was granted
SET ROLE service_role;
SELECT string_agg((r -> 'row' ->> 'secret'), ',') AS service_sees FROM jsonb_array_elements(kizunasync.pull(:'t1', '200', 1) -> 'rows') r;
RESET ROLE;
SELECT user_id, table_name, bucket_value FROM kizunasync.bucket_grants ORDER BY 1, 2, 3;

-- deletes: team 1's tombstones reach every member who received a live row of
-- team 1.  That includes c, who saw only the public note and so also learns
-- the deleted key of b's private row 3: the documented residual of bucket
-- grants (decisions/0024; soft-delete such tables).  A caller who never
-- received a live row of a bucket value gets none of its tombstones.
SELECT pull_t.tomb('docs', '3', '1', 'team', '1'), pull_t.tomb('docs', '4', '2', 'team', '2');
DELETE FROM pull_t.docs WHERE id IN (3, 4);
SET ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000002", "role": "authenticated"}', false) IS NOT NULL AS as_b;
SELECT kizunasync.pull(:'t1', '204', 1) -> 'tombstones' AS b_tombstones;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000003", "role": "authenticated"}', false) IS NOT NULL AS as_c;
SELECT kizunasync.pull(:'t1', '204', 1) -> 'tombstones' AS c_tombstones;
SELECT kizunasync.pull('[{"table": "docs", "params": {"team": 2}}]', '204', 1) -> 'tombstones' AS c_team2;
-- d never pulled team 1: no grant, no tombstone
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000004", "role": "authenticated"}', false) IS NOT NULL AS as_d;
SELECT kizunasync.pull(:'t1', '204', 1) -> 'tombstones' AS d_tombstones;
-- user-a never received a live row of team 2, so team 2's delete stays hidden
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS as_a;
SELECT kizunasync.pull('[{"table": "docs", "params": {"team": 2}}]', '204', 1) -> 'tombstones' AS a_team2;
RESET ROLE;

-- every column type renders exactly as to_jsonb renders it (UTC)
SET TimeZone = 'America/New_York';
INSERT INTO pull_t.kinds VALUES (
	'00000000-0000-4000-8000-e10000000001', '00000000-0000-4000-8000-a10000000001',
	-7, 2147483647, 9223372036854775807, 12345678901234567890.000100, 1.5,
	1.25, 0.1, true, 'tab	"quote" \ é', 'abc', 'x', '2026-02-28', '2026-02-28 13:14:15.123456',
	'2026-02-28 08:14:15.5-05', '23:59:59.999', '1 day 02:03:04', '\x00ff10', '{"b": 1, "a": [1, 2.50]}',
	'{"b": 1, "a": [1, 2.50]}', '{"x", NULL, "y z"}', '{{1,2},{3,4}}', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
	NULL, '10.1.2.3/8', 19.90);
SELECT pull_t.cl('kinds', '00000000-0000-4000-8000-e10000000001', '00000000-0000-4000-8000-a10000000001');
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS as_a;
SET ROLE authenticated;
\set k '[{"table": "kinds", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001"}}]'
SELECT jsonb_pretty(kizunasync.pull(:'k', '206', 1) -> 'rows' -> 0 -> 'row');
-- byte-identical to to_jsonb of the row read directly in UTC
SET TimeZone = 'UTC';
-- (pull renders under fixed output settings, whatever the session's: here
-- pg_regress's IntervalStyle postgres_verbose)
BEGIN;
SET LOCAL IntervalStyle = postgres;
SET LOCAL extra_float_digits = 1;
SET LOCAL bytea_output = hex;
SELECT (SELECT to_jsonb(k)::text FROM pull_t.kinds k) AS rendered \gset
ROLLBACK;
SELECT (kizunasync.pull(:'k', '206', 1) -> 'rows' -> 0 -> 'row')::text = :'rendered' AS same_as_to_jsonb;
-- and the caller's own TimeZone does not leak into the page
SET TimeZone = 'Asia/Tokyo';
SELECT kizunasync.pull(:'k', '206', 1) -> 'rows' -> 0 -> 'row' ->> 'tstz' AS tstz_in_utc;
SELECT current_setting('TimeZone') AS caller_timezone_kept;
RESET TimeZone;
RESET ROLE;

-- a composite key (pk is the jsonb text of an array of strings) and a
-- text key that needs quoting
CREATE TABLE pull_t.seats (hall bigint, seat int, holder text, PRIMARY KEY (hall, seat));
GRANT SELECT ON pull_t.seats TO authenticated;
CREATE TABLE pull_t.tags ("Tag Name" text PRIMARY KEY, n int);
GRANT SELECT ON pull_t.tags TO authenticated;
INSERT INTO kizunasync.synced_tables (table_name, relid, bucket_column, key_columns)
VALUES ('seats', 'pull_t.seats', NULL, '{hall,seat}'), ('tags', 'pull_t.tags', NULL, '{Tag Name}');
INSERT INTO pull_t.seats VALUES (1, 12, 'ann'), (1, 2, 'bob'), (10, 1, NULL);
INSERT INTO pull_t.tags VALUES ('a "quoted", tag', 1), ('plain', 2);
SELECT pull_t.cl('seats', '["1", "12"]', ''), pull_t.cl('seats', '["1", "2"]', ''), pull_t.cl('seats', '["10", "1"]', ''),
       pull_t.cl('tags', 'a "quoted", tag', ''), pull_t.cl('tags', 'plain', '');
SET ROLE authenticated;
SELECT r ->> 'seq' AS seq, r ->> 'table' AS t, r ->> 'pk' AS pk, r -> 'row' AS row
  FROM jsonb_array_elements(kizunasync.pull('[{"table": "seats"}, {"table": "tags", "params": {"n": 1}}]', '207', 1) -> 'rows') r;
RESET ROLE;

-- a change to a row a grant holder may not see is a tombstone for it
-- (decisions/0024, "Visibility"): a's private row 2 is updated; a gets the
-- row, b and c (team 1's grant, row 2 hidden) its key as a tombstone - the
-- residual widened to writes (keys only, never contents) - and d (no grant)
-- nothing
UPDATE pull_t.docs SET title = 'a private v2' WHERE id = 2;
SELECT pull_t.cl('docs', '2', '1') - 1 AS before \gset
SET ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', false) IS NOT NULL AS as_a;
SELECT kizunasync.pull(:'t1', :'before', 1) #>> '{rows,0,row,title}' AS a_row2, kizunasync.pull(:'t1', :'before', 1) -> 'tombstones' AS a_tombstones;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000002", "role": "authenticated"}', false) IS NOT NULL AS as_b;
SELECT kizunasync.pull(:'t1', :'before', 1) -> 'rows' AS b_rows, kizunasync.pull(:'t1', :'before', 1) #>> '{tombstones,0,pk}' AS b_tombstone_key;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000003", "role": "authenticated"}', false) IS NOT NULL AS as_c;
SELECT kizunasync.pull(:'t1', :'before', 1) -> 'rows' AS c_rows, kizunasync.pull(:'t1', :'before', 1) #>> '{tombstones,0,pk}' AS c_tombstone_key;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000004", "role": "authenticated"}', false) IS NOT NULL AS as_d;
SELECT kizunasync.pull(:'t1', :'before', 1) -> 'rows' AS d_rows, kizunasync.pull(:'t1', :'before', 1) -> 'tombstones' AS d_tombstones;
RESET ROLE;

SELECT set_config('request.jwt.claims', '', false) IS NOT NULL AS claims;
SET client_min_messages = warning;
DELETE FROM kizunasync.bucket_grants;
DELETE FROM kizunasync.changelog WHERE table_name IN ('docs', 'kinds', 'seats', 'tags');
DELETE FROM kizunasync.tombstones WHERE table_name IN ('docs', 'kinds');
DELETE FROM kizunasync.synced_tables WHERE table_name IN ('docs', 'kinds', 'seats', 'tags');
DROP SCHEMA pull_t CASCADE;
RESET client_min_messages;
