-- Shared set-up of the pull benchmarks (bench/pull_floor, bench/pull_scale).
-- A synced table whose bookkeeping is what kizunasync.sync_table records
-- for the rows a table already holds: one row entry per row, in the bucket
-- of its owner (the benchmarks never write the bookkeeping themselves, so
-- they measure whatever layout the entry module has).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kizunasync;
CREATE SCHEMA IF NOT EXISTS bench;
GRANT USAGE ON SCHEMA bench TO authenticated;

-- bench.make_table(name, nrows, nowners): rows owner = i % nowners, RLS on owner
CREATE OR REPLACE FUNCTION bench.make_table(tname text, nrows int, nowners int) RETURNS void
LANGUAGE plpgsql AS $f$
BEGIN
	IF to_regclass(format('bench.%I', tname)) IS NOT NULL
	   AND EXISTS (SELECT 1 FROM kizunasync.synced_tables WHERE table_name = tname) THEN
		PERFORM kizunasync.unsync_table(format('bench.%I', tname)::regclass);
	END IF;
	EXECUTE format('DROP TABLE IF EXISTS bench.%I', tname);
	DELETE FROM kizunasync.bucket_grants WHERE table_name = tname;
	EXECUTE format('CREATE TABLE bench.%I (id bigint PRIMARY KEY, owner_id uuid NOT NULL, title text,'
				   ' done boolean, updated_at timestamptz, n numeric)', tname);
	EXECUTE format('ALTER TABLE bench.%I ENABLE ROW LEVEL SECURITY', tname);
	EXECUTE format('CREATE POLICY own ON bench.%I USING (owner_id = auth.uid())', tname);
	EXECUTE format('GRANT SELECT ON bench.%I TO authenticated', tname);
	EXECUTE format('INSERT INTO bench.%I SELECT i, bench.owner(i %% %s), ''title '' || i, i %% 2 = 0,'
				   ' ''2026-01-01''::timestamptz + i * interval ''1 second'', i / 7.0'
				   ' FROM generate_series(1, %s) i', tname, nowners, nrows);
	PERFORM kizunasync.sync_table(format('bench.%I', tname)::regclass,
								  bucket_column => 'owner_id', table_name => tname);
	EXECUTE format('ANALYZE bench.%I', tname);
	ANALYZE kizunasync.entries;
END $f$;

CREATE OR REPLACE FUNCTION bench.owner(i int) RETURNS uuid LANGUAGE sql IMMUTABLE AS $f$
	SELECT ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid $f$;

-- bench.bucket(table, owner index): the buckets argument of one owner
CREATE OR REPLACE FUNCTION bench.bucket(tname text, o int) RETURNS jsonb LANGUAGE sql AS $f$
	SELECT jsonb_build_array(jsonb_build_object('table', tname,
		'params', jsonb_build_object('owner_id', bench.owner(o)))) $f$;

-- median of an array of numbers
CREATE OR REPLACE FUNCTION bench.median(v float8[]) RETURNS float8 LANGUAGE sql AS $f$
	SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(v) x $f$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA bench TO authenticated;
RESET client_min_messages;
