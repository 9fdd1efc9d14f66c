-- pgTAP: a table of bad requests to kizunasync.pull and kizunasync.push.
-- Each case is one SQL statement run as `authenticated` (user a, with a
-- session_id claim so a call that got far enough would register a client);
-- it must fail with the expected SQLSTATE and message, and leave nothing
-- behind: the bookkeeping tables, the application table and the
-- non-transactional change_seq (a number drawn before validation would show
-- there) are compared before and after.  Limits missing from
-- test/sql/30_pull_gates.sql, 41_push_validation.sql and 10_cursor.sql are
-- tested here at the limit (accepted) and one past it (refused).
-- Runs in the shared pgTAP database; everything it creates is dropped at the
-- end.  The limits are listed in decisions/0070-hostile-input.md.
SET client_min_messages = warning;
CREATE SCHEMA bi;
CREATE TABLE public.bi_notes (id uuid PRIMARY KEY, owner_id uuid NOT NULL, body text, n integer, tags text[]);
ALTER TABLE public.bi_notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.bi_notes FOR ALL TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.bi_notes TO authenticated;
CREATE TABLE public.bi_plain (id bigint PRIMARY KEY, v text);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.bi_plain TO authenticated;
SELECT kizunasync.sync_table('public.bi_notes', bucket_column => 'owner_id');
SELECT kizunasync.sync_table('public.bi_plain');
INSERT INTO public.bi_notes VALUES
	('00000000-0000-4000-8000-b10000000001', '00000000-0000-4000-8000-a10000000001', 'a row', 1, '{x}'),
	('00000000-0000-4000-8000-b10000000002', '00000000-0000-4000-8000-a10000000002', 'b row', 2, '{y}');
INSERT INTO public.bi_plain VALUES (1, 'one');

-- everything a call could leave behind, as one text
CREATE FUNCTION bi.snapshot() RETURNS text LANGUAGE sql AS $$
	SELECT concat_ws(E'\n',
		(SELECT last_value || '/' || is_called FROM kizunasync.change_seq),
		(SELECT string_agg(x::text, ',' ORDER BY x::text) FROM kizunasync.changelog x),
		(SELECT string_agg(x::text, ',' ORDER BY x::text) FROM kizunasync.tombstones x),
		(SELECT string_agg(x::text, ',' ORDER BY x::text) FROM kizunasync.bucket_grants x),
		(SELECT string_agg(x::text, ',' ORDER BY x::text) FROM kizunasync.row_hlc x),
		(SELECT string_agg(x::text, ',' ORDER BY x::text) FROM kizunasync.conflict_journal x),
		(SELECT string_agg(x::text, ',' ORDER BY x::text) FROM kizunasync.verdicts x),
		(SELECT string_agg(x::text, ',' ORDER BY x::text) FROM kizunasync.clients x),
		(SELECT string_agg(x::text, ',' ORDER BY x::text) FROM kizunasync.synced_tables x),
		(SELECT string_agg(x::text, ',' ORDER BY x::text) FROM public.bi_notes x),
		(SELECT string_agg(x::text, ',' ORDER BY x::text) FROM public.bi_plain x))
$$;

-- run one statement as user a; its error (or 'OK <result>') and whether
-- anything changed
CREATE FUNCTION bi.run(call text, OUT outcome text, OUT changed boolean) LANGUAGE plpgsql AS $$
DECLARE
	before text := bi.snapshot();
	st text;
	msg text;
	res text;
BEGIN
	BEGIN
		PERFORM set_config('request.jwt.claims',
			'{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated",'
			' "session_id": "00000000-0000-4000-8000-5e0000000001"}', true);
		SET LOCAL ROLE authenticated;
		EXECUTE call INTO res;
		RESET ROLE;
		outcome := 'OK ' || coalesce(res, '<null>');
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
		outcome := st || ': ' || msg;
	END;
	RESET ROLE;
	PERFORM set_config('request.jwt.claims', '', true);
	changed := bi.snapshot() IS DISTINCT FROM before;
END $$;

-- shorthands used by the cases (run as the caller)
CREATE FUNCTION bi.pull(b jsonb, cur text DEFAULT '0', sv integer DEFAULT 1, lim integer DEFAULT 500)
RETURNS text LANGUAGE sql AS $$ SELECT kizunasync.pull(b, cur, sv, lim)::text $$;
CREATE FUNCTION bi.push(b jsonb, sv integer DEFAULT 1) RETURNS text LANGUAGE sql AS $$
	SELECT kizunasync.push(b, NULL, sv)::text $$;
-- one update mutation of a's row with extra keys
CREATE FUNCTION bi.upd(extra jsonb, mid text DEFAULT '00000000-0000-4000-8000-f70000000001') RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_build_object('mutations', jsonb_build_array(jsonb_build_object(
		'mutation_id', mid, 'table', 'bi_notes', 'pk', '00000000-0000-4000-8000-b10000000001',
		'op', 'update') || extra))
$$;
-- a's bucket
CREATE FUNCTION bi.a() RETURNS jsonb LANGUAGE sql AS $$
	SELECT '[{"table": "bi_notes", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001"}}]'::jsonb $$;
GRANT USAGE ON SCHEMA bi TO authenticated;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA bi TO authenticated;

-- the cases: statement, expected SQLSTATE, expected message (LIKE pattern)
CREATE TABLE bi.cases (id serial PRIMARY KEY, what text NOT NULL, call text NOT NULL,
					   want_state text NOT NULL, want_msg text NOT NULL);
INSERT INTO bi.cases (what, call, want_state, want_msg) VALUES
-- pull: malformed shapes and wrong types
('pull: buckets is an object', $c$SELECT bi.pull('{"table": "bi_notes"}')$c$, '22023', 'buckets must be a JSON array'),
('pull: buckets is a string', $c$SELECT bi.pull('"bi_notes"')$c$, '22023', 'buckets must be a JSON array'),
('pull: buckets is a number', $c$SELECT bi.pull('7')$c$, '22023', 'buckets must be a JSON array'),
('pull: buckets is JSON null', $c$SELECT bi.pull('null')$c$, '22023', 'buckets must be a JSON array'),
('pull: buckets is true', $c$SELECT bi.pull('true')$c$, '22023', 'buckets must be a JSON array'),
('pull: an entry is null', $c$SELECT bi.pull('[null]')$c$, '22023', 'buckets[0] must be a JSON object'),
('pull: an entry is an array', $c$SELECT bi.pull('[[]]')$c$, '22023', 'buckets[0] must be a JSON object'),
('pull: the second entry is a string', $c$SELECT bi.pull('[{"table": "bi_plain"}, "bi_notes"]')$c$, '22023', 'buckets[1] must be a JSON object'),
('pull: table is null', $c$SELECT bi.pull('[{"table": null}]')$c$, '22023', 'buckets[0] must name a table'),
('pull: table is an array', $c$SELECT bi.pull('[{"table": ["bi_plain"]}]')$c$, '22023', 'buckets[0] must name a table'),
('pull: table is true', $c$SELECT bi.pull('[{"table": true}]')$c$, '22023', 'buckets[0] must name a table'),
('pull: params is null', $c$SELECT bi.pull('[{"table": "bi_plain", "params": null}]')$c$, '22023', 'buckets[0]: params must be a JSON object'),
('pull: params is a string', $c$SELECT bi.pull('[{"table": "bi_plain", "params": "owner_id"}]')$c$, '22023', 'buckets[0]: params must be a JSON object'),
('pull: unknown key in an entry', $c$SELECT bi.pull('[{"table": "bi_plain", "where": "1=1"}]')$c$, '22023', 'buckets[0] has an unknown key%'),
-- client text in a message is quoted and escaped (quote.h): a quote, a newline, non-ASCII
-- (LIKE patterns: \\ matches one backslash)
('pull: an unknown key with a quote and a newline is escaped', $c$SELECT bi.pull('[{"table": "bi_plain", "a\"b\nc": 1}]')$c$, '22023', 'buckets[0] has an unknown key "a\\"b\\x0ac"'),
('pull: a non-ASCII param name is escaped', $c$SELECT bi.pull('[{"table": "bi_plain", "params": {"é\"": 1}}]')$c$, '22023', 'table "bi_plain" has no column "\\xc3\\xa9\\""'),
('push: a table name with a newline is escaped', $c$SELECT bi.push(bi.upd('{"table": "bi\nnotes"}'))$c$, '22023', 'mutation 1 of the batch is malformed: table "bi\\x0anotes" is not synced'),
('push: an unknown key with a quote is escaped', $c$SELECT bi.push(bi.upd('{"columns": {"body": "x"}, "wh\"ere": "true"}'))$c$, '22023', 'mutation 1 of the batch is malformed: unknown key "wh\\"ere"'),
-- pull: numbers
('pull: a param beyond a double (1e400)', $c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": null, "n": 1e400}}]')$c$, '22003', 'a number in buckets is out of range'),
('pull: a param of 2^63', $c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": null, "n": 9223372036854775808}}]')$c$, '22003', 'a number in buckets is out of range'),
('pull: a param below -2^63', $c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": null, "n": -9223372036854775809}}]')$c$, '22003', 'a number in buckets is out of range'),
('pull: a fraction param', $c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": null, "n": 0.5}}]')$c$, '22023', 'buckets[0]: param "n" has an unsupported value type'),
('pull: int64 max into an int4 column', $c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": null, "n": 9223372036854775807}}]')$c$, '22003', '%out of range%'),
('pull: "NaN" for an integer param', $c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": null, "n": "NaN"}}]')$c$, '22P02', 'invalid input syntax for type integer: "NaN"'),
('pull: "Infinity" for an integer param', $c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": null, "n": "Infinity"}}]')$c$, '22P02', 'invalid input syntax for type integer: "Infinity"'),
('pull: "NaN" for the uuid bucket', $c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": "NaN"}}]')$c$, '22P02', 'invalid input syntax for type uuid: "NaN"'),
('pull: a float8 Infinity built into the jsonb (jsonb holds it as the string "Infinity")', $c$SELECT bi.pull(jsonb_build_array(jsonb_build_object('table', 'bi_notes', 'params', jsonb_build_object('owner_id', NULL, 'n', 'Infinity'::float8))))$c$, '22P02', 'invalid input syntax for type integer: "Infinity"'),
('pull: a NaN token is not JSON (refused by jsonb input)', $c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": NaN}}]')$c$, '22P02', 'invalid input syntax for type json'),
('pull: an Infinity token is not JSON (refused by jsonb input)', $c$SELECT bi.pull('[{"table": "bi_notes", "params": {"n": Infinity}}]')$c$, '22P02', 'invalid input syntax for type json'),
-- pull: strings that cannot reach us
('pull: \u0000 in a string (refused by jsonb input)', $c$SELECT bi.pull('[{"table": "bi_notes\u0000"}]')$c$, '22P05', 'unsupported Unicode escape sequence'),
('pull: invalid UTF-8 (refused by the encoding check)', $c$SELECT bi.pull(convert_from('\x5b7b227461626c65223a2022ff227d5d', 'UTF8')::jsonb)$c$, '22021', 'invalid byte sequence for encoding "UTF8": 0xff%'),
('pull: a lone surrogate escape (refused by jsonb input)', $c$SELECT bi.pull('[{"table": "\ud800"}]')$c$, '22P02', 'invalid input syntax for type json'),
('pull: a control character in a table name (escaped in the message)', $c$SELECT bi.pull('[{"table": "bi_notes\u0001"}]')$c$, '22023', 'table "bi_notes\\x01" is not synced'),
-- pull: nesting
('pull: 10,000 levels of nesting', $c$SELECT bi.pull((repeat('[', 10000) || repeat(']', 10000))::jsonb)$c$, '22023', 'buckets is nested too deeply'),
('pull: depth 4 (one past the limit of 3)', $c$SELECT bi.pull('[{"table": "bi_plain", "params": {"v": ["x"]}}]')$c$, '22023', 'buckets is nested too deeply'),
-- pull: SQL metacharacters in names
('pull: a quote and semicolon in a table name', $c$SELECT bi.pull('[{"table": "bi_plain\"; DROP TABLE public.bi_plain; --"}]')$c$, '22023', 'table "bi_plain\\"; DROP TABLE public.bi_plain; --" is not synced'),
('pull: a qualified table name', $c$SELECT bi.pull('[{"table": "public.bi_plain"}]')$c$, '22023', 'table "public.bi_plain" is not synced'),
('pull: a quoted identifier as table name', $c$SELECT bi.pull('[{"table": "\"bi_plain\""}]')$c$, '22023', 'table "\\"bi_plain\\"" is not synced'),
('pull: SQL in a param name', $c$SELECT bi.pull('[{"table": "bi_plain", "params": {"v\" IS NOT NULL OR \"v": 1}}]')$c$, '22023', 'table "bi_plain" has no column "v\\" IS NOT NULL OR \\"v"'),
('pull: a system column as param', $c$SELECT bi.pull('[{"table": "bi_plain", "params": {"ctid": "(0,1)"}}]')$c$, '22023', 'table "bi_plain" has no column "ctid"'),
('pull: an overlong table name (64 bytes)', $c$SELECT bi.pull(jsonb_build_array(jsonb_build_object('table', repeat('x', 64))))$c$, '22023', 'buckets[0]: invalid table name'),
('pull: an overlong multibyte value (1025 bytes in 342 characters)', $c$SELECT bi.pull(jsonb_build_array(jsonb_build_object('table', 'bi_plain', 'params', jsonb_build_object('v', repeat('€', 341) || 'xx'))))$c$, '22023', 'buckets[0]: the value of param "v" is too long'),
-- pull: cursors of every bad shape
('pull: an empty cursor', $c$SELECT bi.pull(bi.a(), '')$c$, '22023', 'invalid cursor token: ""'),
('pull: a NULL cursor', $c$SELECT bi.pull(bi.a(), NULL)$c$, '22023', 'invalid cursor token: null'),
('pull: SQL in a cursor', $c$SELECT bi.pull(bi.a(), '1''; DROP TABLE public.bi_plain; --')$c$, '22023', 'invalid cursor token: "1''; DROP TABLE public.bi_plain; --"'),
('pull: a negative cursor', $c$SELECT bi.pull(bi.a(), '-1')$c$, '22023', 'invalid cursor token: "-1"'),
('pull: a leading space', $c$SELECT bi.pull(bi.a(), ' 5')$c$, '22023', 'invalid cursor token: " 5"'),
('pull: a dangling tilde', $c$SELECT bi.pull(bi.a(), '5~')$c$, '22023', 'invalid cursor token: "5~"'),
('pull: a dangling colon', $c$SELECT bi.pull(bi.a(), ':5')$c$, '22023', 'invalid cursor token: ":5"'),
('pull: a hole at the high-water', $c$SELECT bi.pull(bi.a(), '5~5')$c$, '22023', 'invalid cursor token: "5~5"'),
('pull: unsorted holes', $c$SELECT bi.pull(bi.a(), '9~7.5')$c$, '22023', 'invalid cursor token: "9~7.5"'),
('pull: a JSON number as cursor text', $c$SELECT bi.pull(bi.a(), '5.0')$c$, '22023', 'invalid cursor token: "5.0"'),
('pull: 2^63 as cursor', $c$SELECT bi.pull(bi.a(), '9223372036854775808')$c$, '22023', 'invalid cursor token: "9223372036854775808"'),
('pull: a cursor of 20,000 digits', $c$SELECT bi.pull(bi.a(), repeat('9', 20000))$c$, '22023', 'invalid cursor token: "9999999999999999999999999999999999999999999999999999999999999999"...'),
('pull: a non-ASCII cursor', $c$SELECT bi.pull(bi.a(), '５')$c$, '22023', 'invalid cursor token: "\\xef\\xbc\\x95"'),
('pull: invalid UTF-8 in the cursor (refused by the encoding check)', $c$SELECT bi.pull(bi.a(), convert_from('\x35ff', 'UTF8'))$c$, '22021', 'invalid byte sequence for encoding "UTF8": 0xff'),
('pull: 513 holes through pull (past the 512 limit)', $c$SELECT bi.pull(bi.a(), (SELECT '1000:1001~' || string_agg(i::text, '.' ORDER BY i) FROM generate_series(1, 513) i))$c$, '22023', 'invalid cursor token: "1000:1001~1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16.17.18.19.20.21."...'),
-- pull: other arguments
('pull: limit 0', $c$SELECT bi.pull(bi.a(), '0', 1, 0)$c$, '22023', 'limit must be between 1 and 5000'),
('pull: limit 2^31-1', $c$SELECT bi.pull(bi.a(), '0', 1, 2147483647)$c$, '22023', 'limit must be between 1 and 5000'),
('pull: limit as "NaN" (refused by the integer cast)', $c$SELECT kizunasync.pull(bi.a(), '0', 1, 'NaN')::text$c$, '22P02', 'invalid input syntax for type integer: "NaN"'),
('pull: client_id that is not a uuid (refused by the uuid cast)', $c$SELECT kizunasync.pull(bi.a(), '0', 1, 500, 'client-1')::text$c$, '22P02', 'invalid input syntax for type uuid: "client-1"'),
-- push: malformed shapes and wrong types
('push: batch is an array', $c$SELECT bi.push('[]')$c$, '22023', 'batch is not a JSON object'),
('push: batch is a string', $c$SELECT bi.push('"x"')$c$, '22023', 'batch is not a JSON object'),
('push: batch is JSON null', $c$SELECT bi.push('null')$c$, '22023', 'batch is not a JSON object'),
('push: batch is a number', $c$SELECT bi.push('42')$c$, '22023', 'batch is not a JSON object'),
('push: atomic is 1', $c$SELECT bi.push('{"atomic": 1, "mutations": []}')$c$, '22023', 'batch "atomic" is not a boolean'),
('push: atomic is "true"', $c$SELECT bi.push('{"atomic": "true", "mutations": []}')$c$, '22023', 'batch "atomic" is not a boolean'),
('push: mutations is a string', $c$SELECT bi.push('{"mutations": "all"}')$c$, '22023', 'batch "mutations" is not an array'),
('push: a mutation is a number', $c$SELECT bi.push('{"mutations": [7]}')$c$, '22023', 'mutation 1 of the batch is malformed: is not an object'),
('push: a mutation is empty', $c$SELECT bi.push('{"mutations": [{}]}')$c$, '22023', 'mutation 1 of the batch is malformed: mutation_id is not a uuid'),
('push: mutation_id is a number', $c$SELECT bi.push(bi.upd('{"mutation_id": 7}'))$c$, '22023', 'mutation 1 of the batch is malformed: mutation_id is not a uuid'),
('push: mutation_id has SQL in it', $c$SELECT bi.push(bi.upd('{"mutation_id": "1''; DROP TABLE public.bi_notes; --"}'))$c$, '22023', 'mutation 1 of the batch is malformed: mutation_id is not a uuid'),
('push: op is unknown', $c$SELECT bi.push(bi.upd('{"op": "upsert"}'))$c$, '22023', 'mutation 1 of the batch is malformed: op is not insert, update, or delete'),
('push: op is null', $c$SELECT bi.push(bi.upd('{"op": null}'))$c$, '22023', 'mutation 1 of the batch is malformed: op %'),
('push: pk is a number', $c$SELECT bi.push(bi.upd('{"pk": 1}'))$c$, '22023', 'mutation 1 of the batch is malformed: pk is not a non-empty string'),
('push: pk is SQL', $c$SELECT bi.push(bi.upd('{"pk": "x''); DROP TABLE public.bi_notes; --"}'))$c$, '22023', 'mutation 1 of the batch is malformed: pk is not the canonical key text of table "bi_notes"'),
('push: table is an array', $c$SELECT bi.push(bi.upd('{"table": ["bi_notes"]}'))$c$, '22023', 'mutation 1 of the batch is malformed: table is not a string'),
('push: table is qualified', $c$SELECT bi.push(bi.upd('{"table": "public.bi_notes"}'))$c$, '22023', 'mutation 1 of the batch is malformed: table "public.bi_notes" is not synced'),
('push: columns is an array', $c$SELECT bi.push(bi.upd('{"columns": [1]}'))$c$, '22023', 'mutation 1 of the batch is malformed: columns is not an object'),
('push: precondition is a string', $c$SELECT bi.push(bi.upd('{"columns": {"body": "x"}, "precondition": "body = body"}'))$c$, '22023', 'mutation 1 of the batch is malformed: precondition %'),
('push: an unknown mutation key', $c$SELECT bi.push(bi.upd('{"columns": {"body": "x"}, "where": "true"}'))$c$, '22023', 'mutation 1 of the batch is malformed: unknown key "where"'),
('push: an unknown batch key', $c$SELECT bi.push('{"mutations": [], "user_id": "00000000-0000-4000-8000-a10000000002"}')$c$, '22023', 'batch has an unknown key "user_id"'),
('push: transform op unknown', $c$SELECT bi.push(bi.upd('{"transforms": {"tags": {"op": "drop"}}}'))$c$, '22023', 'mutation 1 of the batch is malformed: transform on "tags" is not increment, arrayUnion, or arrayRemove'),
('push: arrayUnion values is a string', $c$SELECT bi.push(bi.upd('{"transforms": {"tags": {"op": "arrayUnion", "values": "x"}}}'))$c$, '22023', 'mutation 1 of the batch is malformed: arrayUnion on "tags" needs a non-empty values array'),
('push: arrayUnion of a nested array', $c$SELECT bi.push(bi.upd('{"transforms": {"tags": {"op": "arrayUnion", "values": [["x"]]}}}'))$c$, '22023', 'mutation 1 of the batch is malformed: arrayUnion on "tags" has a value that is not a string, number, or boolean'),
-- push: numbers
('push: a column value beyond a double (1e400)', $c$SELECT bi.push(bi.upd('{"columns": {"n": 1e400}}'))$c$, '22003', 'a number in batch is out of range'),
('push: an increment by -1e400', $c$SELECT bi.push(bi.upd('{"transforms": {"n": {"op": "increment", "by": -1e400}}}'))$c$, '22003', 'a number in batch is out of range'),
('push: an increment by "NaN"', $c$SELECT bi.push(bi.upd('{"transforms": {"n": {"op": "increment", "by": "NaN"}}}'))$c$, '22023', 'mutation 1 of the batch is malformed: increment on "n" needs a numeric by'),
('push: an increment by "Infinity"', $c$SELECT bi.push(bi.upd('{"transforms": {"n": {"op": "increment", "by": "Infinity"}}}'))$c$, '22023', 'mutation 1 of the batch is malformed: increment on "n" needs a numeric by'),
('push: an increment by "1e5"', $c$SELECT bi.push(bi.upd('{"transforms": {"n": {"op": "increment", "by": "1e5"}}}'))$c$, '22023', 'mutation 1 of the batch is malformed: increment on "n" needs a numeric by'),
('push: an increment by true', $c$SELECT bi.push(bi.upd('{"transforms": {"n": {"op": "increment", "by": true}}}'))$c$, '22023', 'mutation 1 of the batch is malformed: increment on "n" needs a numeric by'),
('push: a numeric NaN built into the jsonb (jsonb holds it as the string "NaN")', $c$SELECT bi.push(bi.upd(jsonb_build_object('transforms', jsonb_build_object('n', jsonb_build_object('op', 'increment', 'by', 'NaN'::numeric)))))$c$, '22023', 'mutation 1 of the batch is malformed: increment on "n" needs a numeric by'),
('push: a NaN token is not JSON (refused by jsonb input)', $c$SELECT bi.push(bi.upd('{"columns": {"n": NaN}}'))$c$, '22P02', 'invalid input syntax for type json'),
('push: hlc is "NaN"', $c$SELECT bi.push(bi.upd('{"columns": {"body": "x"}, "hlc": "NaN"}'))$c$, '22023', 'mutation 1 of the batch is malformed: hlc is not a hybrid logical clock string'),
('push: hlc counter of 19 digits', $c$SELECT bi.push(bi.upd('{"columns": {"body": "x"}, "hlc": "2026-01-01T00:00:00.000Z|9223372036854775808|n"}'))$c$, '22023', 'mutation 1 of the batch is malformed: hlc is not a hybrid logical clock string'),
('push: schema_version as "NaN" (refused by the integer cast)', $c$SELECT kizunasync.push('{"mutations": []}', NULL, 'NaN')::text$c$, '22P02', 'invalid input syntax for type integer: "NaN"'),
('push: last_mutation_id not a uuid (refused by the uuid cast)', $c$SELECT kizunasync.push('{"mutations": []}', 'x', 1)::text$c$, '22P02', 'invalid input syntax for type uuid: "x"'),
-- push: strings that cannot reach us, and nesting
('push: \u0000 in a column value (refused by jsonb input)', $c$SELECT bi.push(bi.upd('{"columns": {"body": "a\u0000b"}}'))$c$, '22P05', 'unsupported Unicode escape sequence'),
('push: invalid UTF-8 in a value (refused by the encoding check)', $c$SELECT bi.push(convert_from('\x7b226d75746174696f6e73223a205b22ff225d7d', 'UTF8')::jsonb)$c$, '22021', 'invalid byte sequence for encoding "UTF8": 0xff%'),
('push: 10,000 levels of nesting in a value', $c$SELECT bi.push(bi.upd(jsonb_build_object('columns', jsonb_build_object('body', (repeat('[', 10000) || repeat(']', 10000))::jsonb))))$c$, '54000', 'batch is nested too deeply'),
('push: 2,000 levels of nesting in a value', $c$SELECT bi.push(bi.upd(jsonb_build_object('columns', jsonb_build_object('body', (repeat('{"a":', 2000) || '1' || repeat('}', 2000))::jsonb))))$c$, '54000', 'mutation 1 of the batch is malformed: columns value of "body" nests deeper than 32 levels'),
('push: 33 levels of nesting in a precondition', $c$SELECT bi.push(bi.upd(jsonb_build_object('columns', '{"body": "x"}'::jsonb, 'precondition', jsonb_build_object('body', (repeat('[', 33) || repeat(']', 33))::jsonb))))$c$, '54000', 'mutation 1 of the batch is malformed: precondition value of "body" nests deeper than 32 levels'),
-- push: SQL metacharacters in identifiers that are refused before any work
('push: SQL in a table name', $c$SELECT bi.push(bi.upd('{"table": "bi_notes\"; DELETE FROM public.bi_notes; --"}'))$c$, '22023', 'mutation 1 of the batch is malformed: table "bi_notes\\"; DELETE FROM public.bi_notes; --" is not synced'),
('push: an overlong column name (64 bytes)', $c$SELECT bi.push(bi.upd(jsonb_build_object('columns', jsonb_build_object(repeat('c', 64), 1))))$c$, '22023', 'mutation 1 of the batch is malformed: %'),
('push: an empty column name', $c$SELECT bi.push(bi.upd('{"columns": {"": 1}}'))$c$, '22023', 'mutation 1 of the batch is malformed: %'),
('push: an overlong transform column name', $c$SELECT bi.push(bi.upd(jsonb_build_object('transforms', jsonb_build_object(repeat('c', 64), '{"op": "increment", "by": 1}'::jsonb))))$c$, '22023', 'mutation 1 of the batch is malformed: %'),
-- limits one past (the at-limit calls are below)
('push: an array of 10,001 elements in a value', $c$SELECT bi.push(bi.upd(jsonb_build_object('columns', jsonb_build_object('tags', (SELECT jsonb_agg(i::text) FROM generate_series(1, 10001) i)))))$c$, '54000', 'mutation 1 of the batch is malformed: columns value of "tags" is an array of more than 10000 elements'),
('push: an object of 10,001 members in a value', $c$SELECT bi.push(bi.upd(jsonb_build_object('columns', jsonb_build_object('body', (SELECT jsonb_object_agg('k' || i, i) FROM generate_series(1, 10001) i)))))$c$, '54000', 'mutation 1 of the batch is malformed: %10000%'),
('push: 1,601 transforms', $c$SELECT bi.push(bi.upd(jsonb_build_object('transforms', (SELECT jsonb_object_agg('c' || i, '{"op": "increment", "by": 1}'::jsonb) FROM generate_series(1, 1601) i))))$c$, '54000', 'mutation 1 of the batch is malformed: transforms has more than 1600 entries'),
('push: 1,601 precondition entries', $c$SELECT bi.push(bi.upd(jsonb_build_object('columns', '{"body": "x"}'::jsonb, 'precondition', (SELECT jsonb_object_agg('c' || i, i) FROM generate_series(1, 1601) i))))$c$, '54000', 'mutation 1 of the batch is malformed: precondition has more than 1600 entries'),
('push: a string of 1 MiB + 1 byte in a precondition', $c$SELECT bi.push(bi.upd(jsonb_build_object('columns', '{"body": "x"}'::jsonb, 'precondition', jsonb_build_object('body', repeat('x', 1048577)))))$c$, '54000', 'mutation 1 of the batch is malformed: %'),
('push: 1,001 mutations (past the hard cap, whatever the setting)', $c$SELECT bi.push(jsonb_build_object('mutations', (SELECT jsonb_agg(jsonb_build_object('mutation_id', '00000000-0000-4000-8000-f7' || lpad(i::text, 10, '0'), 'table', 'bi_plain', 'pk', '1', 'op', 'delete')) FROM generate_series(1, 1001) i)))$c$, 'KZP02', '%');

SELECT plan(2 * (SELECT count(*) FROM bi.cases)::integer + 15);
RESET client_min_messages;

CREATE TEMP TABLE results AS
SELECT c.id, c.what, c.want_state, c.want_msg, r.outcome, r.changed
  FROM bi.cases c, LATERAL bi.run(c.call) r;

SELECT alike(outcome, want_state || ': ' || want_msg, what) FROM results ORDER BY id;
SELECT ok(NOT changed, what || ': nothing changed') FROM results ORDER BY id;

-- at the limit: accepted (and what is accepted is applied or answered)
SELECT is(r.outcome LIKE 'OK {"rows"%', true, 'pull: 512 holes through pull are accepted')
  FROM bi.run($c$SELECT bi.pull(bi.a(), (SELECT '1000:1001~' || string_agg(i::text, '.' ORDER BY i) FROM generate_series(1, 512) i))$c$) r;
SELECT is(r.outcome, 'OK ' || jsonb_build_object('verdicts', jsonb_build_array(jsonb_build_object(
	'verdict', 'applied', 'mutation_id', '00000000-0000-4000-8000-f70000000101')))::text,
	'push: an array of 10,000 elements in a value is applied')
  FROM bi.run($c$SELECT bi.push(bi.upd(jsonb_build_object('columns', jsonb_build_object('tags', (SELECT jsonb_agg(i::text) FROM generate_series(1, 10000) i))), '00000000-0000-4000-8000-f70000000101'))$c$) r;
SELECT is(cardinality(tags), 10000, 'and the row holds the 10,000 elements')
  FROM public.bi_notes WHERE id = '00000000-0000-4000-8000-b10000000001';
SELECT is(r.outcome, 'OK ' || jsonb_build_object('verdicts', jsonb_build_array(jsonb_build_object(
	'verdict', 'applied', 'mutation_id', '00000000-0000-4000-8000-f70000000102')))::text,
	'push: an object of 10,000 members in a value is applied')
  FROM bi.run($c$SELECT bi.push(bi.upd(jsonb_build_object('columns', jsonb_build_object('body', (SELECT jsonb_object_agg('k' || i, i) FROM generate_series(1, 10000) i))), '00000000-0000-4000-8000-f70000000102'))$c$) r;
SELECT is(r.outcome LIKE 'OK {"verdicts": [{"reason": "COLUMN_DENIED"%', true,
	'push: 1,600 transforms pass the limit (unknown columns: COLUMN_DENIED)')
  FROM bi.run($c$SELECT bi.push(bi.upd(jsonb_build_object('transforms', (SELECT jsonb_object_agg('c' || i, '{"op": "increment", "by": 1}'::jsonb) FROM generate_series(1, 1600) i)), '00000000-0000-4000-8000-f70000000103'))$c$) r;
SELECT is(r.outcome LIKE 'OK {"verdicts": [{"reason": "PRECONDITION"%', true,
	'push: 1,600 precondition entries pass the limit (and do not match)')
  FROM bi.run($c$SELECT bi.push(bi.upd(jsonb_build_object('columns', '{"body": "x"}'::jsonb, 'precondition', (SELECT jsonb_object_agg('c' || i, i) FROM generate_series(1, 1600) i)), '00000000-0000-4000-8000-f70000000104'))$c$) r;
SELECT is(r.outcome LIKE 'OK {"verdicts": [{"reason": "PRECONDITION"%', true,
	'push: a 1 MiB string in a precondition passes the limit')
  FROM bi.run($c$SELECT bi.push(bi.upd(jsonb_build_object('columns', '{"body": "x"}'::jsonb, 'precondition', jsonb_build_object('body', repeat('x', 1048576))), '00000000-0000-4000-8000-f70000000105'))$c$) r;

-- accepted and harmless: what jsonb does before we see the request
-- duplicate keys: jsonb keeps the last one, so the scope is the last value
-- (b's bucket here), which RLS then filters to nothing
SELECT is(r.outcome LIKE 'OK {"rows": []%', true,
	'pull: a duplicate params key keeps the last value and cannot widen the scope')
  FROM bi.run($c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": "00000000-0000-4000-8000-a10000000001", "owner_id": "00000000-0000-4000-8000-a10000000002"}}]')$c$) r;
SELECT is(r.outcome, 'OK {"verdicts": []}',
	'push: a duplicate "mutations" key keeps the last (empty) list')
  FROM bi.run($c$SELECT bi.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-f70000000106", "table": "bi_plain", "pk": "1", "op": "delete"}], "mutations": []}')$c$) r;
SELECT is((SELECT count(*) FROM public.bi_plain)::integer, 1, 'and the first list was not applied');
-- 1E2 and -0 are integers once jsonb has read them
SELECT is(r.outcome LIKE 'OK {"rows": []%', true, 'pull: 1E2 is accepted as the integer 100')
  FROM bi.run($c$SELECT bi.pull('[{"table": "bi_notes", "params": {"owner_id": null, "n": 1E2}}]')$c$) r;
-- a column name carrying SQL is just an unknown column (COLUMN_DENIED), the
-- table survives
SELECT is(r.outcome LIKE 'OK {"verdicts": [{"reason": "COLUMN_DENIED"%', true,
	'push: SQL in a column name is an unknown column')
  FROM bi.run($c$SELECT bi.push(bi.upd('{"columns": {"body\" = NULL; DROP TABLE public.bi_notes; --": "x"}}', '00000000-0000-4000-8000-f70000000107'))$c$) r;
SELECT is(r.outcome LIKE 'OK {"verdicts": [{"reason": "PRECONDITION"%', true,
	'push: SQL in a precondition column name matches nothing')
  FROM bi.run($c$SELECT bi.push(bi.upd('{"columns": {"body": "x"}, "precondition": {"body\" IS NOT NULL OR \"body": "a row"}}', '00000000-0000-4000-8000-f70000000108'))$c$) r;
-- the largest cursor (every number 2^63-1) is valid grammar and parses
-- without overflow; no history reaches it, so it is from the future:
-- CHECKPOINT_EXPIRED, echoing the cursor (decisions/0084)
SELECT is(r.outcome, 'OK {"rows": [], "cursor": "9223372036854775807:9223372036854775807~9223372036854775806", "signal": {"type": "CHECKPOINT_EXPIRED"}, "has_more": false, "tombstones": []}',
	'pull: a cursor at 2^63-1 (with a hole at 2^63-2) answers without overflow')
  FROM bi.run($c$SELECT bi.pull(bi.a(), '9223372036854775807:9223372036854775807~9223372036854775806')$c$) r;
SELECT has_table('public', 'bi_notes', 'bi_notes survived');

SELECT diag('bad inputs tried: ' || (SELECT count(*) FROM bi.cases) || ' refused, 15 at-limit or harmless');
SELECT * FROM finish();

SET client_min_messages = warning;
SELECT kizunasync.unsync_table('public.bi_notes');
SELECT kizunasync.unsync_table('public.bi_plain');
DROP TABLE public.bi_notes, public.bi_plain;
DELETE FROM kizunasync.verdicts WHERE mutation_id::text LIKE '00000000-0000-4000-8000-f7%';
DROP SCHEMA bi CASCADE;
