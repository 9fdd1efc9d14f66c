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
