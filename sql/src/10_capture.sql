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
