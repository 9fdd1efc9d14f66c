-- The batch render of kizunasync.pull (decision 0025): one-column integer
-- and uuid keys read a batch with "key = ANY ($1)" and match rows back by key
-- text; other keys probe per key.  Each path must give exactly the rows the
-- caller could SELECT, rendered as to_jsonb renders them, once per
-- candidate, including a key that appears twice in one batch (a move between
-- two requested buckets) and keys whose rows RLS hides.
-- The file runs in autocommit: a pull never delivers its own transaction's
-- uncommitted changes (decisions/0010), so the writes must commit first.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT plan(10);

CREATE SCHEMA rb;
GRANT USAGE ON SCHEMA rb TO authenticated;
CREATE TABLE rb.i8 (id bigint PRIMARY KEY, owner_id uuid NOT NULL, n numeric, at timestamptz, tags text[]);
CREATE TABLE rb.u (id uuid PRIMARY KEY, owner_id uuid NOT NULL, title text);
CREATE TABLE rb.c (a int, b text, owner_id uuid NOT NULL, v jsonb, PRIMARY KEY (a, b));
DO $$
DECLARE t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['i8', 'u', 'c'] LOOP
		EXECUTE format('ALTER TABLE rb.%I ENABLE ROW LEVEL SECURITY', t);
		-- stricter than the bucket: rows whose owner is the caller and not "hidden"
		EXECUTE format('CREATE POLICY own ON rb.%I USING (owner_id = auth.uid())', t);
		EXECUTE format('GRANT SELECT ON rb.%I TO authenticated', t);
		PERFORM kizunasync.sync_table(('rb.' || t)::regclass, bucket_column => 'owner_id', table_name => 'rb_' || t,
			key_columns => CASE t WHEN 'c' THEN '{a,b}'::text[] ELSE '{id}'::text[] END, wakeup => false);
	END LOOP;
END $$;
\set A '00000000-0000-4000-8000-a10000000001'
\set B '00000000-0000-4000-8000-a10000000002'
INSERT INTO rb.i8 SELECT g, CASE WHEN g % 3 = 0 THEN :'B'::uuid ELSE :'A'::uuid END, g / 7.0,
	'2026-01-01 00:00:00+00'::timestamptz + g * interval '1 minute', ARRAY['t' || g, NULL]
  FROM generate_series(1, 40) g;
INSERT INTO rb.u SELECT ('00000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid,
	CASE WHEN g % 3 = 0 THEN :'B'::uuid ELSE :'A'::uuid END, 'title ' || g
  FROM generate_series(1, 40) g;
INSERT INTO rb.c SELECT g % 5, 'k' || g, CASE WHEN g % 3 = 0 THEN :'B'::uuid ELSE :'A'::uuid END,
	jsonb_build_object('g', g)
  FROM generate_series(1, 40) g;

-- pull every page of a bucket set as a user; returns the concatenated pages
CREATE FUNCTION rb.pull_all(sub text, buckets jsonb, lim int) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE cur text := '0'; page jsonb; rows jsonb := '[]'; tombs jsonb := '[]';
BEGIN
	PERFORM set_config('request.jwt.claims', json_build_object('sub', sub, 'role', 'authenticated')::text, true);
	LOOP
		page := kizunasync.pull(buckets, cur, 1, lim);
		rows := rows || (page -> 'rows');
		tombs := tombs || (page -> 'tombstones');
		cur := page ->> 'cursor';
		EXIT WHEN NOT (page ->> 'has_more')::boolean;
	END LOOP;
	RETURN jsonb_build_object('rows', rows, 'tombstones', tombs);
END $$;
GRANT EXECUTE ON FUNCTION rb.pull_all(text, jsonb, int) TO authenticated;
CREATE FUNCTION rb.b(t text, VARIADIC owners text[]) RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_agg(jsonb_build_object('table', t, 'params', jsonb_build_object('owner_id', o))) FROM unnest(owners) o $$;
-- what the caller can SELECT: {pk: to_jsonb(row)} for a table
CREATE FUNCTION rb.direct(sub text, rel regclass, keyexpr text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
	PERFORM set_config('request.jwt.claims', json_build_object('sub', sub, 'role', 'authenticated')::text, true);
	EXECUTE format('SELECT coalesce(jsonb_object_agg(%s, to_jsonb(t)), ''{}'') FROM %s t', keyexpr, rel) INTO r;
	RETURN r;
END $$;
GRANT EXECUTE ON FUNCTION rb.direct(text, regclass, text) TO authenticated;
CREATE FUNCTION rb.by_pk(p jsonb) RETURNS jsonb LANGUAGE sql AS $$
	SELECT coalesce(jsonb_object_agg(r ->> 'pk', r -> 'row'), '{}') FROM jsonb_array_elements(p -> 'rows') r $$;
CREATE FUNCTION rb.count_pk(p jsonb) RETURNS bigint LANGUAGE sql AS $$
	SELECT count(DISTINCT r ->> 'pk') - count(*) FROM jsonb_array_elements(p -> 'rows') r $$;

SET ROLE authenticated;
-- A pulls its own bucket in small pages: each key path renders what A can SELECT
SELECT is(rb.by_pk(rb.pull_all(:'A', rb.b('rb_i8', :'A'), 7)), rb.direct(:'A', 'rb.i8', 'id::text'),
	'bigint key (ANY path): rows equal to_jsonb of what the caller can SELECT');
SELECT is(rb.by_pk(rb.pull_all(:'A', rb.b('rb_u', :'A'), 7)), rb.direct(:'A', 'rb.u', 'id::text'),
	'uuid key (ANY path): rows equal to_jsonb of what the caller can SELECT');
SELECT is(rb.by_pk(rb.pull_all(:'A', rb.b('rb_c', :'A'), 7)),
	rb.direct(:'A', 'rb.c', 'jsonb_build_array(a::text, b)::text'),
	'composite key (probe path): rows equal to_jsonb of what the caller can SELECT');
-- A asks for B's bucket too: RLS hides B's rows, nothing of B is delivered
SELECT is(rb.by_pk(rb.pull_all(:'A', rb.b('rb_i8', :'A', :'B'), 500)), rb.direct(:'A', 'rb.i8', 'id::text'),
	'bigint key: rows the caller cannot read are not delivered, whatever the buckets');
SELECT is(rb.count_pk(rb.pull_all(:'A', rb.b('rb_u', :'A', :'B'), 500)), 0::bigint,
	'uuid key: every row delivered once');
RESET ROLE;

-- a move between two requested buckets: the tombstone of the old value and
-- the entry of the new one name the same key in one batch
ALTER POLICY own ON rb.i8 USING (owner_id IN (auth.uid(), :'B'::uuid));
SET ROLE authenticated;
SELECT ok(jsonb_array_length(rb.pull_all(:'A', rb.b('rb_i8', :'A', :'B'), 500) -> 'rows') = 40,
	'bigint key: A reads both buckets under the widened policy (and holds grants for both)');
RESET ROLE;
SELECT max(seq) AS before_move FROM kizunasync.changelog \gset
UPDATE rb.i8 SET owner_id = :'B' WHERE id = 1;
SET ROLE authenticated;
SELECT set_config('request.jwt.claims', json_build_object('sub', :'A', 'role', 'authenticated')::text, false) IS NOT NULL AS c \gset
SELECT kizunasync.pull(rb.b('rb_i8', :'A', :'B'), :'before_move', 1, 500) AS moved \gset
SELECT is(jsonb_path_query_array(:'moved'::jsonb, '$.rows[*].pk'), '["1"]'::jsonb,
	'the moved row is delivered once');
SELECT is((:'moved'::jsonb) #> '{rows,0,row,owner_id}', to_jsonb(:'B'::uuid),
	'with its new bucket value');
SELECT is(jsonb_array_length((:'moved'::jsonb) -> 'tombstones'), 0,
	'the tombstone of the old value is withheld: the row is still deliverable to the caller');
-- the same page with only the old bucket requested: the row left it
SELECT is(jsonb_path_query_array(kizunasync.pull(rb.b('rb_i8', :'A'), :'before_move', 1, 500), '$.tombstones[*].pk'),
	'["1"]'::jsonb, 'with only the old bucket requested, the move-out tombstone is delivered');
RESET ROLE;

SELECT * FROM finish();
SELECT set_config('request.jwt.claims', '', false) IS NOT NULL AS reset_claims \gset
DROP SCHEMA rb CASCADE;   -- and the event trigger forgets the tables' bookkeeping
