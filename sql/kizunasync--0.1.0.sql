-- kizunasync 0.1.0 install script.  Assembled from sql/src/*.sql by make.
\echo Use "CREATE EXTENSION kizunasync" to load this file. \quit

-- The extension serves clients through the Supabase Data API, which switches
-- to one of these roles for every request.  They must exist before install.
DO $kz$
DECLARE
	missing text;
BEGIN
	SELECT string_agg(r, ', ' ORDER BY r) INTO missing
	  FROM unnest(ARRAY['anon', 'authenticated', 'service_role']) AS r
	 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r);
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'kizunasync requires the Supabase API roles, missing: %', missing
			USING ERRCODE = '42704',
				  HINT = 'On plain PostgreSQL create them first: CREATE ROLE anon NOLOGIN; CREATE ROLE authenticated NOLOGIN; CREATE ROLE service_role NOLOGIN BYPASSRLS;';
	END IF;
END
$kz$;

-- ---------------------------------------------------------------------------
-- Bookkeeping.  No API role gets any privilege on these tables (see the
-- grants part); every access goes through the SECURITY DEFINER functions.
-- ---------------------------------------------------------------------------

-- One global change sequence across all synced tables.  CACHE 1 matters: a
-- backend-local cache would hand out numbers outside the sequencing fence.
CREATE SEQUENCE kizunasync.change_seq AS bigint MINVALUE 1 START 1 CACHE 1;

-- Lock target of the sequencing fence (never holds rows).  Writers take
-- RowExclusiveLock on it around "draw a seq + insert its entry"; a pull takes
-- ShareLock for the instant it reads the sequence's high-water.  See
-- decisions/0010-sequencing.md.
CREATE TABLE kizunasync.seq_fence (dummy boolean);

-- Deployment settings (singleton row).
CREATE TABLE kizunasync.settings (
	id                  boolean PRIMARY KEY DEFAULT true CHECK (id),
	max_pull_scan       integer NOT NULL DEFAULT 5000 CHECK (max_pull_scan >= 1),
	max_pull_limit      integer NOT NULL DEFAULT 5000 CHECK (max_pull_limit >= 1),
	max_batch_size      integer NOT NULL DEFAULT 500 CHECK (max_batch_size BETWEEN 1 AND 1000),
	require_atomic      boolean NOT NULL DEFAULT false,
	tombstone_ttl_days  integer NOT NULL DEFAULT 30 CHECK (tombstone_ttl_days >= 1),
	client_ttl_days     integer NOT NULL DEFAULT 90 CHECK (client_ttl_days >= 1),
	hlc_max_skew_ms     integer NOT NULL DEFAULT 5000 CHECK (hlc_max_skew_ms >= 0),
	reap_schedule       text NOT NULL DEFAULT '16 3 * * *',
	compact_schedule    text NOT NULL DEFAULT '47 3 * * *',
	client_prune_schedule text NOT NULL DEFAULT '31 3 * * *'
);
INSERT INTO kizunasync.settings DEFAULT VALUES;

-- One row per synced table.  table_name is the wire name clients use.
CREATE TABLE kizunasync.synced_tables (
	table_name          text PRIMARY KEY,
	relid               regclass NOT NULL UNIQUE,
	sync_mode           text NOT NULL DEFAULT 'read-write'
		CHECK (sync_mode IN ('pull-only', 'read-write')),
	bucket_column       text,
	key_columns         text[] NOT NULL DEFAULT '{id}'
		CHECK (cardinality(key_columns) >= 1),
	conflict_mode       text NOT NULL DEFAULT 'arrival'
		CHECK (conflict_mode IN ('arrival', 'hlc')),
	conflict_journal    boolean NOT NULL DEFAULT false,
	soft_delete_column  text,
	tombstone_ttl_days  integer CHECK (tombstone_ttl_days >= 1),
	min_schema_version  integer NOT NULL DEFAULT 1,
	register_clients    boolean NOT NULL DEFAULT false,
	wakeup              boolean NOT NULL DEFAULT true,
	created_at          timestamptz NOT NULL DEFAULT now()
);

-- Latest change per (table, row key).  bucket_value is the row's bucket value
-- as text ('' on an unbucketed table, NULL for a NULL value on a bucketed one).
CREATE TABLE kizunasync.changelog (
	seq                 bigint PRIMARY KEY,
	table_name          text NOT NULL,
	pk                  text NOT NULL,
	bucket_value        text,
	UNIQUE (table_name, pk)
);
CREATE INDEX changelog_bucket_idx ON kizunasync.changelog (table_name, bucket_value, seq);

-- Deletes and bucket move-outs: one per (table, row key, bucket value left).
CREATE TABLE kizunasync.tombstones (
	seq                 bigint PRIMARY KEY,
	table_name          text NOT NULL,
	pk                  text NOT NULL,
	bucket_value        text NOT NULL DEFAULT '',
	bucket_snapshot     jsonb NOT NULL DEFAULT '{}',
	deleted_at          timestamptz NOT NULL DEFAULT now(),
	UNIQUE (table_name, pk, bucket_value)
);
CREATE INDEX tombstones_bucket_idx ON kizunasync.tombstones (table_name, bucket_value, seq);
CREATE INDEX tombstones_deleted_at_idx ON kizunasync.tombstones (deleted_at);

-- (user, table, bucket value) pairs a user has received a live row from.
CREATE TABLE kizunasync.bucket_grants (
	user_id             uuid NOT NULL,
	table_name          text NOT NULL,
	bucket_value        text NOT NULL,
	granted_at          timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (user_id, table_name, bucket_value)
);

-- Per-row, per-column HLC high-water (hlc conflict mode).
CREATE TABLE kizunasync.row_hlc (
	table_name          text NOT NULL,
	pk                  text NOT NULL,
	column_hlc          jsonb NOT NULL DEFAULT '{}',
	PRIMARY KEY (table_name, pk)
);

-- Opt-in journal of overwritten values (draws no seq).
CREATE TABLE kizunasync.conflict_journal (
	id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	table_name          text NOT NULL,
	pk                  text NOT NULL,
	column_name         text NOT NULL,
	loser_value         jsonb NOT NULL,
	winner_mutation_id  uuid NOT NULL,
	conflict_mode       text NOT NULL CHECK (conflict_mode IN ('arrival', 'hlc')),
	winner_seq          bigint,
	recorded_at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX conflict_journal_winner_seq_idx ON kizunasync.conflict_journal (winner_seq);
CREATE INDEX conflict_journal_row_idx ON kizunasync.conflict_journal (table_name, pk);

-- Exactly-once verdict ledger.  No row copies are kept: a stored verdict's
-- server_row is JSON null and is rendered again on replay.
CREATE TABLE kizunasync.verdicts (
	mutation_id         uuid PRIMARY KEY,
	user_id             uuid,
	table_name          text,
	pk                  text,
	verdict             jsonb NOT NULL,
	recorded_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX verdicts_recorded_at_idx ON kizunasync.verdicts (recorded_at);

-- Optional client registry.
CREATE TABLE kizunasync.clients (
	client_id           uuid PRIMARY KEY,
	user_id             uuid NOT NULL,
	cursor              text NOT NULL DEFAULT '0',
	last_mutation_id    uuid,
	schema_version      integer NOT NULL DEFAULT 1,
	last_seen           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX clients_user_id_idx ON kizunasync.clients (user_id);
CREATE INDEX clients_last_seen_idx ON kizunasync.clients (last_seen);

-- Reap horizon (singleton): the highest seq ever reaped.
CREATE TABLE kizunasync.reap_state (
	id                  boolean PRIMARY KEY DEFAULT true CHECK (id),
	reaped_seq          bigint NOT NULL DEFAULT 0,
	reaped_at           timestamptz
);
INSERT INTO kizunasync.reap_state DEFAULT VALUES;

-- pg_dump keeps user state of an extension only for registered tables.
SELECT pg_catalog.pg_extension_config_dump('kizunasync.settings', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.synced_tables', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.changelog', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.tombstones', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.bucket_grants', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.row_hlc', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.conflict_journal', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.verdicts', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.clients', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.reap_state', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.change_seq', '');
-- ---------------------------------------------------------------------------
-- Change capture, sequencing and provisioning (issue 3).
-- See decisions/0010-sequencing.md for the argument.
-- ---------------------------------------------------------------------------

-- Keeps every backend's table-config cache honest: any change to
-- synced_tables sends a relcache invalidation for it.
CREATE FUNCTION kizunasync._conf_changed() RETURNS trigger
	AS 'MODULE_PATHNAME', 'kz_conf_changed' LANGUAGE C SET search_path = '';
CREATE TRIGGER kizunasync_conf_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON kizunasync.synced_tables
	FOR EACH STATEMENT EXECUTE FUNCTION kizunasync._conf_changed();

-- The capture trigger.  SECURITY DEFINER: it writes bookkeeping even when
-- the writer is an API role.  TimeZone is pinned so timestamp bucket values
-- render in UTC, as to_jsonb does under UTC.
CREATE FUNCTION kizunasync._capture() RETURNS trigger
	AS 'MODULE_PATHNAME', 'kz_capture' LANGUAGE C
	SECURITY DEFINER SET search_path = '' SET TimeZone = 'UTC';

CREATE FUNCTION kizunasync._refuse_truncate() RETURNS trigger
	AS 'MODULE_PATHNAME', 'kz_refuse_truncate' LANGUAGE C SET search_path = '';

-- Number every existing row of a synced table (provisioning only).
CREATE FUNCTION kizunasync._seed(tbl regclass) RETURNS bigint
	AS 'MODULE_PATHNAME', 'kz_seed' LANGUAGE C STRICT
	SET search_path = '' SET TimeZone = 'UTC';

-- Test helper: the checkpoint token the horizon gives under this snapshot.
CREATE FUNCTION kizunasync._horizon(cursor text, max_holes integer DEFAULT 100) RETURNS text
	AS 'MODULE_PATHNAME', 'kz_horizon_sql' LANGUAGE C STRICT VOLATILE
	SET search_path = '';

-- Key types a row key may have (base type of a domain, typmod dropped).
CREATE FUNCTION kizunasync._key_type_ok(t regtype) RETURNS boolean
	LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
	SELECT t IN ('uuid'::pg_catalog.regtype, 'text'::pg_catalog.regtype,
				 'character varying'::pg_catalog.regtype, 'smallint'::pg_catalog.regtype,
				 'integer'::pg_catalog.regtype, 'bigint'::pg_catalog.regtype)
$$;

-- Forget every change recorded for one table.
CREATE FUNCTION kizunasync._forget_table(p_table text) RETURNS void
	LANGUAGE sql SET search_path = '' AS $$
	DELETE FROM kizunasync.changelog WHERE table_name = p_table;
	DELETE FROM kizunasync.tombstones WHERE table_name = p_table;
	DELETE FROM kizunasync.bucket_grants WHERE table_name = p_table;
	DELETE FROM kizunasync.row_hlc WHERE table_name = p_table;
	DELETE FROM kizunasync.conflict_journal WHERE table_name = p_table;
$$;

-- Drop our triggers from a table (quietly when absent).
CREATE FUNCTION kizunasync._drop_triggers(tbl regclass) RETURNS void
LANGUAGE plpgsql SET search_path = '' AS $fn$
DECLARE
	v_trg name;
BEGIN
	FOR v_trg IN SELECT t.tgname FROM pg_catalog.pg_trigger t
				  WHERE t.tgrelid = tbl
					AND t.tgname IN ('kizunasync_capture', 'kizunasync_no_truncate') LOOP
		EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', v_trg, tbl);
	END LOOP;
END
$fn$;

-- Test helper: is pk the canonical row key text of a row of a synced table?
CREATE FUNCTION kizunasync._pk_canonical(tbl regclass, pk text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kz_pk_canonical' LANGUAGE C STRICT STABLE SET search_path = '';

CREATE FUNCTION kizunasync.sync_table(
	tbl regclass,
	sync_mode text DEFAULT 'read-write',
	bucket_column text DEFAULT NULL,
	key_columns text[] DEFAULT '{id}',
	conflict_mode text DEFAULT 'arrival',
	conflict_journal boolean DEFAULT false,
	soft_delete_column text DEFAULT NULL,
	tombstone_ttl_days integer DEFAULT NULL,
	min_schema_version integer DEFAULT 1,
	register_clients boolean DEFAULT false,
	wakeup boolean DEFAULT true,
	table_name text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = ''
AS $fn$
DECLARE
	v_rel       pg_catalog.pg_class%ROWTYPE;
	v_name      text := coalesce(sync_table.table_name, (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = tbl));
	v_pk        text[];
	v_pk_deferrable boolean;
	v_col       text;
	v_type      regtype;
	v_old       kizunasync.synced_tables%ROWTYPE;
	v_reseed    boolean := true;
BEGIN
	SELECT * INTO v_rel FROM pg_catalog.pg_class c WHERE c.oid = tbl;
	IF v_rel.relkind <> 'r' THEN
		RAISE EXCEPTION 'kizunasync: % is not a plain table', tbl
			USING ERRCODE = '42809',
				  HINT = 'Views, foreign and partitioned tables cannot be synced.';
	END IF;
	IF v_rel.relnamespace = 'kizunasync'::pg_catalog.regnamespace THEN
		RAISE EXCEPTION 'kizunasync: cannot sync the bookkeeping table %', tbl
			USING ERRCODE = '42809';
	END IF;
	IF v_name IS NULL OR v_name = '' THEN
		RAISE EXCEPTION 'kizunasync: table_name must not be empty' USING ERRCODE = '22023';
	END IF;
	IF sync_mode IS NULL OR sync_mode NOT IN ('pull-only', 'read-write') THEN
		RAISE EXCEPTION 'kizunasync: invalid sync_mode "%"', sync_mode
			USING ERRCODE = '22023', HINT = 'Use ''read-write'' or ''pull-only''.';
	END IF;
	IF conflict_mode IS NULL OR conflict_mode NOT IN ('arrival', 'hlc') THEN
		RAISE EXCEPTION 'kizunasync: invalid conflict_mode "%"', conflict_mode
			USING ERRCODE = '22023', HINT = 'Use ''arrival'' or ''hlc''.';
	END IF;
	IF tombstone_ttl_days IS NOT NULL AND tombstone_ttl_days < 1 THEN
		RAISE EXCEPTION 'kizunasync: tombstone_ttl_days must be at least 1, not %', tombstone_ttl_days
			USING ERRCODE = '22023';
	END IF;
	IF key_columns IS NULL OR pg_catalog.cardinality(key_columns) = 0 THEN
		RAISE EXCEPTION 'kizunasync: key_columns must name the primary key columns'
			USING ERRCODE = '22023';
	END IF;

	-- every named column must exist
	FOREACH v_col IN ARRAY key_columns || ARRAY[bucket_column, soft_delete_column] LOOP
		CONTINUE WHEN v_col IS NULL;
		IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
						WHERE a.attrelid = tbl AND a.attname = v_col
						  AND a.attnum > 0 AND NOT a.attisdropped) THEN
			RAISE EXCEPTION 'kizunasync: column "%" of table % does not exist', v_col, tbl
				USING ERRCODE = '42703';
		END IF;
	END LOOP;

	-- the key columns must be exactly the primary key (any order)
	SELECT pg_catalog.array_agg(a.attname::text ORDER BY k.ord), con.condeferrable
	  INTO v_pk, v_pk_deferrable
	  FROM pg_catalog.pg_constraint con
	  CROSS JOIN LATERAL pg_catalog.unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
	  JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
	 WHERE con.conrelid = tbl AND con.contype = 'p'
	 GROUP BY con.oid, con.condeferrable;
	IF v_pk IS NULL THEN
		RAISE EXCEPTION 'kizunasync: table % has no primary key', tbl
			USING ERRCODE = '42P10', HINT = 'A synced table needs a primary key; key_columns names its columns.';
	END IF;
	IF pg_catalog.cardinality(key_columns) <> pg_catalog.cardinality(v_pk)
	   OR NOT (key_columns @> v_pk AND v_pk @> key_columns)
	   OR (SELECT pg_catalog.count(DISTINCT k) FROM pg_catalog.unnest(key_columns) k) <> pg_catalog.cardinality(key_columns) THEN
		RAISE EXCEPTION 'kizunasync: key_columns % are not the primary key of table %', key_columns, tbl
			USING ERRCODE = '42P10',
				  DETAIL = pg_catalog.format('The primary key is %s.', v_pk),
				  HINT = 'Name every primary-key column exactly once, in any order.';
	END IF;
	IF v_pk_deferrable THEN
		RAISE EXCEPTION 'kizunasync: the primary key of table % is deferrable', tbl
			USING ERRCODE = '0A000',
				  HINT = 'Row keys rely on an immediately checked primary key.';
	END IF;
	FOREACH v_col IN ARRAY key_columns LOOP
		SELECT a.atttypid::pg_catalog.regtype INTO v_type
		  FROM pg_catalog.pg_attribute a
		 WHERE a.attrelid = tbl AND a.attname = v_col;
		LOOP	-- resolve domains to their base type
			EXIT WHEN (SELECT t.typtype <> 'd' FROM pg_catalog.pg_type t WHERE t.oid = v_type);
			SELECT t.typbasetype::pg_catalog.regtype INTO v_type
			  FROM pg_catalog.pg_type t WHERE t.oid = v_type;
		END LOOP;
		IF NOT kizunasync._key_type_ok(v_type) THEN
			RAISE EXCEPTION 'kizunasync: key column "%" has type %, which no row key may have', v_col, v_type
				USING ERRCODE = '0A000',
					  HINT = 'Key columns may be uuid, text, varchar, smallint, integer or bigint.';
		END IF;
	END LOOP;

	IF EXISTS (SELECT 1 FROM kizunasync.synced_tables s
				WHERE s.table_name = v_name AND s.relid <> tbl) THEN
		RAISE EXCEPTION 'kizunasync: table name "%" is already used by another synced table', v_name
			USING ERRCODE = '42710', HINT = 'Pass a different table_name.';
	END IF;

	SELECT * INTO v_old FROM kizunasync.synced_tables s WHERE s.relid = tbl;
	IF FOUND THEN
		IF v_old.table_name <> v_name THEN
			RAISE EXCEPTION 'kizunasync: table % is already synced as "%"', tbl, v_old.table_name
				USING ERRCODE = '55000', HINT = 'Unsync it first to change its table name.';
		END IF;
		-- same key and bucket: configuration only; otherwise start over
		v_reseed := v_old.key_columns IS DISTINCT FROM key_columns
				 OR v_old.bucket_column IS DISTINCT FROM bucket_column;
		UPDATE kizunasync.synced_tables s
		   SET sync_mode = sync_table.sync_mode, bucket_column = sync_table.bucket_column,
			   key_columns = sync_table.key_columns, conflict_mode = sync_table.conflict_mode,
			   conflict_journal = sync_table.conflict_journal,
			   soft_delete_column = sync_table.soft_delete_column,
			   tombstone_ttl_days = sync_table.tombstone_ttl_days,
			   min_schema_version = sync_table.min_schema_version,
			   register_clients = sync_table.register_clients, wakeup = sync_table.wakeup
		 WHERE s.relid = tbl;
	ELSE
		INSERT INTO kizunasync.synced_tables
			(table_name, relid, sync_mode, bucket_column, key_columns, conflict_mode,
			 conflict_journal, soft_delete_column, tombstone_ttl_days, min_schema_version,
			 register_clients, wakeup)
		VALUES (v_name, tbl, sync_mode, bucket_column, key_columns, conflict_mode,
				conflict_journal, soft_delete_column, tombstone_ttl_days, min_schema_version,
				register_clients, wakeup);
	END IF;

	-- (Re)attach the triggers.  CREATE TRIGGER takes a lock that keeps
	-- writers out until we commit, so the seed below sees a still table.
	PERFORM kizunasync._drop_triggers(tbl);
	EXECUTE pg_catalog.format(
		'CREATE TRIGGER kizunasync_capture AFTER INSERT OR UPDATE OR DELETE ON %s '
		'FOR EACH ROW EXECUTE FUNCTION kizunasync._capture()', tbl);
	EXECUTE pg_catalog.format(
		'CREATE TRIGGER kizunasync_no_truncate BEFORE TRUNCATE ON %s '
		'FOR EACH STATEMENT EXECUTE FUNCTION kizunasync._refuse_truncate()', tbl);

	IF NOT v_reseed THEN
		RETURN 0;
	END IF;
	PERFORM kizunasync._forget_table(v_name);
	RETURN kizunasync._seed(tbl);
END
$fn$;

CREATE FUNCTION kizunasync.unsync_table(tbl regclass) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = ''
AS $fn$
DECLARE
	v_name text;
BEGIN
	SELECT s.table_name INTO v_name FROM kizunasync.synced_tables s WHERE s.relid = tbl;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'kizunasync: table % is not synced', tbl USING ERRCODE = '55000';
	END IF;
	PERFORM kizunasync._drop_triggers(tbl);
	DELETE FROM kizunasync.synced_tables s WHERE s.relid = tbl;
	PERFORM kizunasync._forget_table(v_name);
END
$fn$;

-- Test helpers for the push queue (no grants).
CREATE FUNCTION kizunasync._capture_queue(action text) RETURNS text
	AS 'MODULE_PATHNAME', 'kz_capture_queue_sql' LANGUAGE C STRICT VOLATILE SET search_path = '';
CREATE FUNCTION kizunasync._capture_queued_op(table_name text, pk text) RETURNS text
	AS 'MODULE_PATHNAME', 'kz_capture_queued_op_sql' LANGUAGE C STRICT VOLATILE SET search_path = '';

-- Dropping a synced table forgets its configuration and bookkeeping.
CREATE FUNCTION kizunasync._on_sql_drop() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = '' AS $fn$
DECLARE
	v_name text;
BEGIN
	IF pg_catalog.to_regclass('kizunasync.synced_tables') IS NULL THEN
		RETURN;		-- the extension itself is being dropped
	END IF;
	FOR v_name IN
		SELECT s.table_name
		  FROM kizunasync.synced_tables s
		  JOIN pg_catalog.pg_event_trigger_dropped_objects() d
			ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
		   AND d.objid = s.relid::pg_catalog.oid AND d.objsubid = 0
	LOOP
		DELETE FROM kizunasync.synced_tables s WHERE s.table_name = v_name;
		PERFORM kizunasync._forget_table(v_name);
	END LOOP;
END
$fn$;
CREATE EVENT TRIGGER kizunasync_on_sql_drop ON sql_drop
	EXECUTE FUNCTION kizunasync._on_sql_drop();
-- ---------------------------------------------------------------------------
-- Cursor token codec (src/cursor_core.c, src/cursor.c).  Internal helpers for
-- tests and operators: no API-role grant (99_grants.sql revokes PUBLIC).
-- Pull uses the codec from C directly.
-- ---------------------------------------------------------------------------

-- Parse a cursor token.  start is NULL for a checkpoint token.  Not strict:
-- a NULL token raises 22023 like any invalid one.
CREATE FUNCTION kizunasync.cursor_parse(cursor text,
		OUT start bigint, OUT high_water bigint, OUT holes bigint[])
	RETURNS record
	LANGUAGE C IMMUTABLE PARALLEL SAFE
	SET search_path = ''
	AS 'MODULE_PATHNAME', 'kizunasync_cursor_parse';

COMMENT ON FUNCTION kizunasync.cursor_parse(text) IS
	'internal: split a cursor token into start (NULL for a checkpoint), high-water and holes; raises 22023 on an invalid or NULL token';

-- Encode a cursor token.  start NULL gives a checkpoint token; holes are a
-- set (sorted here; duplicates, NULLs, values out of range are errors).
CREATE FUNCTION kizunasync.cursor_encode(start bigint, high_water bigint,
		holes bigint[] DEFAULT '{}')
	RETURNS text
	LANGUAGE C IMMUTABLE PARALLEL SAFE
	SET search_path = ''
	AS 'MODULE_PATHNAME', 'kizunasync_cursor_encode';

COMMENT ON FUNCTION kizunasync.cursor_encode(bigint, bigint, bigint[]) IS
	'internal: build a cursor token from start (NULL for a checkpoint), high-water and holes; raises 22023 on values the grammar cannot express';
-- ---------------------------------------------------------------------------
-- kizunasync.pull: the pull RPC (src/pull.c).  SECURITY DEFINER so it can
-- read the bookkeeping; application rows are read as the caller (RLS and
-- column privileges apply).  TimeZone is pinned to UTC so rows, bucket
-- values and tombstone times render the same for every caller.
-- EXECUTE: authenticated and service_role (99_grants.sql), not anon
-- (decisions/0020-pull-not-for-anon.md).
-- ---------------------------------------------------------------------------
CREATE FUNCTION kizunasync.pull(
	buckets jsonb,
	cursor text,
	schema_version integer,
	"limit" integer DEFAULT 500,
	client_id uuid DEFAULT NULL)
RETURNS jsonb
LANGUAGE c
VOLATILE
SECURITY DEFINER
SET search_path = ''
SET "TimeZone" = 'UTC'
AS 'MODULE_PATHNAME', 'kz_pull';

COMMENT ON FUNCTION kizunasync.pull(jsonb, text, integer, integer, uuid) IS
	'kizunasync row-sync pull: changes since a cursor, read under the caller''s RLS';
-- ---------------------------------------------------------------------------
-- push (src/push.c): verdicts, transforms, conflict modes, exactly-once
-- ledger.  SECURITY DEFINER for the bookkeeping; every application-table
-- read and write inside runs as the caller, so RLS and column privileges
-- apply.  The argument names are the wire keys of the rpc body.
-- ---------------------------------------------------------------------------
CREATE FUNCTION kizunasync.push(batch jsonb, last_mutation_id uuid, schema_version integer,
								client_id uuid DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'kz_push'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = '';

COMMENT ON FUNCTION kizunasync.push(jsonb, uuid, integer, uuid) IS
'Apply a batch of client mutations; one verdict per mutation (or a batch abort, or RESET_REQUIRED)';
-- ---------------------------------------------------------------------------
-- Retention (operator functions; EXECUTE for service_role only, see grants)
-- ---------------------------------------------------------------------------
CREATE FUNCTION kizunasync.reap_tombstones(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_reap_tombstones'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = '';
COMMENT ON FUNCTION kizunasync.reap_tombstones(integer) IS
  'removes tombstones older than their table''s TTL (bounded per call) and raises the reap horizon; returns the highest seq reaped';

CREATE FUNCTION kizunasync.compact_changelog(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_compact_changelog'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = '';
COMMENT ON FUNCTION kizunasync.compact_changelog(integer) IS
  'removes bookkeeping nothing can deliver any more (bounded per call); returns rows removed';

CREATE FUNCTION kizunasync.prune_clients(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_prune_clients'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = '';
COMMENT ON FUNCTION kizunasync.prune_clients(integer) IS
  'removes stale clients, verdicts older than client_ttl_days and grants of deleted users; returns clients removed';

-- Schedules the three retention jobs with pg_cron when it is installed in
-- this database; never requires it.  Re-running replaces the jobs.
CREATE FUNCTION kizunasync.schedule_jobs()
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = ''
AS $fn$
DECLARE
	s kizunasync.settings;
	have_cron boolean;
	jobs jsonb;
	j record;
BEGIN
	SELECT * INTO s FROM kizunasync.settings WHERE id;
	jobs := pg_catalog.jsonb_build_object(
		'kizunasync-reap-tombstones', s.reap_schedule,
		'kizunasync-compact-changelog', s.compact_schedule,
		'kizunasync-prune-clients', s.client_prune_schedule);
	have_cron := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron');
	IF have_cron THEN
		FOR j IN SELECT key AS name, value AS schedule FROM pg_catalog.jsonb_each_text(jobs)
		LOOP
			EXECUTE 'SELECT cron.schedule($1, $2, $3)'
			   USING j.name, j.schedule,
					 pg_catalog.format('SELECT kizunasync.%s()',
						CASE j.name
							WHEN 'kizunasync-reap-tombstones' THEN 'reap_tombstones'
							WHEN 'kizunasync-compact-changelog' THEN 'compact_changelog'
							ELSE 'prune_clients' END);
		END LOOP;
	END IF;
	RETURN pg_catalog.jsonb_build_object('jobs', jobs, 'pg_cron', have_cron);
END
$fn$;
COMMENT ON FUNCTION kizunasync.schedule_jobs() IS
  'schedules reap/compact/prune with pg_cron when installed (cron.schedule replaces jobs of the same name)';

-- Operator view: one row per synced table.
CREATE VIEW kizunasync.status AS
SELECT c.table_name,
	   c.relid AS relation,
	   c.sync_mode,
	   c.bucket_column,
	   c.key_columns,
	   c.conflict_mode,
	   (SELECT count(*) FROM kizunasync.changelog l WHERE l.table_name = c.table_name) AS changelog_entries,
	   (SELECT count(*) FROM kizunasync.tombstones t WHERE t.table_name = c.table_name) AS tombstones,
	   (SELECT r.reaped_seq FROM kizunasync.reap_state r WHERE r.id) AS reap_horizon,
	   (SELECT k.cursor FROM kizunasync.clients k
		 WHERE c.register_clients
		 ORDER BY k.last_seen LIMIT 1) AS oldest_client_cursor,
	   (SELECT min(k.last_seen) FROM kizunasync.clients k WHERE c.register_clients) AS oldest_client_seen
  FROM kizunasync.synced_tables c;
COMMENT ON VIEW kizunasync.status IS 'per synced table: mode, bucket column, changelog size, tombstones, reap horizon, oldest registered client';
-- ---------------------------------------------------------------------------
-- Attachments: integrity metadata around Supabase Storage objects.  Object
-- bytes never ride pull or push.  The object key convention is
-- <owner uuid>/<row key>/<file name>.  The table is private; clients use the
-- three functions, which check the caller's own policies on the owning row
-- and on storage.objects.
-- ---------------------------------------------------------------------------
CREATE TABLE kizunasync.attachments (
	id            uuid PRIMARY KEY DEFAULT pg_catalog.gen_random_uuid(),
	bucket_id     text NOT NULL,
	object_path   text NOT NULL,
	sha256        text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
	size          bigint CHECK (size >= 0),
	media_type    text,
	created_by    uuid NOT NULL,
	table_name    text,
	created_at    timestamptz NOT NULL DEFAULT now(),
	updated_at    timestamptz NOT NULL DEFAULT now(),
	UNIQUE (bucket_id, object_path)
);
SELECT pg_catalog.pg_extension_config_dump('kizunasync.attachments', '');

CREATE FUNCTION kizunasync.attachment_confirm(p_bucket text, p_path text, p_sha256 text,
											  p_size bigint, p_media_type text,
											  p_table text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'kz_attachment_confirm'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = '';

CREATE FUNCTION kizunasync.attachment_metadata(p_bucket_id text, p_object_path text)
RETURNS TABLE (sha256 text, size bigint, media_type text,
			   created_at timestamptz, updated_at timestamptz)
AS 'MODULE_PATHNAME', 'kz_attachment_metadata'
LANGUAGE C STABLE SECURITY DEFINER SET search_path = '';

CREATE FUNCTION kizunasync.attachment_vacuum(p_bucket text, p_path text)
RETURNS void
AS 'MODULE_PATHNAME', 'kz_attachment_vacuum'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = '';
-- ---------------------------------------------------------------------------
-- Privileges (last part of the install script).  Clients reach the extension
-- only through the granted RPCs: anon gets nothing at all (not even USAGE),
-- authenticated gets USAGE and EXECUTE on the client RPCs, service_role also
-- the operator functions and the status view.  Internal helpers and every
-- bookkeeping table stay private to the extension owner.
-- ---------------------------------------------------------------------------
REVOKE ALL ON ALL TABLES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL ROUTINES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
GRANT USAGE ON SCHEMA kizunasync TO authenticated, service_role;

DO $kz$
DECLARE
	f record;
BEGIN
	-- client RPCs
	FOR f IN
		SELECT p.oid::regprocedure AS sig
		  FROM pg_catalog.pg_proc p
		 WHERE p.pronamespace = 'kizunasync'::regnamespace
		   AND p.proname IN ('pull', 'push', 'attachment_confirm',
							 'attachment_metadata', 'attachment_vacuum')
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO authenticated, service_role', f.sig);
	END LOOP;
	-- operator functions
	FOR f IN
		SELECT p.oid::regprocedure AS sig
		  FROM pg_catalog.pg_proc p
		 WHERE p.pronamespace = 'kizunasync'::regnamespace
		   AND p.proname IN ('reap_tombstones', 'compact_changelog', 'prune_clients',
							 'schedule_jobs')
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO service_role', f.sig);
	END LOOP;
END
$kz$;
GRANT SELECT ON kizunasync.status TO service_role;
