-- I. The smaller items of issue 10 (point 8), as ordinary roles.
-- db: kz_roles_i
-- plan: 18
--
-- 1. Inheritance: rows of a child table (INHERITS the synced parent; the
--    API role has no grant on it) are never read or written through the
--    parent's synced name (pull and push must use ONLY).
-- 2. UPDATE ... SET n = 2.000 where n was numeric 2 is a change (the
--    rendering differs): a pull delivers 2.000.
-- 3. A float8 bucket value written under extra_float_digits = 0 is found by
--    a pull whose param is the shortest-exact text of the value.
-- 4. A 2,000-byte text key fails the INSERT with kizunasync's own 54000
--    naming the limit, not a btree "index row size" error.
-- (The fifth, "a wake-up error other than a cancel only warns", is in
-- d_realtime_legit.sql.)
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\set u '00000000-0000-4000-8000-0000000000e9'
CREATE ROLE kz_r_i_user LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_i_user;
CREATE ROLE kz_r_i_writer LOGIN NOSUPERUSER;
-- 1
CREATE TABLE public.i_parent (id bigint PRIMARY KEY, owner_id uuid NOT NULL, body text);
ALTER TABLE public.i_parent ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.i_parent TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.i_parent TO authenticated;
SELECT kizunasync.sync_table('public.i_parent', bucket_column => 'owner_id') AS n \gset
CREATE TABLE public.i_child () INHERITS (public.i_parent);
INSERT INTO public.i_parent VALUES (1, :'u', 'parent one'), (2, :'u', 'parent two');
DELETE FROM public.i_parent WHERE id = 2;
INSERT INTO public.i_child VALUES (1, :'u', 'child one'), (2, :'u', 'child two'), (3, :'u', 'child three');
-- 2
CREATE TABLE public.i_num (id bigint PRIMARY KEY, n numeric);
GRANT SELECT ON public.i_num TO authenticated;
GRANT SELECT, UPDATE ON public.i_num TO kz_r_i_writer;
SELECT kizunasync.sync_table('public.i_num') AS n \gset
INSERT INTO public.i_num VALUES (1, 2);
-- 3
CREATE TABLE public.i_flt (id bigint PRIMARY KEY, b float8 NOT NULL, note text);
GRANT SELECT ON public.i_flt TO authenticated;
GRANT SELECT, INSERT ON public.i_flt TO kz_r_i_writer;
SELECT kizunasync.sync_table('public.i_flt', bucket_column => 'b') AS n \gset
-- 4
CREATE TABLE public.i_key (id text PRIMARY KEY, v text);
GRANT SELECT, INSERT ON public.i_key TO kz_r_i_writer;
SELECT kizunasync.sync_table('public.i_key') AS n \gset
RESET client_min_messages;

-- ------------------------------------------------------------ 1 inheritance
\connect - kz_r_i_user
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000e9", "role": "authenticated"}';
\set ON_ERROR_STOP 0
\set r ''
SELECT kizunasync.pull('[{"table": "i_parent", "params": {"owner_id": "00000000-0000-4000-8000-0000000000e9"}}]', '0', 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'I inheritance: pull of the parent''s bucket', :'LAST_ERROR_MESSAGE');
SELECT kzt.is((SELECT jsonb_agg(jsonb_build_array(x ->> 'pk', x -> 'row' ->> 'body') ORDER BY x ->> 'pk') FROM jsonb_array_elements(nullif(:'r', '')::jsonb -> 'rows') x),
	'[["1", "parent one"]]'::jsonb, 'I inheritance: the pull delivers the parent''s row only, never a child row with the same key');
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000f501", "table": "i_parent", "pk": "2", "op": "update", "columns": {"body": "written through the parent"}}]}', NULL, 1) IS NULL AS no \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'I inheritance: push update of a key only a child row has', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000f502", "table": "i_parent", "pk": "1", "op": "update", "columns": {"body": "parent new"}}]}', NULL, 1) IS NULL AS no \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'I inheritance: push update of a key the parent and a child both have', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000f503", "table": "i_parent", "pk": "3", "op": "delete"}]}', NULL, 1) IS NULL AS no \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'I inheritance: push delete of a key only a child row has', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000f504", "table": "i_parent", "pk": "1", "op": "delete"}]}', NULL, 1) IS NULL AS no \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'I inheritance: push delete of a key the parent and a child both have', :'LAST_ERROR_MESSAGE');
\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is((SELECT string_agg(id || ':' || body, ', ' ORDER BY id) FROM ONLY public.i_child), '1:child one, 2:child two, 3:child three',
	'I inheritance: no child row was updated or deleted through the parent');
SELECT kzt.is((SELECT count(*) FROM ONLY public.i_parent), 0::bigint, 'I inheritance: the parent''s own row was updated and then deleted');

-- ---------------------------------------------------- 2 numeric rendering
\connect - kz_r_i_user
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000e9", "role": "authenticated"}';
SELECT kizunasync.pull('[{"table": "i_num"}]', '0', 1) ->> 'cursor' AS c1 \gset
\connect - kz_r_i_writer
\set ON_ERROR_STOP 0
UPDATE public.i_num SET n = 2.000 WHERE id = 1;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'I numeric: UPDATE ... SET n = 2.000 (was 2) by an ordinary writer', :'LAST_ERROR_MESSAGE');
\connect - kz_r_i_user
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000e9", "role": "authenticated"}';
\set r ''
SELECT kizunasync.pull('[{"table": "i_num"}]', :'c1', 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'I numeric: pull from the cursor before the update', :'LAST_ERROR_MESSAGE');
SELECT kzt.is((SELECT jsonb_agg(x -> 'row' -> 'n') FROM jsonb_array_elements(nullif(:'r', '')::jsonb -> 'rows') x)::text, '[2.000]',
	'I numeric: the change 2 -> 2.000 was captured; the pull delivers 2.000');

-- ------------------------------------------------ 3 float8 bucket rendering
\connect - kz_r_i_writer
SET extra_float_digits = 0;
INSERT INTO public.i_flt VALUES (1, 0.1::float8 + 0.2::float8, 'written with extra_float_digits = 0');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'I float8: INSERT of 0.1 + 0.2 as the bucket value under extra_float_digits = 0', :'LAST_ERROR_MESSAGE');
RESET extra_float_digits;
SELECT kzt.is((SELECT b::text FROM public.i_flt WHERE id = 1), '0.30000000000000004', 'I float8: control: the shortest exact text of the value is 0.30000000000000004');
\connect - kz_r_i_user
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000e9", "role": "authenticated"}';
\set r ''
SELECT kizunasync.pull('[{"table": "i_flt", "params": {"b": "0.30000000000000004"}}]', '0', 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'I float8: pull of bucket "0.30000000000000004"', :'LAST_ERROR_MESSAGE');
SELECT kzt.is((SELECT jsonb_agg(x ->> 'pk') FROM jsonb_array_elements(nullif(:'r', '')::jsonb -> 'rows') x), '["1"]'::jsonb,
	'I float8: the row is delivered to the pull naming the shortest exact value');

-- ------------------------------------------------------ 4 a 2,000-byte key
\connect - kz_r_i_writer
INSERT INTO public.i_key SELECT left(string_agg(md5(i::text), '' ORDER BY i), 2000), 'long key' FROM generate_series(1, 63) i;
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
SELECT kzt.expect(:'st', '54000', 'I long key: INSERT of a row with a 2,000-byte key fails with 54000', :'msg');
SELECT kzt.ok(:'st' = '54000' AND :'msg' LIKE '%kizunasync%' AND :'msg' NOT LIKE '%index row%' AND :'msg' ~ '[0-9]',
	'I long key: the error is kizunasync''s and names the limit (not btree''s "index row size")', format('SQLSTATE %s: %s', :'st', :'msg'));
\connect - postgres
SELECT kzt.is((SELECT count(*) FROM public.i_key), 0::bigint, 'I long key: the row is not in the table');
