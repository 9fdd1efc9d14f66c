-- kizunasync 0.1.0 -> 0.2.0 upgrade script.  Assembled by make from
-- sql/upgrade/0.1.0--0.2.0.pre.sql, the routine parts of sql/src/ (every
-- function, the status view, comments) and
-- sql/upgrade/0.1.0--0.2.0.post.sql; frozen when 0.2.0 is released
-- (decisions/0080).  test/t/upgrade.sh checks that an upgraded database has
-- exactly the objects of a fresh 0.2.0 install.
\echo Use "ALTER EXTENSION kizunasync UPDATE TO '0.2.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- 0. Before anything changes.
--
-- a. The schema: as CREATE EXTENSION refuses it (sql/src/00_schema.sql), the
-- update refuses a schema kizunasync that a role other than a superuser owns
-- or may create objects in, or that holds objects which are not the
-- extension's: the library runs its privileged sections as the schema's
-- owner (decisions/0060), and 0.1.0's install script did not check.  The
-- hints say how to take the schema back; dropping it would drop the
-- extension's data.
-- ---------------------------------------------------------------------------
DO $kz$
DECLARE
	v_ext pg_catalog.oid;
	v_extowner pg_catalog.text;
	owner_name pg_catalog.text;
	creators pg_catalog.text;
	strays pg_catalog.text;
BEGIN
	SELECT e.oid, pg_catalog.quote_ident(r.rolname) INTO v_ext, v_extowner
	  FROM pg_catalog.pg_extension e
	  JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) e.extowner
	 WHERE e.extname OPERATOR(pg_catalog.=) 'kizunasync';
	SELECT r.rolname INTO owner_name
	  FROM pg_catalog.pg_namespace n
	  JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
	 WHERE n.nspname OPERATOR(pg_catalog.=) 'kizunasync' AND NOT r.rolsuper;
	IF owner_name IS NOT NULL THEN
		RAISE EXCEPTION 'schema "kizunasync" is owned by role "%", which is not a superuser', owner_name
			USING ERRCODE = '42P06',
				  DETAIL = 'kizunasync runs its privileged code as the owner of its schema.  The schema existed before CREATE EXTENSION, which adopted it; nothing was updated.',
				  HINT = pg_catalog.format('Make a superuser own it (ALTER SCHEMA kizunasync OWNER TO %s), check that no other role may create objects in it, then run ALTER EXTENSION kizunasync UPDATE again.', v_extowner);
	END IF;
	SELECT pg_catalog.string_agg(CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
									  ELSE pg_catalog.quote_ident(r.rolname) END, ', ' ORDER BY r.rolname)
	  INTO creators
	  FROM pg_catalog.pg_namespace n
	 CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) a
	  LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee
	 WHERE n.nspname OPERATOR(pg_catalog.=) 'kizunasync'
	   AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
	   AND NOT coalesce(r.rolsuper, false);
	IF creators IS NOT NULL THEN
		RAISE EXCEPTION 'roles that are not superusers may create objects in schema "kizunasync": %', creators
			USING ERRCODE = '42P06',
				  DETAIL = 'Objects in the extension''s schema are found by the extension''s callers; nothing was updated.',
				  HINT = pg_catalog.format('REVOKE CREATE ON SCHEMA kizunasync FROM %s; then run ALTER EXTENSION kizunasync UPDATE again.', creators);
	END IF;
	SELECT pg_catalog.string_agg(o.type OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) o.identity, ', '
								 ORDER BY o.type, o.identity)
	  INTO strays
	  FROM pg_catalog.pg_depend d
	 CROSS JOIN LATERAL pg_catalog.pg_identify_object(d.classid, d.objid, d.objsubid) o
	 WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
	   AND d.refobjid OPERATOR(pg_catalog.=) (SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) 'kizunasync')
	   AND d.classid OPERATOR(pg_catalog.<>) 'pg_catalog.pg_extension'::pg_catalog.regclass
	   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend m
					    WHERE m.classid OPERATOR(pg_catalog.=) d.classid AND m.objid OPERATOR(pg_catalog.=) d.objid
						  AND m.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
						  AND m.refobjid OPERATOR(pg_catalog.=) v_ext AND m.deptype OPERATOR(pg_catalog.=) 'e');
	IF strays IS NOT NULL THEN
		RAISE EXCEPTION 'schema "kizunasync" holds objects that are not the extension''s'
			USING ERRCODE = '42P06',
				  DETAIL = pg_catalog.format('Not the extension''s: %s.  Nothing was updated.', strays),
				  HINT = 'Move them to another schema or drop them, then run ALTER EXTENSION kizunasync UPDATE again.';
	END IF;
END
$kz$;

-- b. Objects of other roles that depend on what the update drops or
-- rebuilds: the helpers dropped in 1, the bookkeeping tables (columns
-- retyped, tables rewritten in 2) and their row types.  No role but the
-- extension owner may use any of these (no EXECUTE, no SELECT), but
-- PostgreSQL checks those privileges when a view runs, not when it is
-- created: a member of authenticated (USAGE on the schema) can create
-- TEMP VIEW v AS SELECT kizunasync._key_type_ok('int4'), and the update's
-- DROP FUNCTION or ALTER TABLE would then fail and leave the database at
-- 0.1.0, which the library no longer serves.  So, before anything changes:
-- such an object in a temporary schema (any session's; every role may make
-- them) is dropped, with a WARNING naming it, as its session's end would
-- drop it; any other (only a role with CREATE in some schema can make one)
-- stops the update, naming each object, its owner and what it depends on.
-- The status view is not in the list: it keeps its columns and is replaced
-- in place (1 and sql/src/50_retention.sql), so views over it stay valid.
-- ---------------------------------------------------------------------------
DO $kz$
DECLARE
	v_ext pg_catalog.oid := (SELECT e.oid FROM pg_catalog.pg_extension e
							  WHERE e.extname OPERATOR(pg_catalog.=) 'kizunasync');
	v record;
	blockers pg_catalog.text[] := '{}';
	temps pg_catalog.text[] := '{}';
	notes pg_catalog.text[] := '{}';
	i pg_catalog.int4;
BEGIN
	FOR v IN
		WITH changed (classid, objid) AS (
			-- the helpers dropped in 1 (keep the two lists in step)
			SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, f.oid
			  FROM pg_catalog.unnest(ARRAY[
					pg_catalog.to_regprocedure('kizunasync._capture_queue(text)'),
					pg_catalog.to_regprocedure('kizunasync._capture_queued_op(text, text)'),
					pg_catalog.to_regprocedure('kizunasync._drop_triggers(regclass)'),
					pg_catalog.to_regprocedure('kizunasync._forget_table(text)'),
					pg_catalog.to_regprocedure('kizunasync._horizon(text, integer)'),
					pg_catalog.to_regprocedure('kizunasync._key_type_ok(regtype)'),
					pg_catalog.to_regprocedure('kizunasync._pk_canonical(regclass, text)'),
					pg_catalog.to_regprocedure('kizunasync._seed(regclass)')]::pg_catalog.oid[]) f (oid)
			 WHERE f.oid IS NOT NULL
			UNION ALL
			SELECT x.classid, x.objid
			  FROM pg_catalog.pg_depend m
			  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) m.objid
			  JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) c.reltype
			 CROSS JOIN LATERAL (VALUES ('pg_catalog.pg_class'::pg_catalog.regclass, c.oid),
										('pg_catalog.pg_type'::pg_catalog.regclass, c.reltype),
										('pg_catalog.pg_type'::pg_catalog.regclass, t.typarray)) x (classid, objid)
			 WHERE m.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
			   AND m.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
			   AND m.refobjid OPERATOR(pg_catalog.=) v_ext AND m.deptype OPERATOR(pg_catalog.=) 'e'
			   AND c.relkind OPERATOR(pg_catalog.=) 'r'
		), dep AS (
			-- each dependent and the object that holds it: a view for its
			-- rule, a table for its default, constraint, trigger or policy,
			-- a domain for its constraint, else itself
			SELECT d.classid, d.objid, d.objsubid, d.refclassid, d.refobjid, d.refobjsubid,
				   CASE WHEN d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_constraint'::pg_catalog.regclass
						 AND k.conrelid OPERATOR(pg_catalog.=) 0
						THEN 'pg_catalog.pg_type'::pg_catalog.regclass
						WHEN d.classid OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.pg_rewrite', 'pg_catalog.pg_attrdef',
							'pg_catalog.pg_constraint', 'pg_catalog.pg_trigger', 'pg_catalog.pg_policy']::pg_catalog.regclass[])
						THEN 'pg_catalog.pg_class'::pg_catalog.regclass
						ELSE d.classid END AS top_classid,
				   coalesce(w.ev_class, a.adrelid, nullif(k.conrelid, 0), k.contypid, g.tgrelid, p.polrelid, d.objid) AS top_objid
			  FROM pg_catalog.pg_depend d
			  JOIN changed ch ON ch.classid OPERATOR(pg_catalog.=) d.refclassid AND ch.objid OPERATOR(pg_catalog.=) d.refobjid
			  LEFT JOIN pg_catalog.pg_rewrite w ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
				   AND w.oid OPERATOR(pg_catalog.=) d.objid
			  LEFT JOIN pg_catalog.pg_attrdef a ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
				   AND a.oid OPERATOR(pg_catalog.=) d.objid
			  LEFT JOIN pg_catalog.pg_constraint k ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_constraint'::pg_catalog.regclass
				   AND k.oid OPERATOR(pg_catalog.=) d.objid
			  LEFT JOIN pg_catalog.pg_trigger g ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_trigger'::pg_catalog.regclass
				   AND g.oid OPERATOR(pg_catalog.=) d.objid
			  LEFT JOIN pg_catalog.pg_policy p ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_policy'::pg_catalog.regclass
				   AND p.oid OPERATOR(pg_catalog.=) d.objid
			 WHERE d.deptype OPERATOR(pg_catalog.=) 'n'
		)
		SELECT t.type AS top_type, t.identity AS top_identity,
			   (SELECT o.type OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) o.identity
				  FROM pg_catalog.pg_identify_object(dep.classid, dep.objid, dep.objsubid) o) AS what,
			   (SELECT o.type OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) o.identity
				  FROM pg_catalog.pg_identify_object(dep.refclassid, dep.refobjid, dep.refobjsubid) o) AS needs,
			   coalesce(t.schema OPERATOR(pg_catalog.~) '^pg_temp_[0-9]+$', false) AS temporary,
			   coalesce((SELECT c.relowner FROM pg_catalog.pg_class c
						  WHERE dep.top_classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
							AND c.oid OPERATOR(pg_catalog.=) dep.top_objid),
						(SELECT y.typowner FROM pg_catalog.pg_type y
						  WHERE dep.top_classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_type'::pg_catalog.regclass
							AND y.oid OPERATOR(pg_catalog.=) dep.top_objid),
						(SELECT f.proowner FROM pg_catalog.pg_proc f
						  WHERE dep.top_classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
							AND f.oid OPERATOR(pg_catalog.=) dep.top_objid))::pg_catalog.regrole::pg_catalog.text AS owner
		  FROM dep
		 CROSS JOIN LATERAL pg_catalog.pg_identify_object(dep.top_classid, dep.top_objid, 0) t
		 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend m
							WHERE m.classid OPERATOR(pg_catalog.=) dep.top_classid AND m.objid OPERATOR(pg_catalog.=) dep.top_objid
							  AND m.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
							  AND m.refobjid OPERATOR(pg_catalog.=) v_ext AND m.deptype OPERATOR(pg_catalog.=) 'e')
		 ORDER BY 2, 3, 4
	LOOP
		IF NOT v.temporary THEN
			blockers := blockers OPERATOR(pg_catalog.||)
				pg_catalog.format('%s %s (owner %s%s) depends on %s', v.top_type, v.top_identity,
					coalesce(v.owner, '?'),
					CASE WHEN v.what OPERATOR(pg_catalog.=) pg_catalog.format('%s %s', v.top_type, v.top_identity)
							   OR v.what OPERATOR(pg_catalog.~~) 'rule "\_RETURN" on %'
						 THEN '' ELSE '; its ' OPERATOR(pg_catalog.||) v.what END, v.needs);
		ELSIF NOT pg_catalog.format('%s %s', v.top_type, v.top_identity) OPERATOR(pg_catalog.=) ANY (temps) THEN
			temps := temps OPERATOR(pg_catalog.||) pg_catalog.format('%s %s', v.top_type, v.top_identity);
			notes := notes OPERATOR(pg_catalog.||) pg_catalog.format('dropping temporary %s %s (owner %s): %s depends on %s',
				v.top_type, v.top_identity, coalesce(v.owner, '?'), v.what, v.needs);
		END IF;
	END LOOP;
	IF pg_catalog.cardinality(blockers) OPERATOR(pg_catalog.>) 0 THEN
		RAISE EXCEPTION 'objects that are not the extension''s depend on objects the update drops or rebuilds'
			USING ERRCODE = '2BP01',
				  DETAIL = pg_catalog.array_to_string(blockers, E'\n') OPERATOR(pg_catalog.||) E'\nNothing was updated.',
				  HINT = 'kizunasync''s internal objects are not an interface: only its owner may use them.  Drop the objects listed (or their part named), run ALTER EXTENSION kizunasync UPDATE again, then create them again if still wanted.';
	END IF;
	-- "type identity" of each: DROP TABLE, VIEW, FUNCTION, TYPE (a domain
	-- too) ...; an earlier one's CASCADE may have dropped it already
	FOR i IN 1 .. pg_catalog.cardinality(temps) LOOP
		RAISE WARNING '%', notes[i];
		EXECUTE pg_catalog.regexp_replace(
			pg_catalog.regexp_replace(temps[i], '^composite type ', 'type '),
			'^(materialized view|[a-z]+) (.*)$', 'DROP \1 IF EXISTS \2 CASCADE');
	END LOOP;
END
$kz$;

-- ---------------------------------------------------------------------------
-- 1. Helpers 0.2.0 no longer has: their work moved into the library.  Every
-- other function keeps its signature and is replaced in place below (CREATE
-- OR REPLACE keeps its OID, so the capture triggers on synced tables and
-- anything of the application's that refers to a function stay valid).
-- ---------------------------------------------------------------------------
DROP FUNCTION kizunasync._capture_queue(text);
DROP FUNCTION kizunasync._capture_queued_op(text, text);
DROP FUNCTION kizunasync._drop_triggers(regclass);
DROP FUNCTION kizunasync._forget_table(text);
DROP FUNCTION kizunasync._horizon(text, integer);
DROP FUNCTION kizunasync._key_type_ok(regtype);
DROP FUNCTION kizunasync._pk_canonical(regclass, text);
DROP FUNCTION kizunasync._seed(regclass);

-- The grants are made again at the end, in the order of a fresh install
-- (an ACL lists its grantees in the order they were granted).
REVOKE ALL ON ALL ROUTINES IN SCHEMA kizunasync FROM authenticated, service_role;

-- The status view is replaced in place (sql/src/50_retention.sql; CREATE OR
-- REPLACE VIEW keeps its OID, its grants and every view over it), with the
-- same columns: their collations stay the default one, as CREATE OR REPLACE
-- cannot change them.  Until then it reads nothing, so that the bookkeeping
-- columns it read can change type below.
CREATE OR REPLACE VIEW kizunasync.status AS
SELECT NULL::pg_catalog.text AS table_name, NULL::pg_catalog.regclass AS relation,
	   NULL::pg_catalog.text AS sync_mode, NULL::pg_catalog.text AS bucket_column,
	   NULL::pg_catalog.text[] AS key_columns, NULL::pg_catalog.text AS conflict_mode,
	   NULL::pg_catalog.int8 AS changelog_entries, NULL::pg_catalog.int8 AS tombstones,
	   NULL::pg_catalog.int8 AS reap_horizon, NULL::pg_catalog.text AS oldest_client_cursor,
	   NULL::pg_catalog.timestamptz AS oldest_client_seen
 WHERE false;

-- ---------------------------------------------------------------------------
-- 2. Bookkeeping tables (physical column order stays that of a fresh
-- install: new columns are last there too).
-- ---------------------------------------------------------------------------

-- Text keys compare bytewise (the "C" collation); user ids are the JWT sub
-- as text (third-party auth ids are not uuids).  The uuid -> text rewrite
-- gives the canonical lower-case form, which is what Supabase Auth puts in
-- the sub claim.
ALTER TABLE kizunasync.synced_tables ALTER COLUMN table_name TYPE text COLLATE "C";
ALTER TABLE kizunasync.changelog
	ALTER COLUMN table_name TYPE text COLLATE "C",
	ALTER COLUMN pk TYPE text COLLATE "C",
	ALTER COLUMN bucket_value TYPE text COLLATE "C",
	ADD COLUMN row_xmin xid;
ALTER TABLE kizunasync.tombstones
	ALTER COLUMN table_name TYPE text COLLATE "C",
	ALTER COLUMN pk TYPE text COLLATE "C",
	ALTER COLUMN bucket_value TYPE text COLLATE "C";
-- A writer replaces a key's tombstone without waiting for a reap that holds
-- it, so the key index is not unique; the reap walks the seq index, so
-- deleted_at has none (decisions/0003).
ALTER TABLE kizunasync.tombstones DROP CONSTRAINT tombstones_table_name_pk_bucket_value_key;
DROP INDEX kizunasync.tombstones_deleted_at_idx;
CREATE INDEX tombstones_key_idx ON kizunasync.tombstones (table_name, pk, bucket_value);
ALTER TABLE kizunasync.bucket_grants
	ALTER COLUMN user_id TYPE text COLLATE "C" USING user_id::text,
	ALTER COLUMN table_name TYPE text COLLATE "C",
	ALTER COLUMN bucket_value TYPE text COLLATE "C";
ALTER TABLE kizunasync.row_hlc
	ALTER COLUMN table_name TYPE text COLLATE "C",
	ALTER COLUMN pk TYPE text COLLATE "C";
ALTER TABLE kizunasync.conflict_journal
	ALTER COLUMN table_name TYPE text COLLATE "C",
	ALTER COLUMN pk TYPE text COLLATE "C";
-- The verdict ledger keeps what a replay answers (decisions/0033): rebuilt
-- in the narrow form of a fresh install (the verdict's reason, whether it
-- carries a server_row, and the table and key only then), since a fresh
-- install's column positions are compared (test/t/upgrade.sh).  A user's
-- recorded rejections are bounded through a partial index.
ALTER TABLE kizunasync.verdicts RENAME TO verdicts_0_1_0;
ALTER INDEX kizunasync.verdicts_pkey RENAME TO verdicts_0_1_0_pkey;
ALTER INDEX kizunasync.verdicts_recorded_at_idx RENAME TO verdicts_0_1_0_recorded_at_idx;
CREATE TABLE kizunasync.verdicts (
	mutation_id         uuid CONSTRAINT verdicts_pkey PRIMARY KEY,
	recorded_at         timestamptz NOT NULL DEFAULT now(),
	server_row          boolean,
	user_id             text COLLATE "C",
	reason              text COLLATE "C",
	table_name          text COLLATE "C",
	pk                  text COLLATE "C",
	verdict             jsonb,
	CONSTRAINT verdicts_one_form CHECK ((server_row IS NULL) = (verdict IS NOT NULL))
);
INSERT INTO kizunasync.verdicts (mutation_id, recorded_at, server_row, user_id, reason, table_name, pk)
SELECT v.mutation_id, v.recorded_at, v.verdict OPERATOR(pg_catalog.?) 'server_row', v.user_id::pg_catalog.text,
	   CASE WHEN (v.verdict OPERATOR(pg_catalog.->>) 'verdict') OPERATOR(pg_catalog.<>) 'applied'
			THEN v.verdict OPERATOR(pg_catalog.->>) 'reason' END,
	   CASE WHEN v.verdict OPERATOR(pg_catalog.?) 'server_row' THEN v.table_name END,
	   CASE WHEN v.verdict OPERATOR(pg_catalog.?) 'server_row' THEN v.pk END
  FROM kizunasync.verdicts_0_1_0 v;
-- (out of the extension first: that also takes it off the list of tables
-- pg_dump dumps, which DROP TABLE alone leaves behind)
ALTER EXTENSION kizunasync DROP TABLE kizunasync.verdicts_0_1_0;
DROP TABLE kizunasync.verdicts_0_1_0;
CREATE INDEX verdicts_recorded_at_idx ON kizunasync.verdicts (recorded_at);
CREATE INDEX verdicts_user_rejected_idx ON kizunasync.verdicts (user_id, recorded_at)
	WHERE reason IS NOT NULL;
SELECT pg_catalog.pg_extension_config_dump('kizunasync.verdicts', '');
ALTER TABLE kizunasync.clients
	ALTER COLUMN user_id TYPE text COLLATE "C" USING user_id::text,
	ADD COLUMN bootstrap_horizon bigint;
ALTER TABLE kizunasync.attachments
	ALTER COLUMN bucket_id TYPE text COLLATE "C",
	ALTER COLUMN object_path TYPE text COLLATE "C",
	ALTER COLUMN created_by TYPE text COLLATE "C" USING created_by::text,
	ALTER COLUMN table_name TYPE text COLLATE "C";

-- Every bookkeeping table has a replica identity for UPDATE and DELETE
-- (decisions/0087): the journal keeps its 0.1.0 primary key, the fence
-- (which holds no row) identifies by the whole row.
ALTER TABLE kizunasync.seq_fence REPLICA IDENTITY FULL;

-- The journal's identity sequence travels with a dump now.
SELECT pg_catalog.pg_extension_config_dump('kizunasync.conflict_journal_id_seq', '');

-- Settings: zero or one row, a NULL value takes the default of the library
-- (src/settings.c).  A 0.1.0 value equal to the 0.1.0 default becomes NULL,
-- so it follows the default from now on; other values are kept.
ALTER TABLE kizunasync.settings
	ALTER COLUMN max_pull_scan DROP NOT NULL, ALTER COLUMN max_pull_scan DROP DEFAULT,
	ALTER COLUMN max_pull_limit DROP NOT NULL, ALTER COLUMN max_pull_limit DROP DEFAULT,
	ALTER COLUMN max_batch_size DROP NOT NULL, ALTER COLUMN max_batch_size DROP DEFAULT,
	ALTER COLUMN require_atomic DROP NOT NULL, ALTER COLUMN require_atomic DROP DEFAULT,
	ALTER COLUMN tombstone_ttl_days DROP NOT NULL, ALTER COLUMN tombstone_ttl_days DROP DEFAULT,
	ALTER COLUMN client_ttl_days DROP NOT NULL, ALTER COLUMN client_ttl_days DROP DEFAULT,
	ALTER COLUMN hlc_max_skew_ms DROP NOT NULL, ALTER COLUMN hlc_max_skew_ms DROP DEFAULT,
	ALTER COLUMN reap_schedule DROP NOT NULL, ALTER COLUMN reap_schedule DROP DEFAULT,
	ALTER COLUMN compact_schedule DROP NOT NULL, ALTER COLUMN compact_schedule DROP DEFAULT,
	ALTER COLUMN client_prune_schedule DROP NOT NULL, ALTER COLUMN client_prune_schedule DROP DEFAULT,
	ADD COLUMN pull_wait_ms integer CHECK (pull_wait_ms BETWEEN 0 AND 10000);
UPDATE kizunasync.settings SET
	max_pull_scan = NULLIF(max_pull_scan, 5000),
	max_pull_limit = NULLIF(max_pull_limit, 5000),
	max_batch_size = NULLIF(max_batch_size, 500),
	require_atomic = NULLIF(require_atomic, false),
	tombstone_ttl_days = NULLIF(tombstone_ttl_days, 30),
	client_ttl_days = NULLIF(client_ttl_days, 90),
	hlc_max_skew_ms = NULLIF(hlc_max_skew_ms, 5000),
	reap_schedule = NULLIF(reap_schedule, '16 3 * * *'),
	compact_schedule = NULLIF(compact_schedule, '47 3 * * *'),
	client_prune_schedule = NULLIF(client_prune_schedule, '31 3 * * *');

-- Reap state: the first seq of this incarnation is known exactly: 0.1.0's
-- change_seq started at 1 (decisions/0084).
ALTER TABLE kizunasync.reap_state ADD COLUMN first_seq bigint,
	ADD COLUMN walk_ttl_days integer[], ADD COLUMN walk_seqs bigint[];
INSERT INTO kizunasync.reap_state (id, reaped_seq, first_seq) VALUES (true, 0, 1)
	ON CONFLICT (id) DO UPDATE SET first_seq = 1;

-- Retention runs, as a fresh install makes them (sql/src/00_schema.sql).
CREATE TABLE kizunasync.retention_runs (
	id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	job                 text COLLATE "C" NOT NULL,
	started_at          timestamptz NOT NULL,
	duration_ms         double precision NOT NULL,
	rows_removed        bigint NOT NULL,
	result              bigint
);
CREATE INDEX retention_runs_job_idx ON kizunasync.retention_runs (job, id);
SELECT pg_catalog.pg_extension_config_dump('kizunasync.retention_runs', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.retention_runs_id_seq', '');
-- ---------------------------------------------------------------------------
-- Change capture and provisioning (src/capture.c, src/provision.c).  Every
-- function is SECURITY INVOKER: it runs as the caller (or, for the triggers,
-- as the writer or the dropping role) and touches the bookkeeping in
-- privileged sections of its own (decisions/0060).  See
-- decisions/0010-sequencing.md for the numbering argument.
-- ---------------------------------------------------------------------------

-- Keeps every backend's table-config cache honest: any change to
-- synced_tables sends a relcache invalidation for it (the trigger is in
-- sql/src/90_triggers.sql).
CREATE OR REPLACE FUNCTION kizunasync._conf_changed() RETURNS trigger
	AS 'MODULE_PATHNAME', 'kz_conf_changed' LANGUAGE C;

-- The capture trigger (AFTER INSERT OR UPDATE OR DELETE, FOR EACH ROW,
-- enabled ALWAYS so that logical replication applies are captured).
CREATE OR REPLACE FUNCTION kizunasync._capture() RETURNS trigger
	AS 'MODULE_PATHNAME', 'kz_capture' LANGUAGE C;

CREATE OR REPLACE FUNCTION kizunasync._refuse_truncate() RETURNS trigger
	AS 'MODULE_PATHNAME', 'kz_refuse_truncate' LANGUAGE C;

CREATE OR REPLACE FUNCTION kizunasync.sync_table(
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
AS 'MODULE_PATHNAME', 'kz_sync_table' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.sync_table(regclass, text, text, text[], text, boolean, text, integer, integer, boolean, boolean, text) IS
	'starts syncing a table the caller owns (or updates its configuration); returns the number of existing rows recorded';

CREATE OR REPLACE FUNCTION kizunasync.unsync_table(tbl regclass) RETURNS void
AS 'MODULE_PATHNAME', 'kz_unsync_table' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION kizunasync.unsync_table(regclass) IS
	'stops syncing a table the caller owns and forgets its bookkeeping';

CREATE OR REPLACE FUNCTION kizunasync.repair_table(tbl regclass) RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_repair_table' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION kizunasync.repair_table(regclass) IS
	'records what the bookkeeping of a synced table misses (writes made with its triggers off); returns the changes recorded';

-- Dropping a synced table forgets its configuration and bookkeeping (the
-- event trigger is in sql/src/90_triggers.sql).
CREATE OR REPLACE FUNCTION kizunasync._on_sql_drop() RETURNS event_trigger
	AS 'MODULE_PATHNAME', 'kz_on_sql_drop' LANGUAGE C;

-- Writes a bucket's entries again, so that its rows reach every device of
-- the bucket after a change of what callers may see that no write to the
-- rows recorded (decisions/0093).
CREATE OR REPLACE FUNCTION kizunasync.resync_bucket(tbl regclass, bucket jsonb DEFAULT '{}')
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_resync_bucket' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION kizunasync.resync_bucket(regclass, jsonb) IS
	'writes the changelog entries of one bucket of a synced table the caller owns again, after a visibility change no write recorded; returns the number of entries written';
-- ---------------------------------------------------------------------------
-- Cursor token codec (src/cursor_core.c, src/cursor.c).  Internal helpers for
-- tests and operators: no API-role grant (99_grants.sql revokes PUBLIC).
-- Pull uses the codec from C directly.
-- ---------------------------------------------------------------------------

-- Parse a cursor token.  start is NULL for a checkpoint token.  Not strict:
-- a NULL token raises 22023 like any invalid one.
CREATE OR REPLACE FUNCTION kizunasync.cursor_parse(cursor text,
		OUT start bigint, OUT high_water bigint, OUT holes bigint[])
	RETURNS record
	LANGUAGE C IMMUTABLE PARALLEL SAFE
	SET search_path = ''
	AS 'MODULE_PATHNAME', 'kizunasync_cursor_parse';

COMMENT ON FUNCTION kizunasync.cursor_parse(text) IS
	'internal: split a cursor token into start (NULL for a checkpoint), high-water and holes; raises 22023 on an invalid or NULL token';

-- Encode a cursor token.  start NULL gives a checkpoint token; holes are a
-- set (sorted here; duplicates, NULLs, values out of range are errors).
CREATE OR REPLACE FUNCTION kizunasync.cursor_encode(start bigint, high_water bigint,
		holes bigint[] DEFAULT '{}')
	RETURNS text
	LANGUAGE C IMMUTABLE PARALLEL SAFE
	SET search_path = ''
	AS 'MODULE_PATHNAME', 'kizunasync_cursor_encode';

COMMENT ON FUNCTION kizunasync.cursor_encode(bigint, bigint, bigint[]) IS
	'internal: build a cursor token from start (NULL for a checkpoint), high-water and holes; raises 22023 on values the grammar cannot express';
-- ---------------------------------------------------------------------------
-- kizunasync.pull: the pull RPC (src/pull.c).  SECURITY INVOKER: application
-- rows are read as the caller (RLS and column privileges apply), the
-- bookkeeping in privileged sections; values render under UTC and fixed
-- output settings whoever calls.
-- EXECUTE: authenticated and service_role (99_grants.sql), not anon
-- (decisions/0020-pull-not-for-anon.md).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION kizunasync.pull(
	buckets jsonb,
	cursor text,
	schema_version integer,
	"limit" integer DEFAULT 500,
	client_id uuid DEFAULT NULL)
RETURNS jsonb
LANGUAGE c
VOLATILE
AS 'MODULE_PATHNAME', 'kz_pull';

COMMENT ON FUNCTION kizunasync.pull(jsonb, text, integer, integer, uuid) IS
	'kizunasync row-sync pull: changes since a cursor, read under the caller''s RLS';
-- ---------------------------------------------------------------------------
-- push (src/push.c): verdicts, transforms, conflict modes, exactly-once
-- ledger.  SECURITY INVOKER: every application-table read and write runs as
-- the caller, so RLS and column privileges apply; the bookkeeping is written
-- in privileged sections.  The argument names are the wire keys of the rpc
-- body.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION kizunasync.push(batch jsonb, last_mutation_id uuid, schema_version integer,
								client_id uuid DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'kz_push'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION kizunasync.push(jsonb, uuid, integer, uuid) IS
'Apply a batch of client mutations; one verdict per mutation (or a batch abort, or RESET_REQUIRED)';
-- ---------------------------------------------------------------------------
-- Retention and settings (operator functions, src/retention.c and
-- src/settings.c; EXECUTE for service_role and the database owner, see
-- grants).  SECURITY INVOKER; a client JWT is refused.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION kizunasync.reap_tombstones(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_reap_tombstones_recorded'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.reap_tombstones(integer) IS
  'removes tombstones older than their table''s TTL (bounded per call) and raises the reap horizon; returns the highest seq reaped';

CREATE OR REPLACE FUNCTION kizunasync.compact_changelog(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_compact_changelog_recorded'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.compact_changelog(integer) IS
  'removes bookkeeping nothing can deliver any more (bounded per call); returns rows removed';

CREATE OR REPLACE FUNCTION kizunasync.prune_clients(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_prune_clients_recorded'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.prune_clients(integer) IS
  'removes clients not seen and verdicts older than client_ttl_days (bounded per call), never bucket grants; returns clients removed';

-- Schedules the three retention jobs with pg_cron when it is installed in
-- this database; never requires it.  Re-running replaces the jobs.
CREATE OR REPLACE FUNCTION kizunasync.schedule_jobs()
RETURNS jsonb
AS 'MODULE_PATHNAME', 'kz_schedule_jobs'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.schedule_jobs() IS
  'schedules reap/compact/prune with pg_cron when installed (cron.schedule replaces jobs of the same name)';

-- Changes deployment settings (NULL: unchanged); returns the effective ones.
CREATE OR REPLACE FUNCTION kizunasync.configure(
	max_pull_scan integer DEFAULT NULL,
	max_pull_limit integer DEFAULT NULL,
	max_batch_size integer DEFAULT NULL,
	require_atomic boolean DEFAULT NULL,
	tombstone_ttl_days integer DEFAULT NULL,
	client_ttl_days integer DEFAULT NULL,
	hlc_max_skew_ms integer DEFAULT NULL,
	pull_wait_ms integer DEFAULT NULL,
	reap_schedule text DEFAULT NULL,
	compact_schedule text DEFAULT NULL,
	client_prune_schedule text DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'kz_configure'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.configure(integer, integer, integer, boolean, integer, integer, integer, integer, text, text, text) IS
  'changes deployment settings (NULL leaves one unchanged) and returns every effective setting';

-- Operator view: one row per synced table.  CREATE OR REPLACE: an update
-- replaces it in place, so operators' views over it stay valid (decisions/
-- 0080); its text columns keep the default collation for that reason.
CREATE OR REPLACE VIEW kizunasync.status AS
SELECT c.table_name COLLATE "default" AS table_name,
	   c.relid AS relation,
	   c.sync_mode,
	   c.bucket_column,
	   c.key_columns,
	   c.conflict_mode,
	   (SELECT count(*) FROM kizunasync.changelog l WHERE l.table_name = c.table_name) AS changelog_entries,
	   (SELECT count(*) FROM kizunasync.tombstones t WHERE t.table_name = c.table_name) AS tombstones,
	   COALESCE((SELECT r.reaped_seq FROM kizunasync.reap_state r WHERE r.id), 0) AS reap_horizon,
	   (SELECT k.cursor FROM kizunasync.clients k
		 WHERE c.register_clients
		 ORDER BY k.last_seen LIMIT 1) AS oldest_client_cursor,
	   (SELECT min(k.last_seen) FROM kizunasync.clients k WHERE c.register_clients) AS oldest_client_seen
  FROM kizunasync.synced_tables c;
COMMENT ON VIEW kizunasync.status IS 'per synced table: mode, bucket column, changelog size, tombstones, reap horizon, oldest registered client';
-- Operator view: what holds seqs in flight (decisions/0010, "Prepared
-- transactions"): one row per transaction, running or prepared, whose
-- entries are not committed yet, and so are holes of every cursor that
-- reaches them.  No row data, keys, bucket values or user ids.
CREATE OR REPLACE FUNCTION kizunasync._in_flight(
	OUT pid integer,
	OUT prepared_gid text,
	OUT since timestamptz,
	OUT seqs bigint,
	OUT lowest_seq bigint,
	OUT tables text[])
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kz_in_flight'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync._in_flight() IS
  'the transactions holding seqs in flight (read it through kizunasync.in_flight)';

CREATE OR REPLACE VIEW kizunasync.in_flight AS
SELECT f.pid, f.prepared_gid, f.since, f.seqs, f.lowest_seq, f.tables
  FROM kizunasync._in_flight() f;
COMMENT ON VIEW kizunasync.in_flight IS
  'per transaction holding seqs in flight: backend pid or prepared gid, since when, how many, the lowest, for which synced tables';
-- ---------------------------------------------------------------------------
-- Monitoring (issue 31; README "Monitoring"; monitoring/queries.yaml maps
-- these views to Prometheus metrics for postgres_exporter).
--
-- Cheap enough to read every 15 s beside a changelog of 20 million entries:
-- no view scans a bookkeeping table.  Counts that an exact answer would have
-- to scan for are estimates: PostgreSQL's live-row count of the table
-- (pg_stat, kept current by every commit) times the share ANALYZE's
-- most-common-value statistics give the value (what the planner estimates
-- for "column = value"); before the first ANALYZE of a table they are NULL.
-- Every other figure is a probe of an index's first entry, a catalog or
-- statistics read, or kizunasync.in_flight (see its cost in the README).
--
-- With status, these views are the only operator-facing SQL that names the
-- bookkeeping's columns: a change of the bookkeeping's layout rewrites their
-- bodies, never their columns (CREATE OR REPLACE, decisions/0080).  Readable
-- by pg_monitor, service_role and the database owner (99_grants.sql,
-- decisions/0060): no row data, keys, bucket values or user ids.
-- ---------------------------------------------------------------------------

-- The effective settings, as configure() returns them, changing nothing.
CREATE OR REPLACE FUNCTION kizunasync._settings()
RETURNS jsonb
AS 'MODULE_PATHNAME', 'kz_settings_effective'
LANGUAGE C STABLE;
COMMENT ON FUNCTION kizunasync._settings() IS
  'the effective settings, as configure() returns them (read it through the monitoring views)';

-- Internal: ANALYZE's statistics of the bookkeeping's columns, as the
-- estimates below use them: for column = v the share is freqs[position of v
-- in vals] when v is a most common value, else other_share (what is left,
-- spread over the other distinct values), as PostgreSQL's var_eq_const
-- does; for column IS NOT NULL it is 1 - null_frac.
CREATE OR REPLACE VIEW kizunasync._column_stats AS
SELECT s.starelid AS relid,
	   a.attname::pg_catalog.text AS column_name,
	   s.stanullfrac AS null_frac,
	   m.vals,
	   m.freqs,
	   GREATEST(1::pg_catalog.float8 OPERATOR(pg_catalog.-) s.stanullfrac
				OPERATOR(pg_catalog.-) COALESCE((SELECT pg_catalog.sum(f) FROM pg_catalog.unnest(m.freqs) f), 0), 0)
		 OPERATOR(pg_catalog./) GREATEST(
			 CASE WHEN s.stadistinct OPERATOR(pg_catalog.>=) 0 THEN s.stadistinct
				  ELSE (0 OPERATOR(pg_catalog.-) s.stadistinct) OPERATOR(pg_catalog.*) GREATEST(c.reltuples, 0) END
			 OPERATOR(pg_catalog.-) COALESCE(pg_catalog.cardinality(m.vals), 0), 1) AS other_share
  FROM pg_catalog.pg_statistic s
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.starelid
  JOIN pg_catalog.pg_attribute a
	ON a.attrelid OPERATOR(pg_catalog.=) s.starelid AND a.attnum OPERATOR(pg_catalog.=) s.staattnum
 CROSS JOIN LATERAL (SELECT
		(CASE 1 WHEN s.stakind1 THEN s.stavalues1::pg_catalog.text WHEN s.stakind2 THEN s.stavalues2::pg_catalog.text
				WHEN s.stakind3 THEN s.stavalues3::pg_catalog.text WHEN s.stakind4 THEN s.stavalues4::pg_catalog.text
				WHEN s.stakind5 THEN s.stavalues5::pg_catalog.text END)::pg_catalog.text[] AS vals,
		CASE 1 WHEN s.stakind1 THEN s.stanumbers1 WHEN s.stakind2 THEN s.stanumbers2
			   WHEN s.stakind3 THEN s.stanumbers3 WHEN s.stakind4 THEN s.stanumbers4
			   WHEN s.stakind5 THEN s.stanumbers5 END AS freqs) m
 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'kizunasync'::pg_catalog.regnamespace
   AND NOT s.stainherit;
COMMENT ON VIEW kizunasync._column_stats IS
  'internal: ANALYZE''s most common values of the bookkeeping''s columns, for the monitoring views'' estimates';

-- Per synced table.
CREATE OR REPLACE VIEW kizunasync.table_metrics AS
SELECT c.table_name COLLATE "default" AS table_name,
	   c.relid AS relation,
	   CASE WHEN pg_catalog.pg_stat_get_live_tuples('kizunasync.changelog'::pg_catalog.regclass) OPERATOR(pg_catalog.=) 0 THEN 0
	   ELSE (SELECT pg_catalog.round(pg_catalog.pg_stat_get_live_tuples(st.relid)
				OPERATOR(pg_catalog.*) COALESCE(st.freqs[pg_catalog.array_position(st.vals, c.table_name::pg_catalog.text)], st.other_share))::pg_catalog.int8
		  FROM kizunasync._column_stats st
		 WHERE st.relid OPERATOR(pg_catalog.=) 'kizunasync.changelog'::pg_catalog.regclass
		   AND st.column_name OPERATOR(pg_catalog.=) 'table_name') END AS entries,
	   CASE WHEN pg_catalog.pg_stat_get_live_tuples('kizunasync.tombstones'::pg_catalog.regclass) OPERATOR(pg_catalog.=) 0 THEN 0
	   ELSE (SELECT pg_catalog.round(pg_catalog.pg_stat_get_live_tuples(st.relid)
				OPERATOR(pg_catalog.*) COALESCE(st.freqs[pg_catalog.array_position(st.vals, c.table_name::pg_catalog.text)], st.other_share))::pg_catalog.int8
		  FROM kizunasync._column_stats st
		 WHERE st.relid OPERATOR(pg_catalog.=) 'kizunasync.tombstones'::pg_catalog.regclass
		   AND st.column_name OPERATOR(pg_catalog.=) 'table_name') END AS tombstones,
	   COALESCE(c.tombstone_ttl_days,
				(kizunasync._settings() OPERATOR(pg_catalog.->>) 'tombstone_ttl_days')::pg_catalog.int4) AS tombstone_ttl_days
  FROM kizunasync.synced_tables c;
COMMENT ON VIEW kizunasync.table_metrics IS
  'per synced table: estimated changelog entries and tombstones (NULL before the first ANALYZE), the tombstone TTL in days';

-- One row: the database's sync as a whole.
CREATE OR REPLACE VIEW kizunasync.metrics AS
SELECT q.last_seq,
	   GREATEST(q.last_seq OPERATOR(pg_catalog.-) COALESCE(r.first_seq, q.last_seq OPERATOR(pg_catalog.+) 1)
				OPERATOR(pg_catalog.+) 1, 0) AS changes,
	   COALESCE(r.reaped_seq, 0) AS reap_horizon,
	   r.reaped_at AS reap_horizon_raised_at,
	   o.deleted_at AS oldest_tombstone_at,
	   o.table_name COLLATE "default" AS oldest_tombstone_table,
	   COALESCE((SELECT c.tombstone_ttl_days FROM kizunasync.synced_tables c
				  WHERE c.table_name OPERATOR(pg_catalog.=) o.table_name),
				(kizunasync._settings() OPERATOR(pg_catalog.->>) 'tombstone_ttl_days')::pg_catalog.int4) AS oldest_tombstone_ttl_days,
	   pg_catalog.pg_stat_get_live_tuples('kizunasync.clients'::pg_catalog.regclass) AS clients,
	   (SELECT k.last_seen FROM kizunasync.clients k ORDER BY k.last_seen LIMIT 1) AS oldest_client_seen,
	   pg_catalog.pg_stat_get_live_tuples('kizunasync.verdicts'::pg_catalog.regclass) AS ledger_verdicts,
	   CASE WHEN pg_catalog.pg_stat_get_live_tuples('kizunasync.verdicts'::pg_catalog.regclass) OPERATOR(pg_catalog.=) 0 THEN 0
	   ELSE (SELECT pg_catalog.round(pg_catalog.pg_stat_get_live_tuples(st.relid)
				OPERATOR(pg_catalog.*) (1 OPERATOR(pg_catalog.-) st.null_frac))::pg_catalog.int8
		  FROM kizunasync._column_stats st
		 WHERE st.relid OPERATOR(pg_catalog.=) 'kizunasync.verdicts'::pg_catalog.regclass
		   AND st.column_name OPERATOR(pg_catalog.=) 'reason') END AS ledger_rejections,
	   (kizunasync._settings() OPERATOR(pg_catalog.->>) 'pull_wait_ms')::pg_catalog.int4 AS pull_wait_ms
  FROM (SELECT CASE WHEN s.is_called THEN s.last_value ELSE s.last_value OPERATOR(pg_catalog.-) 1 END AS last_seq
		  FROM kizunasync.change_seq s) q
  LEFT JOIN kizunasync.reap_state r ON r.id
  LEFT JOIN LATERAL (SELECT t.deleted_at, t.table_name FROM kizunasync.tombstones t
					  ORDER BY t.seq LIMIT 1) o ON true;
COMMENT ON VIEW kizunasync.metrics IS
  'one row: the last seq drawn, changes numbered in this incarnation, the reap horizon, the lowest-numbered tombstone, registered clients (estimate), the ledger (estimates), pull_wait_ms';

-- Seqs in flight (kizunasync.in_flight) in two rows, running and prepared:
-- how many transactions, how many seqs, since when the oldest (NULL: none,
-- or its start unknown).
CREATE OR REPLACE VIEW kizunasync.in_flight_metrics AS
SELECT s.state COLLATE "default" AS state,
	   pg_catalog.count(i.seqs) AS transactions,
	   COALESCE(pg_catalog.sum(i.seqs), 0)::pg_catalog.int8 AS seqs,
	   pg_catalog.min(i.since) AS oldest_since
  FROM (VALUES ('running'::pg_catalog.text), ('prepared')) s (state)
  LEFT JOIN kizunasync.in_flight i
	ON (i.prepared_gid IS NOT NULL) OPERATOR(pg_catalog.=) (s.state OPERATOR(pg_catalog.=) 'prepared')
 GROUP BY s.state;
COMMENT ON VIEW kizunasync.in_flight_metrics IS
  'seqs in flight by state (running, prepared): transactions, seqs, the oldest one''s start';

-- Per bookkeeping table (every table of schema kizunasync): its bytes with
-- indexes and TOAST, live and dead rows, the last VACUUM and ANALYZE.
CREATE OR REPLACE VIEW kizunasync.bookkeeping_metrics AS
SELECT c.relname::pg_catalog.text AS relation,
	   pg_catalog.pg_total_relation_size(c.oid) AS bytes,
	   pg_catalog.pg_stat_get_live_tuples(c.oid) AS live_tuples,
	   pg_catalog.pg_stat_get_dead_tuples(c.oid) AS dead_tuples,
	   GREATEST(pg_catalog.pg_stat_get_last_vacuum_time(c.oid),
				pg_catalog.pg_stat_get_last_autovacuum_time(c.oid)) AS last_vacuum,
	   GREATEST(pg_catalog.pg_stat_get_last_analyze_time(c.oid),
				pg_catalog.pg_stat_get_last_autoanalyze_time(c.oid)) AS last_analyze
  FROM pg_catalog.pg_class c
 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'kizunasync'::pg_catalog.regnamespace
   AND c.relkind OPERATOR(pg_catalog.=) 'r';
COMMENT ON VIEW kizunasync.bookkeeping_metrics IS
  'per bookkeeping table: bytes with indexes and TOAST, live and dead rows, last vacuum and analyze';

-- Per retention job: its newest recorded call (kizunasync.retention_runs).
CREATE OR REPLACE VIEW kizunasync.retention_metrics AS
SELECT j.job COLLATE "default" AS job,
	   r.started_at AS last_started_at,
	   r.duration_ms AS last_duration_ms,
	   r.rows_removed AS last_rows_removed,
	   r.result AS last_result
  FROM (VALUES ('reap_tombstones'::pg_catalog.text), ('compact_changelog'), ('prune_clients')) j (job)
  LEFT JOIN LATERAL (SELECT x.started_at, x.duration_ms, x.rows_removed, x.result
					   FROM kizunasync.retention_runs x
					  WHERE x.job OPERATOR(pg_catalog.=) j.job
					  ORDER BY x.id DESC LIMIT 1) r ON true;
COMMENT ON VIEW kizunasync.retention_metrics IS
  'per retention job: when its newest recorded call started, how long it took, how many bookkeeping rows it deleted, what it returned';

-- One row per check of the deployment: name, status (ok, warning, error),
-- a sentence, and the fix (src/health.c).  For the database owner and
-- service_role.
CREATE OR REPLACE FUNCTION kizunasync.health(
	OUT name text,
	OUT status text,
	OUT detail text,
	OUT fix text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kz_health'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.health() IS
  'one row per check of this deployment: name, status (ok, warning, error), what was found, and the fix';
-- ---------------------------------------------------------------------------
-- Attachments: integrity metadata around Supabase Storage objects.  Object
-- bytes never ride pull or push.  The object key convention is
-- <owner>/<row key>/<file name>, the owner being the uploader's JWT sub.
-- The table (kizunasync.attachments, sql/src/00_schema.sql) is private;
-- clients use the three functions (SECURITY INVOKER), which check the
-- caller's own policies on the owning row and on storage.objects.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION kizunasync.attachment_confirm(p_bucket text, p_path text, p_sha256 text,
											  p_size bigint, p_media_type text,
											  p_table text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'kz_attachment_confirm'
LANGUAGE C VOLATILE;

CREATE OR REPLACE FUNCTION kizunasync.attachment_metadata(p_bucket_id text, p_object_path text)
RETURNS TABLE (sha256 text, size bigint, media_type text,
			   created_at timestamptz, updated_at timestamptz)
AS 'MODULE_PATHNAME', 'kz_attachment_metadata'
LANGUAGE C STABLE;

CREATE OR REPLACE FUNCTION kizunasync.attachment_vacuum(p_bucket text, p_path text)
RETURNS void
AS 'MODULE_PATHNAME', 'kz_attachment_vacuum'
LANGUAGE C VOLATILE;

-- ---------------------------------------------------------------------------
-- 3. Synced tables: the capture trigger fires in replica mode too
-- (decisions/0082), as sync_table now creates it.  Takes a SHARE ROW
-- EXCLUSIVE lock on each synced table for the rest of the update.
-- ---------------------------------------------------------------------------
DO $upgrade$
DECLARE
	v_rel pg_catalog.regclass;
BEGIN
	FOR v_rel IN
		SELECT s.relid FROM kizunasync.synced_tables s
		 WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
						WHERE t.tgrelid OPERATOR(pg_catalog.=) s.relid::pg_catalog.oid
						  AND t.tgname OPERATOR(pg_catalog.=) 'kizunasync_capture')
		 ORDER BY s.table_name
	LOOP
		EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER kizunasync_capture', v_rel);
	END LOOP;
END
$upgrade$;

-- ---------------------------------------------------------------------------
-- 4. The extension's own triggers fire in replica mode too, as in a fresh
-- install (sql/src/90_triggers.sql).
-- ---------------------------------------------------------------------------
ALTER TABLE kizunasync.synced_tables ENABLE ALWAYS TRIGGER kizunasync_conf_changed;
ALTER EVENT TRIGGER kizunasync_on_sql_drop ENABLE ALWAYS;

-- ---------------------------------------------------------------------------
-- 5. Bucket labels (decisions/0013, issue 32): 0.1.0 recorded a bucket value
-- under its rendering's ->> text, so 1 and 1.0 were two buckets and the json
-- string "1" and the number 1 one.  Every changelog entry, tombstone and
-- bucket grant of a bucketed table gets the canonical label of its value,
-- in place (seqs kept, cursors stay valid), computed from the bookkeeping
-- alone (src/relabel.c: no type's code runs).  Warnings name the tables
-- whose devices may need to bootstrap again, or a repair_table.  The
-- function exists for this update only.
-- ---------------------------------------------------------------------------
CREATE FUNCTION kizunasync._upgrade_relabel() RETURNS bigint
	AS 'MODULE_PATHNAME', 'kz_upgrade_relabel' LANGUAGE C;
SELECT kizunasync._upgrade_relabel();
DROP FUNCTION kizunasync._upgrade_relabel();
-- ---------------------------------------------------------------------------
-- Privileges (last part of the install script, decisions/0060).  Clients
-- reach the extension only through the granted functions: anon gets nothing
-- at all (not even USAGE); authenticated gets USAGE and EXECUTE on the
-- client RPCs; service_role also the operator functions and the status
-- and in_flight views; the database owner (pg_database_owner, e.g. Supabase's postgres)
-- provisions the tables it owns, changes settings and runs the operator
-- functions; the monitoring views are for pg_monitor too (the predefined
-- role a metrics exporter's login is granted), with health() for
-- service_role and the database owner.  Every bookkeeping table and internal helper stays private to
-- the extension owner.
-- ---------------------------------------------------------------------------
REVOKE ALL ON ALL TABLES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL ROUTINES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
GRANT USAGE ON SCHEMA kizunasync TO authenticated, service_role, pg_database_owner, pg_monitor;

GRANT EXECUTE ON FUNCTION
	kizunasync.pull(jsonb, text, integer, integer, uuid),
	kizunasync.push(jsonb, uuid, integer, uuid),
	kizunasync.attachment_confirm(text, text, text, bigint, text, text),
	kizunasync.attachment_metadata(text, text),
	kizunasync.attachment_vacuum(text, text)
	TO authenticated, service_role;
GRANT EXECUTE ON FUNCTION
	kizunasync.reap_tombstones(integer),
	kizunasync.compact_changelog(integer),
	kizunasync.prune_clients(integer),
	kizunasync.schedule_jobs()
	TO service_role, pg_database_owner;
GRANT EXECUTE ON FUNCTION
	kizunasync.sync_table(regclass, text, text, text[], text, boolean, text, integer, integer, boolean, boolean, text),
	kizunasync.unsync_table(regclass),
	kizunasync.repair_table(regclass),
	kizunasync.resync_bucket(regclass, jsonb),
	kizunasync.configure(integer, integer, integer, boolean, integer, integer, integer, integer, text, text, text)
	TO pg_database_owner;
GRANT SELECT ON kizunasync.status TO service_role, pg_database_owner;
-- the in_flight view calls its function as the reader
GRANT EXECUTE ON FUNCTION kizunasync._in_flight() TO service_role, pg_database_owner;
GRANT SELECT ON kizunasync.in_flight TO service_role, pg_database_owner;
-- monitoring (issue 31, decisions/0060): the views call their functions
-- as the reader
GRANT EXECUTE ON FUNCTION kizunasync._in_flight(), kizunasync._settings() TO pg_monitor;
GRANT EXECUTE ON FUNCTION kizunasync._settings() TO service_role, pg_database_owner;
GRANT SELECT ON kizunasync.in_flight, kizunasync.in_flight_metrics, kizunasync.metrics, kizunasync.table_metrics,
	kizunasync.bookkeeping_metrics, kizunasync.retention_metrics TO pg_monitor;
GRANT SELECT ON kizunasync.in_flight_metrics, kizunasync.metrics, kizunasync.table_metrics,
	kizunasync.bookkeeping_metrics, kizunasync.retention_metrics TO service_role, pg_database_owner;
GRANT EXECUTE ON FUNCTION kizunasync.health() TO service_role, pg_database_owner;
