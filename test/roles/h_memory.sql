-- H. Memory stays bounded.
-- db: kz_roles_h
-- plan: 8
--
-- Not a security claim: the pushes run in the Data API shape (a superuser
-- session, SET LOCAL ROLE authenticated + claims per transaction), so that
-- the same backend can then read its own /proc/self/status (pg_read_file as
-- superuser).
--
-- 1. Peak memory of one push of 500 update mutations of a row with a 1 MB
--    text column, 2 MB (each sets a small column; the row is rendered for the
--    verdicts).  Bound: VmHWM after the push at most 64 MB above the RSS
--    just before it.  Method: the backend first runs the same push shape on
--    the row (10 mutations) and reads the big value, so plans and caches
--    exist and the row's TOAST pages are in shared buffers and already
--    mapped by this backend (shared buffers count toward RSS once touched);
--    then it resets VmHWM to the current RSS by writing 5 to
--    /proc/self/clear_refs (COPY ... TO, as superuser), reads VmRSS, runs
--    the push and reads VmHWM.  Updates of a small column reuse the TOAST
--    pointer, so the push touches few new shared pages; RssShmem before and
--    after is printed and not subtracted (the bound is strict).  The same
--    measurement of a 500-update push of a tiny row is printed as the
--    baseline.
-- 2. Cached plans: 2,100 pushes, each updating a distinct subset of 12
--    columns, must not leave more than 8 MB of backend memory behind
--    (sum of pg_backend_memory_contexts.total_bytes, after minus before,
--    the session warmed up first; each push its own statement and
--    transaction); 0.1.0 keeps up to 2,000 plans (~33 MB).
-- 3. A pull's request: 300,000 numbers 1e-1000 (2.4 MB of JSON, 1,002
--    bytes each as numeric_out prints it, 300 MB in all) is refused as too
--    large (the printed text is what the limit counts) with the same VmHWM
--    method: at most 64 MB above the RSS before it.  Before the fix the
--    jsonb walk printed and kept every number, and the text parser's
--    fallback printed the whole argument again (about 1 GB).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\set u '00000000-0000-4000-8000-0000000000f7'
CREATE TABLE public.h_big (id bigint PRIMARY KEY, owner_id uuid NOT NULL, n integer NOT NULL DEFAULT 0, big text);
ALTER TABLE public.h_big ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.h_big TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.h_big TO authenticated;
SELECT kizunasync.sync_table('public.h_big', bucket_column => 'owner_id') AS n \gset
-- 2 MB of md5 hex: stored out of line, and pglz cannot shrink it much
INSERT INTO public.h_big (id, owner_id, big)
	SELECT 1, :'u', string_agg(md5(i::text), '' ORDER BY i) FROM generate_series(1, 65536) i;
INSERT INTO public.h_big (id, owner_id, big) VALUES (2, :'u', 'tiny');
CREATE TABLE public.h_wide (id bigint PRIMARY KEY, owner_id uuid NOT NULL,
	c1 int, c2 int, c3 int, c4 int, c5 int, c6 int, c7 int, c8 int, c9 int, c10 int, c11 int, c12 int);
ALTER TABLE public.h_wide ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.h_wide TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.h_wide TO authenticated;
SELECT kizunasync.sync_table('public.h_wide', bucket_column => 'owner_id') AS n \gset
INSERT INTO public.h_wide (id, owner_id) VALUES (1, :'u');
-- kB of a /proc/self/status field
CREATE FUNCTION pg_temp.kb(field text) RETURNS bigint LANGUAGE sql AS $$
	SELECT (regexp_match(pg_read_file('/proc/self/status'), field || ':\s+(\d+) kB'))[1]::bigint $$;
-- a batch of n update mutations of row pk, each setting n := i
CREATE FUNCTION pg_temp.batch(pk text, cnt int, tag text) RETURNS text LANGUAGE sql AS $$
	SELECT jsonb_build_object('mutations', jsonb_agg(jsonb_build_object(
		'mutation_id', ('00000000-0000-4000-' || tag || '-' || lpad(i::text, 12, '0'))::uuid,
		'table', 'h_big', 'pk', pk, 'op', 'update', 'columns', jsonb_build_object('n', i)) ORDER BY i))::text
	  FROM generate_series(1, cnt) i $$;
SELECT pg_temp.batch('1', 10, '8001') AS warm_big, pg_temp.batch('2', 10, '8002') AS warm_tiny,
	   pg_temp.batch('2', 500, '8003') AS tiny, pg_temp.batch('1', 500, '8004') AS big \gset
\set claims '{"sub": "00000000-0000-4000-8000-0000000000f7", "role": "authenticated"}'
RESET client_min_messages;

-- warm up: both push shapes, and the big value read once
BEGIN; SET LOCAL ROLE authenticated; SELECT set_config('request.jwt.claims', :'claims', true) IS NULL AS no \gset
SELECT kizunasync.push(:'warm_big', NULL, 1) IS NULL AS no \gset
SELECT kizunasync.push(:'warm_tiny', NULL, 1) IS NULL AS no \gset
COMMIT;
SELECT length(big) AS len FROM public.h_big WHERE id = 1 \gset
-- baseline: a tiny row
COPY (SELECT 5) TO '/proc/self/clear_refs';
SELECT pg_temp.kb('VmRSS') AS rss0, pg_temp.kb('RssShmem') AS shm0 \gset
BEGIN; SET LOCAL ROLE authenticated; SELECT set_config('request.jwt.claims', :'claims', true) IS NULL AS no \gset
SELECT kizunasync.push(:'tiny', NULL, 1) AS r_tiny \gset
COMMIT;
SELECT pg_temp.kb('VmHWM') AS hwm1, pg_temp.kb('RssShmem') AS shm1 \gset
-- the big row
COPY (SELECT 5) TO '/proc/self/clear_refs';
SELECT pg_temp.kb('VmRSS') AS rss2, pg_temp.kb('RssShmem') AS shm2 \gset
BEGIN; SET LOCAL ROLE authenticated; SELECT set_config('request.jwt.claims', :'claims', true) IS NULL AS no \gset
SELECT kizunasync.push(:'big', NULL, 1) AS r_big \gset
COMMIT;
SELECT pg_temp.kb('VmHWM') AS hwm3, pg_temp.kb('RssShmem') AS shm3 \gset
SELECT kzt.diag(format('H tiny row (baseline): 500 updates, VmHWM %s kB above RSS %s kB (RssShmem %s -> %s kB)', :hwm1 - :rss0, :rss0, :shm0, :shm1));
SELECT kzt.diag(format('H %s-byte row: 500 updates, VmHWM %s kB above RSS %s kB (RssShmem %s -> %s kB)', :len, :hwm3 - :rss2, :rss2, :shm2, :shm3));
SELECT kzt.is((SELECT count(*) FROM jsonb_array_elements(:'r_big'::jsonb -> 'verdicts') v WHERE v ->> 'verdict' = 'applied'), 500::bigint,
	'H big row: the push applied all 500 updates');
SELECT kzt.ok(:hwm3 - :rss2 <= 64 * 1024,
	format('H big row: peak memory of a 500-update push of a %s-byte row stays within 64 MB of the RSS before it', :len),
	format('VmHWM - VmRSS before = %s kB (%s MB); the tiny-row baseline was %s kB', :hwm3 - :rss2, (:hwm3 - :rss2) / 1024, :hwm1 - :rss0));
SELECT kzt.is((SELECT n FROM public.h_big WHERE id = 1), 500, 'H big row: the row holds the last update');

-- ------------------------------------------------------------ cached plans
CREATE FUNCTION pg_temp.wide(k int) RETURNS text LANGUAGE sql AS $$
	SELECT jsonb_build_object('mutations', jsonb_build_array(jsonb_build_object(
		'mutation_id', ('00000000-0000-4000-9000-' || lpad(k::text, 12, '0'))::uuid,
		'table', 'h_wide', 'pk', '1', 'op', 'update',
		'columns', (SELECT jsonb_object_agg('c' || b, k) FROM generate_series(1, 12) b WHERE (k & (1 << (b - 1))) <> 0))))::text $$;
SELECT set_config('request.jwt.claims', :'claims', false) IS NULL AS no \gset
-- warm up: the same push shape three times
SET ROLE authenticated;
SELECT kizunasync.push(pg_temp.wide(1)::jsonb, NULL, 1) IS NULL AS no \gset
SELECT kizunasync.push(replace(pg_temp.wide(1), '9000-000000000001', '9000-100000000001')::jsonb, NULL, 1) IS NULL AS no \gset
SELECT kizunasync.push(replace(pg_temp.wide(1), '9000-000000000001', '9000-200000000001')::jsonb, NULL, 1) IS NULL AS no \gset
RESET ROLE;
SELECT sum(total_bytes) AS mem0, count(*) FILTER (WHERE name IN ('CachedPlan', 'CachedPlanSource', 'SPI Plan')) AS plans0
  FROM pg_backend_memory_contexts \gset
\o /dev/null
SELECT stmt FROM (
	SELECT 0 AS k, 'SET ROLE authenticated' AS stmt
	UNION ALL SELECT k, format('SELECT kizunasync.push(%L, NULL, 1)', pg_temp.wide(k)) FROM generate_series(2, 2101) k
	UNION ALL SELECT 99999, 'RESET ROLE') s ORDER BY k \gexec
\o
SELECT sum(total_bytes) AS mem1, count(*) FILTER (WHERE name IN ('CachedPlan', 'CachedPlanSource', 'SPI Plan')) AS plans1
  FROM pg_backend_memory_contexts \gset
SELECT kzt.diag(format('H plans: backend memory %s kB -> %s kB, plan contexts %s -> %s', :mem0 / 1024, :mem1 / 1024, :plans0, :plans1));
SELECT kzt.is((SELECT count(*) FROM kizunasync.verdicts
				WHERE mutation_id::text LIKE '00000000-0000-4000-9000-%' AND reason IS NULL), 2103::bigint,
	'H plans: all 2,100 pushes (and the 3 warm-up ones) were applied');
SELECT kzt.ok(:mem1 - :mem0 <= 8 * 1024 * 1024,
	'H plans: 2,100 pushes with distinct column subsets leave at most 8 MB of backend memory behind',
	format('%s kB more than before (%s plan contexts more)', (:mem1 - :mem0) / 1024, :plans1 - :plans0));
SELECT kzt.is((SELECT c1 FROM public.h_wide WHERE id = 1), 2101, 'H plans: the row holds the last update of c1');

-- ------------------------------------------------------ a pull's request
SELECT ('[' || rtrim(repeat('1e-1000,', 300000), ',') || ']') AS nums \gset
BEGIN; SET LOCAL ROLE authenticated; SELECT set_config('request.jwt.claims', :'claims', true) IS NULL AS no \gset
SELECT kzt.try('SELECT kizunasync.pull(''[]'', ''0'', 1)') AS warm \gset
COMMIT;
COPY (SELECT 5) TO '/proc/self/clear_refs';
SELECT pg_temp.kb('VmRSS') AS rss4 \gset
BEGIN; SET LOCAL ROLE authenticated; SELECT set_config('request.jwt.claims', :'claims', true) IS NULL AS no \gset
SELECT kzt.try(format('SELECT kizunasync.pull(%L::jsonb, ''0'', 1)', :'nums')) AS st_nums \gset
COMMIT;
SELECT pg_temp.kb('VmHWM') AS hwm5 \gset
SELECT kzt.diag(format('H pull of 300,000 numbers 1e-1000: VmHWM %s kB above RSS %s kB', :hwm5 - :rss4, :rss4));
SELECT kzt.is(:'st_nums', '22023', 'H pull: 300,000 numbers that print as 300 MB are refused (buckets is too large)');
SELECT kzt.ok(:hwm5 - :rss4 <= 64 * 1024,
	'H pull: refusing them stays within 64 MB of the RSS before it',
	format('VmHWM - VmRSS before = %s kB (%s MB)', :hwm5 - :rss4, (:hwm5 - :rss4) / 1024));
