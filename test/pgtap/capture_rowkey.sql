-- Row-key vectors (read from the corpus at test time, never copied) and the
-- canonical parse.  Each vector becomes a table whose primary key is the
-- vector's key columns (uuid for uuid-looking strings, bigint for JSON
-- numbers, text otherwise); the row is inserted and the changelog pk the
-- capture trigger rendered is compared with the vector's pk, byte for byte.
\set ON_ERROR_STOP 1
\getenv corpus KZ_CORPUS
SELECT coalesce(nullif(:'corpus', ':corpus'), '../shared/corpus') AS corpus \gset
BEGIN;
SET client_min_messages = warning;
-- These checks read the bookkeeping inside the writing transaction: every
-- change numbered while the transaction runs, none left for its commit
-- (decisions/0010, "Numbering at commit"; idle_big_txn.spec covers that).
SET LOCAL kizunasync.write_time_changes = 1000000;
CREATE TEMP TABLE vec AS
  SELECT ord, v
    FROM jsonb_array_elements(pg_read_file(:'corpus' || '/vectors/row-key-vectors.json')::jsonb -> 'vectors')
         WITH ORDINALITY AS t(v, ord);
SELECT plan((SELECT count(*)::int * 2 FROM vec) + 16);

CREATE SCHEMA rk;
CREATE FUNCTION rk.run(p_ord bigint, p_v jsonb) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  cols text := '';
  col text;
  val jsonb;
  tbl text := 'rk.v' || p_ord;
  got text;
BEGIN
  FOR col, val IN SELECT key, value FROM jsonb_each(p_v -> 'row') LOOP
    cols := cols || format('%I %s, ', col,
      CASE WHEN jsonb_typeof(val) = 'number' THEN 'bigint'
           WHEN val #>> '{}' ~ '^[0-9a-fA-F-]{36}$' THEN 'uuid'
           ELSE 'text' END);
  END LOOP;
  EXECUTE format('CREATE TABLE %s (%s PRIMARY KEY (%s))', tbl, cols,
    (SELECT string_agg(format('%I', k), ', ') FROM jsonb_array_elements_text(p_v -> 'key_columns') k));
  PERFORM kizunasync.sync_table(tbl::regclass,
    key_columns => ARRAY(SELECT jsonb_array_elements_text(p_v -> 'key_columns')),
    table_name => 'rk_v' || p_ord);
  EXECUTE format('INSERT INTO %s SELECT * FROM jsonb_populate_record(NULL::%s, $1)', tbl, tbl) USING p_v -> 'row';
  SELECT pk INTO got FROM kizunasync.changelog WHERE table_name = 'rk_v' || p_ord;
  RETURN got;
END $$;

SELECT is(rk.run(ord, v), v ->> 'pk', 'render: ' || (v ->> 'name')) FROM vec ORDER BY ord;
SELECT ok(kizunasync_test.pk_canonical(('rk.v' || ord)::regclass, v ->> 'pk'), 'canonical: ' || (v ->> 'name')) FROM vec ORDER BY ord;

-- non-canonical spellings are refused (never an error)
CREATE TABLE rk.u (id uuid PRIMARY KEY);
CREATE TABLE rk.i (id integer PRIMARY KEY);
CREATE TABLE rk.c (a smallint, b text, PRIMARY KEY (a, b));
SELECT kizunasync.sync_table('rk.u', table_name => 'rk_u');
SELECT kizunasync.sync_table('rk.i', table_name => 'rk_i');
SELECT kizunasync.sync_table('rk.c', key_columns => '{a,b}', table_name => 'rk_c');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.u', '5F0C1C2E-8F3A-4B6D-9C1E-2A7B3C4D5E6F'), 'uppercase uuid refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.u', '5f0c1c2e8f3a4b6d9c1e2a7b3c4d5e6f'), 'uuid without hyphens refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.u', '{5f0c1c2e-8f3a-4b6d-9c1e-2a7b3c4d5e6f}'), 'uuid in braces refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.i', '007'), 'leading zero refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.i', '+7'), 'plus sign refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.i', ' 7'), 'surrounding space refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.i', '-0'), 'minus zero refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.i', '2147483648'), 'integer overflow refused');
SELECT ok(kizunasync_test.pk_canonical('rk.i', '-2147483648'), 'integer minimum accepted');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.c', '["1","x"]'), 'composite without the space refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.c', '[1, "x"]'), 'composite with a number element refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.c', '["1", "x"] '), 'trailing text refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.c', '["1", "x", "y"]'), 'too many components refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.c', '["40000", "x"]'), 'smallint overflow refused');
SELECT ok(NOT kizunasync_test.pk_canonical('rk.c', '["1", "\u0041"]'), 'needless unicode escape refused');
SELECT ok(kizunasync_test.pk_canonical('rk.c', '["1", "\u001fq\n"]'), 'control escapes accepted');

SELECT * FROM finish();
ROLLBACK;
