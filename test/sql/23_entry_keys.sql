-- A key's entries (decisions/0092, "As built").
--
-- 1. What one change costs does not grow with the buckets its key left.  A
-- row moved through many bucket values keeps a tombstone in each (until
-- the reap); the write path reads a key's entries whole only while it has
-- a few, and then finds what a change supersedes by (table, key, bucket),
-- so one UPDATE reads the same few key index entries after 200 moves as
-- after 10.  (Before: every change of the key read all of its tombstones,
-- 200 or more index entries here, O(n^2) over its history.)
--
-- 2. A key has one encoding whatever its column's type history: after
-- ALTER TABLE ... ALTER COLUMN id TYPE text an UPDATE and a DELETE of row 5
-- supersede the entry recorded while id was an integer.  (Before: the key
-- got a second encoding, the old row entry outlived the DELETE, and a
-- tombstone written before the ALTER was no longer found by key.)
SET client_min_messages = error;
CREATE SCHEMA ek;
CREATE TABLE ek.notes (id int PRIMARY KEY, tag text NOT NULL, body text);
INSERT INTO ek.notes VALUES (1, 'tag-0', 'x'), (2, 'fixed', 'y');
SELECT kizunasync.sync_table('ek.notes', bucket_column => 'tag', table_name => 'ek_notes') IS NOT NULL AS synced;
CREATE FUNCTION ek.key_reads() RETURNS bigint LANGUAGE sql AS
	$$ SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = 'entries_key_idx' $$;
-- a table's row entries and tombstones, through the operator views
CREATE FUNCTION ek.entries(t text) RETURNS TABLE (what text, pk text, bucket text, n bigint) LANGUAGE sql AS $$
	SELECT 'row', '"' || c.pk || '"', c.bucket_value, count(*) FROM kizunasync.changelog c
	 WHERE c.table_name = t GROUP BY 1, 2, 3
	UNION ALL
	SELECT 'tombstone', '"' || s.pk || '"', NULL, count(*) FROM kizunasync.tombstones s
	 WHERE s.table_name = t GROUP BY 1, 2
	ORDER BY 1, 2 $$;
RESET client_min_messages;

-- row 1 moves through 200 bucket values
DO $$ BEGIN FOR i IN 1..200 LOOP UPDATE ek.notes SET tag = 'tag-' || i WHERE id = 1; END LOOP; END $$;
VACUUM kizunasync.entries;	-- the row entries the moves deleted are read too until then
SELECT * FROM ek.entries('ek_notes');

-- one UPDATE of row 1 in place, of row 1 to another bucket, a DELETE and a
-- re-INSERT into a bucket it has a tombstone in: each reads a few key
-- index entries (the first few of the key, then its bucket's; a move
-- twice that), as many after 200 moves as after 10
SELECT pg_stat_force_next_flush();
SELECT ek.key_reads() AS r0 \gset
UPDATE ek.notes SET body = 'z' WHERE id = 1;
SELECT pg_stat_force_next_flush();
SELECT ek.key_reads() - :r0 <= 8 AS update_reads_at_most_8;
SELECT ek.key_reads() AS r0 \gset
UPDATE ek.notes SET tag = 'tag-201' WHERE id = 1;
SELECT pg_stat_force_next_flush();
SELECT ek.key_reads() - :r0 <= 16 AS move_reads_at_most_16;
SELECT ek.key_reads() AS r0 \gset
DELETE FROM ek.notes WHERE id = 1;
SELECT pg_stat_force_next_flush();
SELECT ek.key_reads() - :r0 <= 8 AS delete_reads_at_most_8;
SELECT ek.key_reads() AS r0 \gset
INSERT INTO ek.notes VALUES (1, 'tag-7', 'again');
SELECT pg_stat_force_next_flush();
SELECT ek.key_reads() - :r0 <= 8 AS insert_reads_at_most_8;
-- one row entry, in tag-7, whose tombstone it superseded
SELECT * FROM ek.entries('ek_notes') WHERE what = 'row' OR n > 1 OR pk <> '"1"';
SELECT count(*) AS tombstones_of_row_1 FROM kizunasync.tombstones WHERE table_name = 'ek_notes' AND pk = '1';

-- a move the bookkeeping did not see (user triggers disabled) leaves row
-- 1's entry in tag-7; the next UPDATE, which expects it in tag-8, does not
-- find it there, looks in every bucket once, and leaves one row entry
ALTER TABLE ek.notes DISABLE TRIGGER USER;
UPDATE ek.notes SET tag = 'tag-8' WHERE id = 1;
ALTER TABLE ek.notes ENABLE TRIGGER USER;
UPDATE ek.notes SET body = 'seen' WHERE id = 1;
SELECT * FROM ek.entries('ek_notes') WHERE what = 'row';

-- 2. the key column's type changes from integer to text
SET client_min_messages = error;
CREATE TABLE ek.t (id int PRIMARY KEY, v text);
INSERT INTO ek.t VALUES (5, 'a'), (6, 'b');
SELECT kizunasync.sync_table('ek.t', table_name => 'ek_t') IS NOT NULL AS synced;
RESET client_min_messages;
DELETE FROM ek.t WHERE id = 6;
ALTER TABLE ek.t ALTER COLUMN id TYPE text;
UPDATE ek.t SET v = 'after' WHERE id = '5';
SELECT * FROM ek.entries('ek_t');
DELETE FROM ek.t WHERE id = '5';
SELECT * FROM ek.entries('ek_t');
-- push's lookup of a key's tombstone finds 6's, recorded while id was an integer
SELECT k.pk, kizunasync_test.entry_key('ek_t', k.pk) AS key,
	   EXISTS (SELECT 1 FROM kizunasync.entries e WHERE e.key = kizunasync_test.entry_key('ek_t', k.pk)
			   AND e.kind = 'd') AS tombstone_found
  FROM (VALUES ('5'), ('6')) k (pk);

-- the encoding is a function of the key text alone, one-to-one: only a
-- canonical decimal int64 text is 'i' (8 bytes), only a lowercase uuid
-- text 'u' (16 bytes); every other text (text keys "05", "5 ", "-0", an
-- uppercase uuid, a number past int64) keeps its bytes under 't'
SELECT '"' || k.pk || '"' AS pk, chr(get_byte(kizunasync_test.entry_key('any', k.pk), 0)) AS format,
	   length(kizunasync_test.entry_key('any', k.pk)) AS bytes
  FROM (VALUES ('5'), ('-5'), ('0'), ('00'), ('9223372036854775807'), ('-9223372036854775808'),
			   ('9223372036854775808'), ('05'), ('5 '), (' 5'), ('-0'), ('+5'), (''),
			   ('00000000-0000-4000-8000-0000000000a1'), ('00000000-0000-4000-8000-0000000000A1'),
			   ('000000000000400080000000000000a1')) k (pk);
-- a text-keyed table's keys that look like numbers read back as they are
SET client_min_messages = error;
CREATE TABLE ek.s (id text PRIMARY KEY, v text);
INSERT INTO ek.s VALUES ('5', 'a'), ('05', 'b'), ('5 ', 'c'), ('-0', 'd'), ('0', 'e');
SELECT kizunasync.sync_table('ek.s', table_name => 'ek_s') IS NOT NULL AS synced;
RESET client_min_messages;
SELECT * FROM ek.entries('ek_s');

-- a key is its text byte for byte: a key column with a nondeterministic
-- collation ('Bob' and 'BOB' one row) is refused (attack pass 2, finding
-- 03: a push of 'BOB' passed the tombstone of 'Bob'); other columns may
-- have one
CREATE COLLATION ek.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE ek.nd (id text COLLATE ek.ci PRIMARY KEY, v text);
SELECT kizunasync.sync_table('ek.nd', table_name => 'ek_nd');
CREATE TABLE ek.nd2 (id text PRIMARY KEY, v text COLLATE ek.ci);
SELECT kizunasync.sync_table('ek.nd2', table_name => 'ek_nd2') IS NOT NULL AS other_columns_may;

-- a key column's type change that changes key texts (text '05' becomes
-- integer 5): the writes record the new texts, and repair_table gives the
-- old ones tombstones (attack pass 2, finding 02: devices kept row 05)
SET client_min_messages = error;
CREATE TABLE ek.alt (id text PRIMARY KEY, v text);
INSERT INTO ek.alt VALUES ('05', 'five'), ('7', 'seven');
SELECT kizunasync.sync_table('ek.alt', table_name => 'ek_alt') IS NOT NULL AS synced;
RESET client_min_messages;
ALTER TABLE ek.alt ALTER COLUMN id TYPE int USING id::int;
UPDATE ek.alt SET v = 'five2' WHERE id = 5;
SELECT kizunasync.repair_table('ek.alt') AS repaired;
SELECT pk FROM kizunasync.changelog WHERE table_name = 'ek_alt' ORDER BY pk;
SELECT pk FROM kizunasync.tombstones WHERE table_name = 'ek_alt' ORDER BY pk;

-- nothing of this file is left behind
SET client_min_messages = warning;
DROP SCHEMA ek CASCADE;
RESET client_min_messages;
SELECT count(*) AS left_behind FROM kizunasync.synced_tables WHERE table_name LIKE 'ek\_%';
