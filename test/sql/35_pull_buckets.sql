-- kizunasync.pull naming many buckets (issue 30 item 1, decisions/0025):
-- the window is a merge by seq of the requested buckets' windows, each read
-- a few entries at a time, so a page reads about what it delivers, whatever
-- the number of buckets.  Counted with the entries' index statistics
-- (idx_tup_read: index entries returned by scans), which no timing noise
-- moves.  And which scope a row matches when it moved between requested
-- buckets, or to a null bucket value.
SET client_min_messages = warning;
CREATE SCHEMA pb;
GRANT USAGE ON SCHEMA pb TO authenticated;
CREATE TABLE pb.items (id bigint PRIMARY KEY, list_id int, title text);
GRANT SELECT ON pb.items TO authenticated;
-- 32 lists of 50 rows, interleaved in id order (and so in seq order)
INSERT INTO pb.items SELECT i, (i - 1) % 32 + 1, 'item ' || i FROM generate_series(1, 1600) i;
SELECT kizunasync.sync_table('pb.items', bucket_column => 'list_id') AS seeded;
-- the buckets argument naming lists lo .. hi
CREATE FUNCTION pb.lists(lo int, hi int) RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_agg(jsonb_build_object('table', 'items', 'params', jsonb_build_object('list_id', l)) ORDER BY l)
	  FROM generate_series(lo, hi) l $$;
-- a bootstrap in pages of lim: pages, rows, distinct keys, and whether every
-- page's seqs rise above the last page's
CREATE FUNCTION pb.boot(b jsonb, lim int, OUT pages int, OUT nrows int, OUT keys int, OUT ordered boolean)
LANGUAGE plpgsql AS $$
DECLARE
	cur text := '0';
	p jsonb;
	seqs bigint[] := '{}';
	ks text[] := '{}';
BEGIN
	pages := 0; nrows := 0;
	LOOP
		p := kizunasync.pull(b, cur, 1, lim);
		pages := pages + 1;
		seqs := seqs || ARRAY(SELECT (r ->> 'seq')::bigint FROM jsonb_array_elements(p -> 'rows') r);
		ks := ks || ARRAY(SELECT r ->> 'pk' FROM jsonb_array_elements(p -> 'rows') r);
		cur := p ->> 'cursor';
		EXIT WHEN NOT (p -> 'has_more')::boolean;
	END LOOP;
	nrows := cardinality(seqs);
	keys := (SELECT count(DISTINCT k) FROM unnest(ks) k);
	ordered := seqs = ARRAY(SELECT s FROM unnest(seqs) s ORDER BY s);
END $$;
-- index entries of kizunasync.entries read so far (flushed statistics)
CREATE FUNCTION pb.entries_read() RETURNS bigint LANGUAGE sql AS $$
	SELECT sum(idx_tup_read)::bigint FROM pg_stat_user_indexes WHERE relid = 'kizunasync.entries'::regclass $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA pb TO authenticated;
RESET client_min_messages;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-b10000000001", "role": "authenticated"}', false) IS NOT NULL AS claims;

-- a bootstrap of the 32 lists in pages of 100: 16 pages, every row once, in
-- seq order; it reads about two index entries per delivered row (one in the
-- window, one classifying the page's range), not one page per list per page
-- (before: every list was asked for 101 entries on every page, 24 per row)
SELECT pg_stat_force_next_flush();
SELECT pb.entries_read() AS before_boot \gset
SET ROLE authenticated;
SELECT * FROM pb.boot(pb.lists(1, 32), 100);
RESET ROLE;
SELECT pg_stat_force_next_flush();
SELECT round((pb.entries_read() - :before_boot) / 1600.0, 1) <= 2.5 AS about_two_per_row,
	   (pb.entries_read() - :before_boot) / 1600 < 3 AS under_three_per_row;

-- one list among 32 named, its rows at the start of the seqs (list 1: ids 1, 33, ...)
SELECT pg_stat_force_next_flush();
SELECT pb.entries_read() AS before_one \gset
SET ROLE authenticated;
SELECT * FROM pb.boot(pb.lists(1, 1), 10);
RESET ROLE;
SELECT pg_stat_force_next_flush();
SELECT (pb.entries_read() - :before_one) / 50 < 3 AS under_three_per_row;

-- a few lists among 32 in small pages: the window is read by seq until it
-- has passed more entries of other lists than twice the lists named, then
-- by the merge from there, mid-page; every row once, in seq order, with
-- nothing lost or repeated where the one gives way to the other
SET ROLE authenticated;
SELECT * FROM pb.boot(pb.lists(1, 2), 7);
SELECT * FROM pb.boot(pb.lists(5, 12), 7);
SELECT * FROM pb.boot(pb.lists(1, 31), 333);
RESET ROLE;

-- which scope a row matches once it moved: the device holds lists 1 and 2
-- (pulled above, so it holds their grants).  Item 1 moves from list 1 to
-- list 2: the row in list 2 and no tombstone of list 1 (the row is still in
-- a requested bucket).  Item 2 moves from list 2 to list 3 (not requested):
-- a tombstone of list 2.  Item 33 moves from list 1 to NULL: a tombstone of
-- list 1, unless the request also names a null list_id, which matches the
-- row (jsonb null equals null) and so withholds it, as it always did.
SET ROLE authenticated;
SELECT p ->> 'cursor' AS cur FROM kizunasync.pull(pb.lists(1, 2), '0', 1, 5000) p \gset
RESET ROLE;
UPDATE pb.items SET list_id = 2 WHERE id = 1;
UPDATE pb.items SET list_id = 3 WHERE id = 2;
UPDATE pb.items SET list_id = NULL WHERE id = 33;
SET ROLE authenticated;
CREATE FUNCTION pg_temp.brief(p jsonb) RETURNS text LANGUAGE sql AS $$
	SELECT format('rows=[%s] tombstones=[%s]',
		(SELECT string_agg(r ->> 'pk' || '@' || (r -> 'row' ->> 'list_id'), ' ' ORDER BY (r ->> 'seq')::bigint)
		   FROM jsonb_array_elements(p -> 'rows') r),
		(SELECT string_agg(r ->> 'pk', ' ' ORDER BY (r ->> 'seq')::bigint)
		   FROM jsonb_array_elements(p -> 'tombstones') r)) $$;
SELECT pg_temp.brief(kizunasync.pull(pb.lists(1, 2), :'cur', 1)) AS lists_1_2;
SELECT pg_temp.brief(kizunasync.pull(pb.lists(1, 2) || '[{"table": "items", "params": {"list_id": null}}]',
	:'cur', 1)) AS and_null;
RESET ROLE;

-- tombstones among 1,000 named buckets (decisions/0025, item 7): a page
-- reads the grants of the pairs whose entries it reads, the first 16 one
-- probe each and then the rest in one statement.  The device holds the
-- grants of lists 1..32 (pulled above) and none of lists 33..52 (never
-- pulled); a row of each list is deleted, one of a held list and one of
-- another in turn.  Naming lists 1..1000: the 20 tombstones of the held
-- lists, in seq order, on both sides of the 16th pair (lists 1..8 and
-- 33..40 are probed), and none of the others; naming three of each: those
-- three.
SET ROLE authenticated;
SELECT p ->> 'cursor' AS cur3, p -> 'has_more' AS more FROM kizunasync.pull(pb.lists(1, 32), :'cur', 1, 5000) p \gset
\echo :more
RESET ROLE;
INSERT INTO pb.items SELECT 5000 + l, l, 'new ' || l FROM generate_series(33, 52) l;
DO $$
BEGIN
	FOR l IN 1 .. 20 LOOP
		DELETE FROM pb.items WHERE id = 320 + l;
		DELETE FROM pb.items WHERE id = 5032 + l;
	END LOOP;
END $$;
SET ROLE authenticated;
SELECT pg_temp.brief(kizunasync.pull(pb.lists(1, 1000), :'cur3', 1)) AS thousand_lists;
SELECT pg_temp.brief(kizunasync.pull(pb.lists(1, 3) || pb.lists(33, 35), :'cur3', 1)) AS six_lists;
RESET ROLE;

SET client_min_messages = warning;
SELECT kizunasync.unsync_table('pb.items');
DELETE FROM kizunasync.bucket_grants;
DROP SCHEMA pb CASCADE;
RESET client_min_messages;
