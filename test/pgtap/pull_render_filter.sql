-- The bucket equality of the batch render (src/pull_stream.c,
-- stream_render_filter): when one bucket entry names a table, its params
-- are added to the render statement ("owner_id = value"), so the planner
-- folds a policy "owner_id = <stable function>" into a one-time filter
-- instead of calling the function per row.  A counting policy function
-- shows the calls; the rows must be exactly those of the bucket the caller
-- can SELECT, with or without the equality (two entries of the table get
-- none).  Runs in autocommit: a pull never delivers its own transaction's
-- uncommitted changes.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT plan(9);

CREATE SCHEMA rf;
GRANT USAGE ON SCHEMA rf TO authenticated;
CREATE SEQUENCE rf.calls;
GRANT USAGE, SELECT ON SEQUENCE rf.calls TO authenticated;
-- auth.uid(), counted (STABLE: the planner may evaluate it once per scan)
CREATE FUNCTION rf.uid() RETURNS uuid LANGUAGE plpgsql STABLE AS $$
BEGIN
	PERFORM nextval('rf.calls');
	RETURN auth.uid();
END $$;
GRANT EXECUTE ON FUNCTION rf.uid() TO authenticated;
CREATE TABLE rf.t (id bigint PRIMARY KEY, owner_id uuid NOT NULL, title text);
ALTER TABLE rf.t ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON rf.t USING (owner_id = rf.uid());
GRANT SELECT ON rf.t TO authenticated;
SELECT kizunasync.sync_table('rf.t', bucket_column => 'owner_id', table_name => 'rf_t', wakeup => false);
\set A '00000000-0000-4000-8000-a10000000001'
\set B '00000000-0000-4000-8000-a10000000002'
INSERT INTO rf.t SELECT g, CASE WHEN g % 5 = 0 THEN :'B'::uuid ELSE :'A'::uuid END, 'title ' || g
  FROM generate_series(1, 50) g;

-- pull every page of one bucket as a user: {"rows": {pk: row}, "calls": policy calls}
CREATE FUNCTION rf.pull_all(sub text, lim int, VARIADIC owners text[]) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE cur text := '0'; page jsonb; rows jsonb := '{}'; c0 bigint;
BEGIN
	PERFORM set_config('request.jwt.claims', json_build_object('sub', sub, 'role', 'authenticated')::text, true);
	c0 := nextval('rf.calls');
	LOOP
		page := kizunasync.pull((SELECT jsonb_agg(jsonb_build_object('table', 'rf_t',
				'params', jsonb_build_object('owner_id', o))) FROM unnest(owners) o), cur, 1, lim);
		rows := rows || coalesce((SELECT jsonb_object_agg(r ->> 'pk', r -> 'row')
									FROM jsonb_array_elements(page -> 'rows') r), '{}');
		cur := page ->> 'cursor';
		EXIT WHEN NOT (page ->> 'has_more')::boolean;
	END LOOP;
	RETURN jsonb_build_object('rows', rows, 'calls', nextval('rf.calls') - c0 - 1);
END $$;
GRANT EXECUTE ON FUNCTION rf.pull_all(text, int, text[]) TO authenticated;
CREATE FUNCTION rf.direct(sub text, owner uuid) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
	PERFORM set_config('request.jwt.claims', json_build_object('sub', sub, 'role', 'authenticated')::text, true);
	SELECT coalesce(jsonb_object_agg(id::text, to_jsonb(t)), '{}') INTO r FROM rf.t t WHERE owner_id = owner;
	RETURN r;
END $$;
GRANT EXECUTE ON FUNCTION rf.direct(text, uuid) TO authenticated;

SET ROLE authenticated;
CREATE TEMP TABLE got AS SELECT rf.pull_all(:'A', 500, :'A') AS p;
SELECT is((SELECT p -> 'rows' FROM got), rf.direct(:'A', :'A'),
	'own bucket in one page: the rows the caller can SELECT');
SELECT cmp_ok((SELECT (p ->> 'calls')::int FROM got), '<=', 2,
	'the policy function ran once per render statement, not once per row (40 rows)');
SELECT is(rf.pull_all(:'A', 7, :'A') -> 'rows', rf.direct(:'A', :'A'),
	'own bucket in pages of 7: the same rows');
SELECT is(rf.pull_all(:'A', 500, :'B') -> 'rows', '{}'::jsonb,
	'another owner''s bucket: no rows (the policy hides them)');
RESET ROLE;

-- a row moved out of the bucket after a bootstrap is not delivered to it
UPDATE rf.t SET owner_id = :'B' WHERE id = 1;
SET ROLE authenticated;
SELECT is(rf.pull_all(:'A', 500, :'A') -> 'rows', rf.direct(:'A', :'A'),
	'after a move-out: the rows the caller can SELECT in the bucket');
SELECT ok(NOT (rf.pull_all(:'A', 500, :'A') -> 'rows') ? '1', 'the moved row is not among them');
RESET ROLE;

-- an index on the bucket column (the policy may become its index condition)
CREATE INDEX ON rf.t (owner_id);
SET ROLE authenticated;
SELECT is(rf.pull_all(:'A', 7, :'A') -> 'rows', rf.direct(:'A', :'A'),
	'indexed bucket column: the same rows');
RESET ROLE;
DROP INDEX rf.t_owner_id_idx;
-- two entries of the table: rows of either bucket qualify, no equality
SET ROLE authenticated;
DROP TABLE got;
CREATE TEMP TABLE got AS SELECT rf.pull_all(:'A', 500, :'A', :'B') AS p;
SELECT is((SELECT p -> 'rows' FROM got), rf.direct(:'A', :'A'),
	'buckets A and B as A: the rows A can SELECT');
SELECT cmp_ok((SELECT (p ->> 'calls')::int FROM got), '>=', 39,
	'two entries of the table: the policy function ran per row');
RESET ROLE;

SELECT * FROM finish();
DROP SCHEMA rf CASCADE;
