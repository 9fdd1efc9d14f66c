-- kzc: helper schema of the golden-transcript replay harness.
--
-- Installed by test/tools/replay.py into the replay database only (never by
-- the extension).  Everything here runs as the superuser that drives the
-- replay: resetting the extension's state between cases, the privileged
-- "server" writes of a transcript, the reap step, making tombstone
-- deleted_at deterministic, and comparing an rpc response with the golden one
-- (emitting pgTAP lines).  See decisions/0050-replay-harness.md.
--
-- kzc.fixture (table_name, key_columns, key_types) is filled by replay.py
-- from fixtures/domain.json before this file's functions are used.

SET client_min_messages = warning;
DROP SCHEMA IF EXISTS kzc CASCADE;
CREATE SCHEMA kzc;

CREATE TABLE kzc.fixture (
	table_name  text PRIMARY KEY,
	key_columns text[] NOT NULL
);

-- Tombstone deleted_at values the harness has set: (seq, value).  A tombstone
-- whose (seq, deleted_at) is not recorded here was created (or re-stamped by
-- the engine) since the last step, and gets the current step's timestamp.
CREATE TABLE kzc.stamped (
	seq        bigint PRIMARY KEY,
	deleted_at timestamptz NOT NULL
);

-- deleted_at of tombstones created by step n: 2026-01-01T00:00:<n>.000Z
-- (history ops use n = 0).
CREATE PROCEDURE kzc.stamp(step integer)
LANGUAGE plpgsql AS $$
BEGIN
	WITH fresh AS (
		UPDATE kizunasync.entries t
		   SET deleted_at = timestamptz '2026-01-01 00:00:00+00' + make_interval(secs => step)
		 WHERE t.kind = 'd'
		   AND NOT EXISTS (SELECT 1 FROM kzc.stamped s
							WHERE s.seq = t.seq AND s.deleted_at = t.deleted_at)
		RETURNING t.seq, t.deleted_at)
	INSERT INTO kzc.stamped (seq, deleted_at)
	SELECT seq, deleted_at FROM fresh
	ON CONFLICT (seq) DO UPDATE SET deleted_at = excluded.deleted_at;
END
$$;

-- Reset the extension state and apply a transcript's context.server.
CREATE PROCEDURE kzc.reset(context jsonb, next_seq bigint)
LANGUAGE plpgsql AS $$
DECLARE
	srv  jsonb := context -> 'server';
	f    record;
	conf jsonb;
	keys text[];
BEGIN
	-- Fixture rows go through ordinary DML (TRUNCATE of a synced table is
	-- refused); whatever bookkeeping that records is truncated just after.
	FOR f IN SELECT * FROM kzc.fixture ORDER BY table_name LOOP
		EXECUTE format('DELETE FROM public.%I', f.table_name);
	END LOOP;
	TRUNCATE kizunasync.entries, kizunasync.buckets, kizunasync.bucket_grants,
			 kizunasync.row_hlc, kizunasync.conflict_journal, kizunasync.verdicts,
			 kizunasync.clients;
	TRUNCATE kzc.stamped, kzc.retries;
	-- The transcripts number from small seqs: this "incarnation" starts at 1,
	-- and the reap's walks start from the first tombstone again.
	INSERT INTO kizunasync.reap_state (id, reaped_seq, reaped_at, first_seq)
		 VALUES (true, 0, NULL, 1)
	ON CONFLICT (id) DO UPDATE SET reaped_seq = 0, reaped_at = NULL, first_seq = 1,
		walk_ttl_days = NULL, walk_seqs = NULL;
	EXECUTE format('ALTER SEQUENCE kizunasync.change_seq RESTART WITH %s', next_seq);

	PERFORM kizunasync.configure(max_pull_scan => coalesce((srv ->> 'max_pull_scan')::integer, 5000));

	-- Every fixture table back to the harness defaults, then the transcript's
	-- per-table overrides.
	FOR f IN SELECT * FROM kzc.fixture ORDER BY table_name LOOP
		conf := coalesce(srv -> 'tables' -> f.table_name, '{}');
		keys := f.key_columns;
		IF jsonb_typeof(conf -> 'key_columns') = 'array' THEN
			keys := ARRAY(SELECT jsonb_array_elements_text(conf -> 'key_columns'));
		END IF;
		UPDATE kizunasync.synced_tables
		   SET min_schema_version = coalesce((srv ->> 'min_schema_version')::integer, 1),
			   tombstone_ttl_days = (srv ->> 'tombstone_ttl_days')::integer,
			   conflict_mode = coalesce(conf ->> 'conflict_mode', 'arrival'),
			   conflict_journal = coalesce((conf ->> 'conflict_journal')::boolean, false),
			   key_columns = keys,
			   soft_delete_column = conf ->> 'soft_delete_column'
		 WHERE table_name = f.table_name;
	END LOOP;
END
$$;

-- The key columns of the row whose key is pk (text as the corpus spells it:
-- one key column = its text, several = a JSON array of strings), as a jsonb
-- object column -> text, for jsonb_populate_record.
CREATE FUNCTION kzc.key_object(tbl text, pk text) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
	keys text[];
	vals jsonb;
	obj  jsonb := '{}';
BEGIN
	SELECT key_columns INTO keys FROM kzc.fixture WHERE table_name = tbl;
	IF keys IS NULL THEN
		RAISE EXCEPTION 'kzc: unknown fixture table "%"', tbl;
	END IF;
	IF cardinality(keys) = 1 THEN
		RETURN jsonb_build_object(keys[1], pk);
	END IF;
	vals := pk::jsonb;
	IF jsonb_typeof(vals) <> 'array' OR jsonb_array_length(vals) <> cardinality(keys) THEN
		RAISE EXCEPTION 'kzc: pk % does not spell % key columns of "%"', pk, cardinality(keys), tbl;
	END IF;
	FOR i IN 1 .. cardinality(keys) LOOP
		obj := obj || jsonb_build_object(keys[i], vals ->> (i - 1));
	END LOOP;
	RETURN obj;
END
$$;

-- "t.k1 = k.k1 AND ..." over the table's key columns.
CREATE FUNCTION kzc.key_predicate(tbl text) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT string_agg(format('t.%1$I = k.%1$I', c), ' AND ')
	  FROM kzc.fixture, unnest(key_columns) AS c
	 WHERE table_name = tbl
$$;

-- A server-side write by another device: superuser, ordinary DML so the
-- capture triggers fire.  An existing row gets only the listed columns;
-- otherwise key columns + columns are inserted (unlisted columns keep their
-- defaults).  hlc seeds the per-column HLC high-water of hlc-mode tables.
CREATE PROCEDURE kzc.server_upsert(tbl text, pk text, cols jsonb, hlc text, step integer)
LANGUAGE plpgsql AS $$
DECLARE
	keyobj jsonb := kzc.key_object(tbl, pk);
	pred   text := kzc.key_predicate(tbl);
	found  boolean;
	setl   text;
	insl   text;
BEGIN
	EXECUTE format('SELECT EXISTS (SELECT 1 FROM public.%1$I t, jsonb_populate_record(NULL::public.%1$I, $1) k WHERE %2$s)',
				   tbl, pred)
	   INTO found USING keyobj;
	IF found THEN
		SELECT string_agg(format('%1$I = k.%1$I', c), ', ') INTO setl
		  FROM jsonb_object_keys(cols) AS c;
		IF setl IS NOT NULL THEN
			EXECUTE format('UPDATE public.%1$I t SET %2$s FROM jsonb_populate_record(NULL::public.%1$I, $1) k WHERE %3$s',
						   tbl, setl, pred)
			   USING keyobj || cols;
		END IF;
	ELSE
		SELECT string_agg(format('%I', c), ', ') INTO insl
		  FROM (SELECT jsonb_object_keys(keyobj || cols) AS c) s;
		EXECUTE format('INSERT INTO public.%1$I (%2$s) SELECT %2$s FROM jsonb_populate_record(NULL::public.%1$I, $1)',
					   tbl, insl)
		   USING keyobj || cols;
	END IF;

	IF hlc IS NOT NULL AND EXISTS (SELECT 1 FROM kizunasync.synced_tables
									WHERE table_name = tbl AND conflict_mode = 'hlc') THEN
		INSERT INTO kizunasync.row_hlc AS r (table_name, pk, column_hlc)
		SELECT tbl, pk, coalesce(jsonb_object_agg(c, hlc), '{}')
		  FROM jsonb_object_keys(cols) AS c
		ON CONFLICT ON CONSTRAINT row_hlc_pkey DO UPDATE SET column_hlc = r.column_hlc || excluded.column_hlc;
	END IF;
	CALL kzc.stamp(step);
END
$$;

CREATE PROCEDURE kzc.server_delete(tbl text, pk text, step integer)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('DELETE FROM public.%1$I t USING jsonb_populate_record(NULL::public.%1$I, $1) k WHERE %2$s',
				   tbl, kzc.key_predicate(tbl))
	   USING kzc.key_object(tbl, pk);
	DELETE FROM kizunasync.row_hlc WHERE table_name = tbl AND row_hlc.pk = server_delete.pk;
	CALL kzc.stamp(step);
END
$$;

-- The reaper runs now: age every tombstone past its TTL, then call the
-- engine's reaper (no emulation: if it is missing, the step fails).
CREATE PROCEDURE kzc.reap(step integer)
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE kizunasync.entries t
	   SET deleted_at = now() - make_interval(days => 1 + coalesce(
			   (SELECT st.tombstone_ttl_days FROM kizunasync.synced_tables st WHERE st.id = t.tid),
			   (kizunasync.configure() ->> 'tombstone_ttl_days')::integer))
	 WHERE t.kind = 'd';
	PERFORM kizunasync.reap_tombstones();
	CALL kzc.stamp(step);
END
$$;

-- Project a row image to the transcript's declared columns.
CREATE FUNCTION kzc.project(r jsonb, declared text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN jsonb_typeof(r) = 'object'
				THEN coalesce((SELECT jsonb_object_agg(key, value) FROM jsonb_each(r)
								WHERE key = ANY (declared)), '{}')
				ELSE r END
$$;

-- Normalise a response: project row images; drop an empty "conflicts" of a
-- pull.  Every other key stays, so an extra or missing key is a difference.
CREATE FUNCTION kzc.normalize(rpc text, actual jsonb, declared text[]) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	res jsonb := actual;
BEGIN
	IF jsonb_typeof(actual) <> 'object' THEN
		RETURN actual;
	END IF;
	IF rpc = 'pull' THEN
		IF res -> 'conflicts' = '[]' THEN
			res := res - 'conflicts';
		END IF;
		IF jsonb_typeof(res -> 'rows') = 'array' THEN
			res := jsonb_set(res, '{rows}', coalesce((
				SELECT jsonb_agg(CASE WHEN jsonb_typeof(e) = 'object' AND e ? 'row'
									  THEN jsonb_set(e, '{row}', kzc.project(e -> 'row', declared))
									  ELSE e END ORDER BY o)
				  FROM jsonb_array_elements(res -> 'rows') WITH ORDINALITY AS x(e, o)), '[]'));
		END IF;
	ELSE
		IF jsonb_typeof(res -> 'verdicts') = 'array' THEN
			res := jsonb_set(res, '{verdicts}', coalesce((
				SELECT jsonb_agg(CASE WHEN jsonb_typeof(e) = 'object' AND e ? 'server_row'
									  THEN jsonb_set(e, '{server_row}', kzc.project(e -> 'server_row', declared))
									  ELSE e END ORDER BY o)
				  FROM jsonb_array_elements(res -> 'verdicts') WITH ORDINALITY AS x(e, o)), '[]'));
		END IF;
		IF jsonb_typeof(res -> 'batch') = 'object' AND res -> 'batch' ? 'server_row' THEN
			res := jsonb_set(res, '{batch,server_row}', kzc.project(res -> 'batch' -> 'server_row', declared));
		END IF;
	END IF;
	RETURN res;
END
$$;

-- Tier-2 mask: seq/cursor/winner_seq tokens keep only their shape, every
-- deleted_at is replaced.  Only well-formed decimals (no leading zeros) are
-- masked, so a malformed token still shows as a difference.
CREATE FUNCTION kzc.mask(v jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	CASE jsonb_typeof(v)
	WHEN 'object' THEN
		RETURN coalesce((SELECT jsonb_object_agg(key,
					CASE
					WHEN key = 'deleted_at' THEN to_jsonb('<deleted_at>'::text)
					WHEN key IN ('seq', 'cursor', 'winner_seq') AND jsonb_typeof(value) = 'string'
						 AND value #>> '{}' ~ '^((0|[1-9][0-9]*):)?(0|[1-9][0-9]*)(~[1-9][0-9]*(\.[1-9][0-9]*)*)?$'
						THEN to_jsonb(CASE WHEN value #>> '{}' LIKE '%:%' THEN '<start>:<seq>' ELSE '<seq>' END)
					ELSE kzc.mask(value) END)
				FROM jsonb_each(v)), '{}');
	WHEN 'array' THEN
		RETURN coalesce((SELECT jsonb_agg(kzc.mask(e) ORDER BY o)
						   FROM jsonb_array_elements(v) WITH ORDINALITY AS x(e, o)), '[]');
	ELSE
		RETURN v;
	END CASE;
END
$$;

-- Canonical-JSON rule C-4 that jsonb equality cannot see (1 = 1.0): the
-- first place where a number is not an integer 0..2^31-1, or a seq, cursor
-- or winner_seq is not a string.  NULL when there is none.
CREATE FUNCTION kzc.c4_problem(v jsonb, path text DEFAULT '$') RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	k text;
	e jsonb;
	p text;
	i integer := 0;
BEGIN
	CASE jsonb_typeof(v)
	WHEN 'object' THEN
		FOR k, e IN SELECT key, value FROM jsonb_each(v) ORDER BY key LOOP
			IF k IN ('seq', 'cursor', 'winner_seq') AND jsonb_typeof(e) NOT IN ('string', 'null') THEN
				RETURN format('%s.%s is a %s, not a string', path, k, jsonb_typeof(e));
			END IF;
			p := kzc.c4_problem(e, path || '.' || k);
			IF p IS NOT NULL THEN RETURN p; END IF;
		END LOOP;
	WHEN 'array' THEN
		FOR e IN SELECT x FROM jsonb_array_elements(v) AS x LOOP
			p := kzc.c4_problem(e, format('%s[%s]', path, i));
			IF p IS NOT NULL THEN RETURN p; END IF;
			i := i + 1;
		END LOOP;
	WHEN 'number' THEN
		IF v::text !~ '^(0|[1-9][0-9]{0,9})$' OR v::text::numeric > 2147483647 THEN
			RETURN format('%s is %s, not an integer in 0..2^31-1', path, v::text);
		END IF;
	ELSE
		NULL;
	END CASE;
	RETURN NULL;
END
$$;

-- Compare one rpc response (text as returned, or '' with err set) with the
-- golden response.  Returns (tier1, tier2, have, why).
CREATE FUNCTION kzc.compare(rpc text, actual text, err text, expected jsonb, declared text[],
							OUT tier1 boolean, OUT tier2 boolean, OUT have jsonb, OUT why text)
LANGUAGE plpgsql AS $$
DECLARE
	raw jsonb;
BEGIN
	tier1 := false;
	tier2 := false;
	IF coalesce(err, '') <> '' THEN
		why := 'error: ' || err;
		RETURN;
	END IF;
	IF actual = '<SQL NULL>' THEN
		why := 'the rpc returned SQL NULL';
		RETURN;
	END IF;
	BEGIN
		raw := actual::jsonb;
	EXCEPTION WHEN others THEN
		why := 'the rpc result is not JSON: ' || left(actual, 200);
		RETURN;
	END;
	have := kzc.normalize(rpc, raw, declared);
	tier2 := kzc.mask(have) = kzc.mask(expected);
	tier1 := have = expected;
	IF tier1 THEN
		why := kzc.c4_problem(have);
		IF why IS NOT NULL THEN
			tier1 := false;
			why := 'canonical JSON (C-4): ' || why;
		END IF;
	END IF;
END
$$;

-- pgTAP lines for one rpc step: "tier 1 (byte)" and "tier 2 (semantic)",
-- plus machine-readable diagnostics (# KZ ...) for replay.py's report.
CREATE FUNCTION kzc.check(label text, rpc text, actual text, err text, expected jsonb, declared text[])
RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	c record;
BEGIN
	c := kzc.compare(rpc, actual, err, expected, declared);
	RETURN NEXT ok(c.tier1, label || ': tier 1 (byte)');
	RETURN NEXT ok(c.tier2, label || ': tier 2 (semantic)');
	IF NOT c.tier1 THEN
		IF c.why IS NOT NULL THEN
			RETURN NEXT diag('KZ why ' || label || E'\t' || replace(c.why, E'\n', ' '));
		END IF;
		IF c.have IS NOT NULL THEN
			RETURN NEXT diag('KZ have ' || label || E'\t' || c.have::text);
		END IF;
		RETURN NEXT diag('KZ want ' || label || E'\t' || expected::text);
	END IF;
END
$$;

-- One pgTAP line for a setup or server step.
CREATE FUNCTION kzc.step_ok(label text, err text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN NEXT ok(coalesce(err, '') = '', label);
	IF coalesce(err, '') <> '' THEN
		RETURN NEXT diag('KZ why ' || label || E'\t' || 'error: ' || replace(err, E'\n', ' '));
	END IF;
END
$$;

-- Isolation-tester flavour of check: no pgTAP, one text line per outcome.
CREATE FUNCTION kzc.iso_check(label text, rpc text, expected jsonb, declared text[]) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	actual text := current_setting('kzc.result', true);
	c record;
BEGIN
	IF coalesce(actual, '') = '' THEN
		RETURN NEXT 'KZ|' || label || '|tier1=no|tier2=no';
		RETURN NEXT 'KZ|' || label || '|why|the rpc did not complete (see its ERROR above)';
		RETURN;
	END IF;
	c := kzc.compare(rpc, actual, '', expected, declared);
	RETURN NEXT format('KZ|%s|tier1=%s|tier2=%s', label,
					   CASE WHEN c.tier1 THEN 'ok' ELSE 'no' END,
					   CASE WHEN c.tier2 THEN 'ok' ELSE 'no' END);
	IF NOT c.tier1 THEN
		IF c.why IS NOT NULL THEN
			RETURN NEXT 'KZ|' || label || '|why|' || replace(c.why, E'\n', ' ');
		END IF;
		IF c.have IS NOT NULL THEN
			RETURN NEXT 'KZ|' || label || '|have|' || c.have::text;
		END IF;
		RETURN NEXT 'KZ|' || label || '|want|' || expected::text;
	END IF;
END
$$;

-- ------------------------------------------------------------------------
-- Pulls the way a client of a read replica makes them (issue 15,
-- decisions/0085): replay.py --pull-via standby|readonly routes every pull
-- rpc through kzc.client_pull, which runs it over dblink on target (a hot
-- standby, or the primary itself) in a READ ONLY transaction, once target
-- has replayed everything the primary has written so far.  A KZL03 answer
-- (retry on the primary) is retried on the primary read-write, as the
-- README tells clients to, and recorded in kzc.retries; any other error
-- comes back with its SQLSTATE and message.

CREATE TABLE kzc.retries (
	step   integer NOT NULL,
	detail text NOT NULL
);

-- Flush the primary's WAL (a held-open transaction's records may sit
-- unflushed, and a walsender sends only flushed WAL), then wait until
-- target has replayed everything written before the call.
CREATE PROCEDURE kzc.wait_replayed(target text, self text)
LANGUAGE plpgsql AS $$
DECLARE
	lsn   pg_lsn := pg_current_wal_lsn();
	done  boolean;
	t0    timestamptz := clock_timestamp();
BEGIN
	PERFORM * FROM dblink(self, 'SELECT pg_catalog.txid_current()') AS t(x bigint);
	IF NOT 'kzc_target' = ANY (coalesce(dblink_get_connections(), '{}')) THEN
		PERFORM dblink_connect('kzc_target', target);
	END IF;
	LOOP
		SELECT r INTO done FROM dblink('kzc_target',
			format('SELECT NOT pg_catalog.pg_is_in_recovery() OR pg_catalog.pg_last_wal_replay_lsn() >= %L::pg_lsn', lsn))
			AS t(r boolean);
		EXIT WHEN done;
		IF clock_timestamp() - t0 > interval '60 seconds' THEN
			RAISE EXCEPTION 'the standby did not replay up to % within 60 s', lsn;
		END IF;
		PERFORM pg_sleep(0.005);
	END LOOP;
END
$$;

CREATE FUNCTION kzc.client_pull(target text, self text, claims text, call text, step integer)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	body text := format('SET LOCAL ROLE authenticated; '
						'SELECT pg_catalog.set_config(''request.jwt.claims'', %L, true); '
						'SELECT (%s)::text', claims, call);
	res  text;
BEGIN
	CALL kzc.wait_replayed(target, self);
	BEGIN
		SELECT r INTO res FROM dblink(target, 'SET TRANSACTION READ ONLY; ' || body) AS t(r text);
		RETURN res;
	EXCEPTION WHEN SQLSTATE 'KZL03' THEN
		INSERT INTO kzc.retries VALUES (step, SQLERRM);
	END;
	SELECT r INTO res FROM dblink(self, body) AS t(r text);
	RETURN res;
END
$$;

RESET client_min_messages;
