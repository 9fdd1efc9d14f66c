-- kizunasync_test: the test-only entry points, in their own library
-- (test/ext/kizunasync_test.c).  No grants: the tests call them as the superuser.
\echo Use "CREATE EXTENSION kizunasync_test" to load this file. \quit

-- The checkpoint token the reference horizon gives under this snapshot.
CREATE FUNCTION kizunasync_test.horizon(cursor text, max_holes integer DEFAULT 100) RETURNS text
	AS 'MODULE_PATHNAME', 'kzt_horizon' LANGUAGE C STRICT VOLATILE;

-- Drive the push queue: 'begin', 'flush', 'discard', 'end'.
CREATE FUNCTION kizunasync_test.capture_queue(action text) RETURNS text
	AS 'MODULE_PATHNAME', 'kzt_capture_queue' LANGUAGE C STRICT VOLATILE;
CREATE FUNCTION kizunasync_test.capture_queued_op(table_name text, pk text) RETURNS text
	AS 'MODULE_PATHNAME', 'kzt_capture_queued_op' LANGUAGE C STRICT VOLATILE;

-- Is pk the canonical row key text of a row of a synced table?
CREATE FUNCTION kizunasync_test.pk_canonical(tbl regclass, pk text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kzt_pk_canonical' LANGUAGE C STRICT STABLE;

-- A writer of this session that has drawn a seq waits, inside the fence,
-- for a shared advisory lock on key (0: off).
CREATE FUNCTION kizunasync_test.wait_after_draw(key bigint) RETURNS void
	AS 'MODULE_PATHNAME', 'kzt_wait_after_draw' LANGUAGE C STRICT VOLATILE;

-- Plans kept by this backend's SPI plan cache.
CREATE FUNCTION kizunasync_test.plan_cache_count() RETURNS integer
	AS 'MODULE_PATHNAME', 'kzt_plan_cache_count' LANGUAGE C STRICT VOLATILE;

-- The entries' encodings (src/entry.c), for writing the bookkeeping by hand.
CREATE FUNCTION kizunasync_test.entry_key(table_name text, pk text) RETURNS bytea
	AS 'MODULE_PATHNAME', 'kzt_entry_key' LANGUAGE C STRICT STABLE;
CREATE FUNCTION kizunasync_test.bucket_number(tid integer, label text) RETURNS bigint
	AS 'MODULE_PATHNAME', 'kzt_bucket_number' LANGUAGE C STABLE;
CREATE FUNCTION kizunasync_test.siphash(key bytea, data bytea) RETURNS bigint
	AS 'MODULE_PATHNAME', 'kzt_siphash' LANGUAGE C IMMUTABLE STRICT;

REVOKE ALL ON ALL ROUTINES IN SCHEMA kizunasync_test FROM PUBLIC;

-- Renumber: the change sequence's last value becomes last_value (the next
-- seq is last_value + 1), and this "incarnation" of the extension starts at
-- seq 1, so tests can work with small seqs.
CREATE FUNCTION kizunasync_test.set_numbering(last_value bigint) RETURNS bigint
LANGUAGE sql AS $$
	INSERT INTO kizunasync.reap_state AS r (id, reaped_seq, first_seq) VALUES (true, 0, 1)
	ON CONFLICT (id) DO UPDATE SET first_seq = 1;
	SELECT pg_catalog.setval('kizunasync.change_seq', GREATEST(last_value, 1), last_value > 0);
$$;
REVOKE ALL ON FUNCTION kizunasync_test.set_numbering(bigint) FROM PUBLIC;

-- Tests write the bookkeeping by hand through kizunasync.changelog and
-- kizunasync.tombstones, read-only views of the entries in production
-- (decisions/0092): these triggers, test-only, write the entries instead,
-- as the write path would encode them.  A table that is not synced gets a
-- negative id of its name.
CREATE FUNCTION kizunasync_test.table_id(table_name text) RETURNS integer
LANGUAGE sql STABLE AS $$
	SELECT COALESCE((SELECT id FROM kizunasync.synced_tables s WHERE s.table_name = $1),
					-1 - (hashtext($1) & 1048575))
$$;

CREATE FUNCTION kizunasync_test.entry_write() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	t integer;
	b bigint;
	k bytea;
	tomb boolean := TG_TABLE_NAME = 'tombstones';
	label text;
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		DELETE FROM kizunasync.entries WHERE seq = OLD.seq RETURNING tid, key INTO t, k;
		IF TG_OP = 'DELETE' THEN
			RETURN OLD;
		END IF;
		-- an entry of a table no longer synced shows no name: it keeps its id
		IF NEW.table_name IS DISTINCT FROM OLD.table_name THEN
			t := kizunasync_test.table_id(NEW.table_name);
		END IF;
		IF NEW.table_name IS DISTINCT FROM OLD.table_name OR NEW.pk IS DISTINCT FROM OLD.pk THEN
			k := NULL;
		END IF;
	ELSE
		t := kizunasync_test.table_id(NEW.table_name);
	END IF;
	k := COALESCE(k, kizunasync_test.entry_key(NEW.table_name, NEW.pk));
	label := NEW.bucket_value;
	b := kizunasync_test.bucket_number(t, label);
	IF tomb THEN
		INSERT INTO kizunasync.entries (seq, bucket, tid, kind, key, deleted_at, snapshot)
		VALUES (NEW.seq, b, t, 'd', k,
				COALESCE(NEW.deleted_at, now()), COALESCE(NEW.bucket_snapshot, '{}'));
	ELSE
		INSERT INTO kizunasync.entries (seq, bucket, tid, row_xmin, kind, key)
		VALUES (NEW.seq, b, t, NEW.row_xmin, 'r', k);
	END IF;
	IF label IS NOT NULL AND NOT EXISTS (SELECT 1 FROM kizunasync.buckets WHERE id = b) THEN
		INSERT INTO kizunasync.buckets (id, tid, label) VALUES (b, t, label);
	END IF;
	RETURN NEW;
END
$$;
-- (in place of the extension's own INSTEAD OF INSERT, which holds the rows
-- of an older release's dump until their synced table is restored, src/migrate.c)
DROP TRIGGER kizunasync_restore_row ON kizunasync.changelog;
DROP TRIGGER kizunasync_restore_row ON kizunasync.tombstones;
CREATE TRIGGER entry_write INSTEAD OF INSERT OR UPDATE OR DELETE ON kizunasync.changelog
	FOR EACH ROW EXECUTE FUNCTION kizunasync_test.entry_write();
CREATE TRIGGER entry_write INSTEAD OF INSERT OR UPDATE OR DELETE ON kizunasync.tombstones
	FOR EACH ROW EXECUTE FUNCTION kizunasync_test.entry_write();
ALTER VIEW kizunasync.tombstones ALTER COLUMN bucket_value SET DEFAULT '';
ALTER VIEW kizunasync.tombstones ALTER COLUMN bucket_snapshot SET DEFAULT '{}';
ALTER VIEW kizunasync.tombstones ALTER COLUMN deleted_at SET DEFAULT now();
REVOKE ALL ON FUNCTION kizunasync_test.table_id(text), kizunasync_test.entry_write() FROM PUBLIC;
