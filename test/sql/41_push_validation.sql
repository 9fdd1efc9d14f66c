-- kizunasync.push: whole-batch guards, shape validation, limits (at the
-- limit and one past), transforms on every numeric and array type, hlc mode
-- with the skew clamp.  Nothing is applied by a refused batch.
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE SCHEMA pv;
CREATE FUNCTION pv.push(batch jsonb, sv integer DEFAULT 1)
RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('request.jwt.claims',
		'{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', true);
	SET LOCAL ROLE authenticated;
	RETURN kizunasync.push(batch, NULL, sv);
END $$;
-- one mutation around a table, pk and extra keys
CREATE FUNCTION pv.m(tbl text, pk text, op text, extra jsonb DEFAULT '{}', mid text DEFAULT '00000000-0000-4000-8000-f10000000001')
RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_build_object('mutation_id', mid, 'table', tbl, 'pk', pk, 'op', op) || extra
$$;
-- the error of a push, as "SQLSTATE: message" (or the result)
CREATE FUNCTION pv.try(batch jsonb) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	RETURN pv.push(batch)::text;
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
GRANT USAGE ON SCHEMA pv TO authenticated;
CREATE TABLE public.nums (
	id bigint PRIMARY KEY, owner_id uuid NOT NULL DEFAULT '00000000-0000-4000-8000-a10000000001',
	i2 smallint, i4 integer, i8 bigint, n numeric, f4 real, f8 double precision,
	t text, ta text[], ia integer[], ba boolean[], na numeric[]);
CREATE TABLE public.ro (id bigint PRIMARY KEY, owner_id uuid);
CREATE TABLE public.clock (id bigint PRIMARY KEY, title text, done boolean);
CREATE TABLE public.unsynced (id bigint PRIMARY KEY);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.nums, public.ro, public.clock, public.unsynced TO authenticated;
SELECT kizunasync.sync_table('public.nums') >= 0 AS synced,
	   kizunasync.sync_table('public.ro', sync_mode => 'pull-only') >= 0 AS synced_ro,
	   kizunasync.sync_table('public.clock', conflict_mode => 'hlc') >= 0 AS synced_hlc;
RESET client_min_messages;

-- envelope
SELECT pv.push('[]');
SELECT pv.push('{"atomic": "yes", "mutations": []}');
SELECT pv.push('{"mutations": {}}');
SELECT pv.push('{"mutations": [], "extra": 1}');
SELECT pv.push('{}');
SELECT pv.push(NULL);
-- shape, one problem each
SELECT pv.try(jsonb_build_object('mutations', jsonb_build_array(m))) FROM (VALUES
	('1'::jsonb),
	(pv.m('nums', '1', 'insert', '{"mutation_id": "not-a-uuid"}')),
	(pv.m('nums', '1', 'upsert')),
	(pv.m('nums', '1', 'insert', '{"table": 5}')),
	(pv.m('nums', '', 'insert')),
	(pv.m('nums', '01', 'insert')),
	(pv.m('nums', '1', 'insert', '{"columns": []}')),
	(pv.m('nums', '1', 'update', '{"transforms": []}')),
	(pv.m('nums', '1', 'insert', '{"transforms": {"i4": {"op": "increment", "by": 1}}}')),
	(pv.m('nums', '1', 'update', '{"transforms": {"i4": {"op": "multiply", "by": 2}}}')),
	(pv.m('nums', '1', 'update', '{"transforms": {"i4": {"op": "increment", "by": "1e3"}}}')),
	(pv.m('nums', '1', 'update', '{"transforms": {"ta": {"op": "arrayUnion", "values": []}}}')),
	(pv.m('nums', '1', 'update', '{"transforms": {"ta": {"op": "arrayUnion", "values": [["x"]]}}}')),
	(pv.m('nums', '1', 'update', '{"columns": {"i4": 1}, "transforms": {"i4": {"op": "increment", "by": 1}}}')),
	(pv.m('nums', '1', 'update', '{"transforms": {"id": {"op": "increment", "by": 1}}}')),
	(pv.m('nums', '1', 'update', '{"surprise": true}')),
	(pv.m('nums', '1', 'update', '{"base_hint": {"anything": 1}, "columns": {"t": "hint ignored"}}')),
	(pv.m('nums', '1', 'delete', '{"columns": {"t": "x"}}')),
	(pv.m('clock', '1', 'insert', '{"columns": {"title": "x"}}')),
	(pv.m('clock', '1', 'insert', '{"columns": {"title": "x"}, "hlc": "yesterday"}')),
	(pv.m('unsynced', '1', 'insert')),
	(pv.m('verdicts', '1', 'insert')),
	(pv.m('nums; drop table nums', '1', 'insert')),
	(pv.m('ro', '1', 'insert'))
) AS v(m);
-- the first malformed mutation is named by its position
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(
	pv.m('nums', '2', 'insert'), pv.m('nums', '3', 'merge'))));
SELECT count(*) AS nothing_applied FROM public.nums;

-- schema gate first: a stale (even malformed) batch gets RESET_REQUIRED
UPDATE kizunasync.synced_tables SET min_schema_version = 2 WHERE table_name = 'nums';
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '01', 'merge'))), 1);
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'insert'))), NULL);
UPDATE kizunasync.synced_tables SET min_schema_version = 1 WHERE table_name = 'nums';

-- batch size: at the limit and one past; require_atomic
SELECT kizunasync.configure(max_batch_size => 3) IS NOT NULL AS configured;
SELECT jsonb_array_length(pv.push(jsonb_build_object('mutations',
	(SELECT jsonb_agg(pv.m('nums', g::text, 'insert', '{}', '00000000-0000-4000-8000-f1000000010' || g)) FROM generate_series(1, 3) g))) -> 'verdicts') AS applied;
SELECT pv.push(jsonb_build_object('mutations',
	(SELECT jsonb_agg(pv.m('nums', g::text, 'insert', '{}', '00000000-0000-4000-8000-f1000000020' || g)) FROM generate_series(1, 4) g)));
SELECT kizunasync.configure(max_batch_size => 500, require_atomic => true) IS NOT NULL AS configured;
SELECT pv.push('{"mutations": []}');
SELECT pv.push('{"atomic": true, "mutations": []}');
SELECT kizunasync.configure(require_atomic => false) IS NOT NULL AS configured;

-- limits: values per transform, pk bytes, string bytes, column name bytes
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('transforms', jsonb_build_object('ta', jsonb_build_object('op', 'arrayUnion',
		'values', (SELECT jsonb_agg(g::text) FROM generate_series(1, 1000) g)))), '00000000-0000-4000-8000-f10000000301'))))
	-> 'verdicts' -> 0 -> 'verdict' AS at_1000_values;
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('transforms', jsonb_build_object('ta', jsonb_build_object('op', 'arrayUnion',
		'values', (SELECT jsonb_agg(g::text) FROM generate_series(1, 1001) g)))))))) AS past_1000_values;
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', repeat('1', 1025), 'insert'))));
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('columns', jsonb_build_object('t', repeat('x', 1048576))), '00000000-0000-4000-8000-f10000000302'))))
	-> 'verdicts' -> 0 -> 'verdict' AS at_string_limit;
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('columns', jsonb_build_object('t', repeat('x', 1048577)))))));
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('columns', jsonb_build_object(repeat('c', 64), 1))))));
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('columns', jsonb_build_object(repeat('c', 63), 1)), '00000000-0000-4000-8000-f10000000303'))))
	-> 'verdicts' -> 0 ->> 'reason' AS name_at_limit;
-- pk of 1024 bytes passes the length check (and is then not canonical)
SELECT pv.try(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', repeat('1', 1024), 'insert'))));
-- 1600 column entries pass (unknown columns: COLUMN_DENIED), 1601 do not
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('columns', (SELECT jsonb_object_agg('c' || g, g) FROM generate_series(1, 1600) g)), '00000000-0000-4000-8000-f10000000305'))))
	-> 'verdicts' -> 0 ->> 'reason' AS columns_1600;
SELECT pv.try(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('columns', (SELECT jsonb_object_agg('c' || g, g) FROM generate_series(1, 1601) g))))));
-- an hlc of 128 bytes passes, 129 do not
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('clock', '9', 'insert',
	jsonb_build_object('columns', '{"title": "h"}'::jsonb, 'hlc', '2026-01-01T00:00:01.000Z|0|' || repeat('n', 101)), '00000000-0000-4000-8000-f10000000306'))))
	-> 'verdicts' -> 0 ->> 'verdict' AS hlc_128;
DELETE FROM public.clock WHERE id = 9;
DELETE FROM kizunasync.row_hlc WHERE table_name = 'clock' AND pk = '9';
SELECT pv.try(jsonb_build_object('mutations', jsonb_build_array(pv.m('clock', '9', 'insert',
	jsonb_build_object('columns', '{"title": "h"}'::jsonb, 'hlc', '2026-01-01T00:00:01.000Z|0|' || repeat('n', 102))))));
-- a batch over 16 MiB is refused before it is parsed
SELECT pv.try(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('columns', (SELECT jsonb_object_agg('c' || g, repeat('x', 1048576)) FROM generate_series(1, 17) g))))));
-- nesting inside a value: 32 levels pass (and meet the column type), 33 do not
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('columns', jsonb_build_object('t', (repeat('[', 32) || repeat(']', 32))::jsonb)), '00000000-0000-4000-8000-f10000000304'))))
	-> 'verdicts' -> 0 ->> 'verdict' AS depth_32;
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	jsonb_build_object('columns', jsonb_build_object('t', (repeat('[', 33) || repeat(']', 33))::jsonb))))));

-- errors inside a unit: a trigger's RAISE (P0001) is CONSTRAINT; an
-- internal error is an error of the call, never a verdict
CREATE FUNCTION pv.guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.t = 'raise' THEN RAISE EXCEPTION 'no raise'; END IF;
	IF NEW.t = 'internal' THEN RAISE EXCEPTION 'internal trouble' USING ERRCODE = 'XX000'; END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER guard BEFORE UPDATE ON public.nums FOR EACH ROW EXECUTE FUNCTION pv.guard();
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update',
	'{"columns": {"t": "raise"}}', '00000000-0000-4000-8000-f10000000307')))) -> 'verdicts' -> 0 ->> 'reason' AS trigger_raise;
SELECT pv.try(jsonb_build_object('mutations', jsonb_build_array(
	pv.m('nums', '2', 'update', '{"columns": {"t": "fine"}}', '00000000-0000-4000-8000-f10000000308'),
	pv.m('nums', '1', 'update', '{"columns": {"t": "internal"}}', '00000000-0000-4000-8000-f10000000309'))));
SELECT count(*) AS nothing_kept FROM kizunasync.verdicts WHERE mutation_id IN ('00000000-0000-4000-8000-f10000000308', '00000000-0000-4000-8000-f10000000309');
DROP TRIGGER guard ON public.nums;

-- transforms on every numeric type (integers and numeric exact)
UPDATE public.nums SET i2 = 1, i4 = 1, i8 = 9223372036854775000, n = 0.1, f4 = 1.5, f8 = 2.5,
	ta = '{b,a,b}', ia = '{1,2}', ba = '{true}', na = '{1.5}' WHERE id = 1;
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update', '{"transforms": {
	"i2": {"op": "increment", "by": 2}, "i4": {"op": "increment", "by": "-3"},
	"i8": {"op": "increment", "by": "807"}, "n": {"op": "increment", "by": "0.2"},
	"f4": {"op": "increment", "by": 1}, "f8": {"op": "increment", "by": "0.25"}}}', '00000000-0000-4000-8000-f10000000401'))))
	-> 'verdicts' -> 0 -> 'server_row' AS after_increments;
-- arrays: union keeps first occurrences (existing duplicates collapse),
-- remove drops every copy; element types are respected
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(pv.m('nums', '1', 'update', '{"transforms": {
	"ta": {"op": "arrayUnion", "values": ["c", "a", 7]}, "ia": {"op": "arrayUnion", "values": [3, "2", 4]},
	"ba": {"op": "arrayUnion", "values": [false]}, "na": {"op": "arrayRemove", "values": ["1.50"]}}}', '00000000-0000-4000-8000-f10000000402'))))
	-> 'verdicts' -> 0 -> 'server_row' AS after_arrays;
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(
	pv.m('nums', '1', 'update', '{"transforms": {"ta": {"op": "arrayRemove", "values": ["b", "zz"]}}}', '00000000-0000-4000-8000-f10000000403'),
	pv.m('nums', '1', 'update', '{"transforms": {"ia": {"op": "arrayUnion", "values": ["x"]}}}', '00000000-0000-4000-8000-f10000000404'),
	pv.m('nums', '1', 'update', '{"transforms": {"i4": {"op": "arrayUnion", "values": [1]}}}', '00000000-0000-4000-8000-f10000000405'),
	pv.m('nums', '1', 'update', '{"transforms": {"i2": {"op": "increment", "by": 40000}}}', '00000000-0000-4000-8000-f10000000406'),
	pv.m('nums', '2', 'update', '{"transforms": {"i4": {"op": "increment", "by": 1}}}', '00000000-0000-4000-8000-f10000000407'))))
	-> 'verdicts';
SELECT i2, i4, i8, n, ta, ia FROM public.nums WHERE id = 1;

-- hlc mode: newer clock wins per column, older loses (SUPERSEDED when
-- every column loses), a clock far ahead of the server is clamped
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(
	pv.m('clock', '1', 'insert', '{"columns": {"title": "a", "done": false}, "hlc": "2026-01-01T00:00:02.000Z|0|node-a"}', '00000000-0000-4000-8000-f10000000501'),
	pv.m('clock', '1', 'update', '{"columns": {"title": "older"}, "hlc": "2026-01-01T00:00:01.000Z|9|node-b"}', '00000000-0000-4000-8000-f10000000502'),
	pv.m('clock', '1', 'update', '{"columns": {"title": "tie"}, "hlc": "2026-01-01T00:00:02.000Z|0|node-a"}', '00000000-0000-4000-8000-f10000000503'),
	pv.m('clock', '1', 'update', '{"columns": {"title": "counter wins", "done": true}, "hlc": "2026-01-01T00:00:02.000Z|10|node-a"}', '00000000-0000-4000-8000-f10000000504'),
	pv.m('clock', '1', 'update', '{"columns": {"title": "future"}, "hlc": "2999-01-01T00:00:00.000Z|1|node-c"}', '00000000-0000-4000-8000-f10000000505'))))
	-> 'verdicts';
SELECT title, done FROM public.clock;
SELECT substr(column_hlc ->> 'title', 1, 4) = to_char(now() AT TIME ZONE 'UTC', 'YYYY') AS clamped_to_now,
	   column_hlc ->> 'title' LIKE '%|1|node-c' AS counter_and_node_kept,
	   column_hlc ->> 'done' AS done_clock
  FROM kizunasync.row_hlc WHERE table_name = 'clock';
-- a clock just past the clamp still beats one at the ceiling
SELECT pv.push(jsonb_build_object('mutations', jsonb_build_array(
	pv.m('clock', '1', 'update', '{"columns": {"title": "later future"}, "hlc": "2999-06-01T00:00:00.000Z|0|node-d"}', '00000000-0000-4000-8000-f10000000506'))))
	-> 'verdicts' -> 0 ->> 'verdict' AS after_clamp;

SELECT kizunasync.unsync_table(t) FROM unnest('{public.nums,public.ro,public.clock}'::regclass[]) t;
DROP TABLE public.nums, public.ro, public.clock, public.unsynced;
DELETE FROM kizunasync.verdicts;
DELETE FROM kizunasync.row_hlc;
DROP SCHEMA pv CASCADE;
