-- Column names that are also the aliases of kizunasync's caller-side SQL.
-- Pull and push render rows with statements such as
--   SELECT r.id, to_jsonb(r) FROM (SELECT ... FROM ONLY tbl t ...) r
-- and a bare "r" in an expression names a column r before it names the
-- row r: a table with a column called r, t, u, e or o must still be
-- pulled and pushed exactly as a direct query by the caller sees it (found
-- by the issue 10 review: the row was rendered as its column r, or
-- silently dropped when that column was NULL).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT plan(9);

CREATE SCHEMA ac;
GRANT USAGE ON SCHEMA ac TO authenticated;
-- integer key (the "key = ANY" render), composite key (the ROWS FROM render)
CREATE TABLE ac.one (id int PRIMARY KEY, owner_id uuid NOT NULL, r text, t int, u text, e text, o int, a1 int);
CREATE TABLE ac.two (r text, t int, owner_id uuid NOT NULL, u text, e int, o text, a1 text, PRIMARY KEY (r, t));
DO $$
DECLARE x text;
BEGIN
	FOREACH x IN ARRAY ARRAY['one', 'two'] LOOP
		EXECUTE format('ALTER TABLE ac.%I ENABLE ROW LEVEL SECURITY', x);
		EXECUTE format('CREATE POLICY own ON ac.%I USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid())', x);
		EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ac.%I TO authenticated', x);
		PERFORM kizunasync.sync_table(('ac.' || x)::regclass, bucket_column => 'owner_id', table_name => 'ac_' || x,
			key_columns => CASE x WHEN 'two' THEN '{r,t}'::text[] ELSE '{id}'::text[] END, wakeup => false);
	END LOOP;
END $$;
\set A '00000000-0000-4000-8000-ac0000000001'
INSERT INTO ac.one VALUES (1, :'A', 'rr', 2, 'uu', 'ee', 3, 4), (2, :'A', NULL, NULL, NULL, NULL, 0, NULL);
INSERT INTO ac.two VALUES ('k1', 1, :'A', 'uu', 5, 'oo', 'x'), ('k2', 2, :'A', NULL, NULL, NULL, NULL);

CREATE FUNCTION ac.pull(t text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('request.jwt.claims', json_build_object('sub', '00000000-0000-4000-8000-ac0000000001', 'role', 'authenticated')::text, true);
	RETURN kizunasync.pull(jsonb_build_array(jsonb_build_object('table', t, 'params',
		jsonb_build_object('owner_id', '00000000-0000-4000-8000-ac0000000001'))), '0', 1, 500);
END $$;
CREATE FUNCTION ac.push(batch jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('request.jwt.claims', json_build_object('sub', '00000000-0000-4000-8000-ac0000000001', 'role', 'authenticated')::text, true);
	RETURN kizunasync.push(batch, NULL, 1);
END $$;
CREATE FUNCTION ac.rows(p jsonb) RETURNS jsonb LANGUAGE sql AS $$
	SELECT coalesce(jsonb_agg(x -> 'row' ORDER BY x ->> 'pk'), '[]') FROM jsonb_array_elements(p -> 'rows') x $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ac TO authenticated;

SELECT set_config('request.jwt.claims', json_build_object('sub', :'A', 'role', 'authenticated')::text, false) IS NOT NULL AS claims \gset
SET ROLE authenticated;
SELECT is(ac.rows(ac.pull('ac_one')),
	(SELECT jsonb_agg(to_jsonb(x) ORDER BY x.id::text) FROM ac.one x),
	'integer key: every row is delivered as to_jsonb renders it, columns named r, t, u, e, o, a1 included');
SELECT is(ac.rows(ac.pull('ac_two')),
	(SELECT jsonb_agg(to_jsonb(x) ORDER BY jsonb_build_array(x.r, x.t::text)::text) FROM ac.two x),
	'composite key (r, t): every row is delivered as to_jsonb renders it');

-- push: an update with a precondition on column r, and a transform whose
-- server_row is rendered back
SELECT ac.push('{"atomic": false, "mutations": [
	{"mutation_id": "00000000-0000-4000-8000-ac00000000a1", "table": "ac_one", "pk": "1", "op": "update",
	 "columns": {"u": "pushed"}, "precondition": {"r": "rr", "t": 2}},
	{"mutation_id": "00000000-0000-4000-8000-ac00000000a2", "table": "ac_one", "pk": "2", "op": "update",
	 "columns": {"r": "now set"}, "transforms": {"o": {"op": "increment", "by": 1}}},
	{"mutation_id": "00000000-0000-4000-8000-ac00000000a3", "table": "ac_one", "pk": "1", "op": "update",
	 "columns": {"u": "not applied"}, "precondition": {"r": "something else"}}]}'::jsonb) AS res \gset
SELECT is(jsonb_path_query_array(:'res'::jsonb, '$.verdicts[*].verdict'), '["applied", "applied", "rejected"]'::jsonb,
	'push: a precondition on column r holds, and a false one is rejected');
SELECT is(jsonb_path_query_first(:'res'::jsonb, '$.verdicts[2].reason'), '"PRECONDITION"'::jsonb,
	'push: the false precondition on column r is PRECONDITION');
SELECT is(jsonb_path_query_first(:'res'::jsonb, '$.verdicts[1].server_row'),
	(SELECT to_jsonb(x) FROM ac.one x WHERE id = 2),
	'push: the server_row of a transform is the whole row, columns r and o included');
SELECT is((SELECT u || '|' || r FROM ac.one WHERE id = 1), 'pushed|rr',
	'push: the row with the true precondition was updated');
SELECT ac.push('{"atomic": false, "mutations": [
	{"mutation_id": "00000000-0000-4000-8000-ac00000000b1", "table": "ac_two", "pk": "[\"k3\", \"3\"]", "op": "insert",
	 "columns": {"r": "k3", "t": 3, "owner_id": "00000000-0000-4000-8000-ac0000000001", "u": "new"}},
	{"mutation_id": "00000000-0000-4000-8000-ac00000000b2", "table": "ac_two", "pk": "[\"k2\", \"2\"]", "op": "delete"}]}'::jsonb) AS res2 \gset
SELECT is(jsonb_path_query_array(:'res2'::jsonb, '$.verdicts[*].verdict'), '["applied", "applied"]'::jsonb,
	'push: insert and delete of a table keyed by columns r and t apply');
SELECT is((SELECT jsonb_agg(r ORDER BY r) FROM ac.two), '["k1", "k3"]'::jsonb,
	'push: the table holds what the pushes left');
SELECT is(ac.rows(ac.pull('ac_two')),
	(SELECT jsonb_agg(to_jsonb(x) ORDER BY jsonb_build_array(x.r, x.t::text)::text) FROM ac.two x),
	'composite key (r, t): a pull after the pushes delivers the table');
RESET ROLE;

SELECT * FROM finish();
SELECT set_config('request.jwt.claims', '', false) IS NOT NULL AS reset_claims \gset
DROP SCHEMA ac CASCADE;
