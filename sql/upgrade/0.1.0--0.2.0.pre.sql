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
-- 2a. Synced tables are numbered: the entries carry the number, not the name
-- (decisions/0092).  Last column, as in a fresh install.
-- ---------------------------------------------------------------------------
ALTER TABLE kizunasync.synced_tables ADD COLUMN id integer GENERATED BY DEFAULT AS IDENTITY UNIQUE;
SELECT pg_catalog.pg_extension_config_dump('kizunasync.synced_tables_id_seq', '');

-- ---------------------------------------------------------------------------
-- 2b. Bucket labels (decisions/0013, issue 32): 0.1.0 recorded a bucket value
-- under its rendering's ->> text, so 1 and 1.0 were two buckets and the json
-- string "1" and the number 1 one.  Every changelog entry, tombstone and
-- bucket grant of a bucketed table gets the canonical label of its value,
-- in place (seqs kept, cursors stay valid), before the entries take them
-- over (2c), computed from the bookkeeping
-- alone (src/relabel.c: no type's code runs).  Warnings name the tables
-- whose devices may need to bootstrap again, or a repair_table.  The
-- function exists for this update only.
-- ---------------------------------------------------------------------------
CREATE FUNCTION kizunasync._upgrade_relabel() RETURNS bigint
	AS 'MODULE_PATHNAME', 'kz_upgrade_relabel' LANGUAGE C;
SELECT kizunasync._upgrade_relabel();
DROP FUNCTION kizunasync._upgrade_relabel();

-- ---------------------------------------------------------------------------
-- 2c. The entries (decisions/0092) take over from changelog and tombstones,
-- with every seq kept, so every cursor issued before the update stays
-- valid: a changelog row becomes a row entry ('r'), a tombstone a tombstone
-- entry ('d') with its snapshot and time.  Keys and bucket numbers are
-- encoded as the write path encodes them (src/migrate.c; the two functions
-- exist for this update only and run no code of a column type: key types
-- come from the catalog).  A tombstone's label '' of a bucketed table whose
-- snapshot holds JSON null is the NULL value (bucket 0), as capture records
-- it now.  Entries of tables that are no longer synced (0.1.0 left them
-- when a table was dropped) are not carried over: no pull can ask for them.
-- changelog and tombstones come back as read-only views of the entries
-- (sql/src/05_entries.sql).
-- ---------------------------------------------------------------------------
CREATE TABLE kizunasync.buckets (
	id                  bigint NOT NULL,
	tid                 integer NOT NULL,
	label               text COLLATE "C" NOT NULL
);
CREATE INDEX buckets_id_idx ON kizunasync.buckets (id);
CREATE INDEX buckets_tid_idx ON kizunasync.buckets (tid);
ALTER TABLE kizunasync.buckets REPLICA IDENTITY FULL;
CREATE TABLE kizunasync.entries (
	seq                 bigint PRIMARY KEY,
	bucket              bigint NOT NULL,
	tid                 integer NOT NULL,
	row_xmin            xid,
	kind                "char" NOT NULL CHECK (kind IN ('r', 'd')),
	key                 bytea NOT NULL,
	deleted_at          timestamptz,
	snapshot            jsonb
);
CREATE TABLE kizunasync.restore_held (
	seq                 bigint PRIMARY KEY,
	kind                "char" NOT NULL,
	table_name          text COLLATE "C" NOT NULL,
	pk                  text COLLATE "C" NOT NULL,
	bucket_value        text COLLATE "C",
	row_xmin            xid,
	snapshot            jsonb,
	deleted_at          timestamptz
);

CREATE FUNCTION kizunasync._upgrade_entry_key(pg_catalog.text, pg_catalog.text) RETURNS pg_catalog.bytea
	AS 'MODULE_PATHNAME', 'kz_upgrade_entry_key' LANGUAGE C STRICT;
CREATE FUNCTION kizunasync._upgrade_bucket(pg_catalog.int4, pg_catalog.text) RETURNS pg_catalog.int8
	AS 'MODULE_PATHNAME', 'kz_upgrade_bucket' LANGUAGE C;
INSERT INTO kizunasync.entries (seq, bucket, tid, row_xmin, kind, key)
SELECT c.seq, kizunasync._upgrade_bucket(s.id, c.bucket_value), s.id, c.row_xmin, 'r',
	   kizunasync._upgrade_entry_key(c.table_name, c.pk)
  FROM kizunasync.changelog c
  JOIN kizunasync.synced_tables s ON s.table_name OPERATOR(pg_catalog.=) c.table_name;
INSERT INTO kizunasync.entries (seq, bucket, tid, kind, key, deleted_at, snapshot)
SELECT t.seq,
	   kizunasync._upgrade_bucket(s.id,
		   CASE WHEN s.bucket_column IS NOT NULL
					 AND pg_catalog.jsonb_typeof(t.bucket_snapshot OPERATOR(pg_catalog.->) s.bucket_column)
						 OPERATOR(pg_catalog.=) 'null'
				THEN NULL ELSE t.bucket_value END),
	   s.id, 'd', kizunasync._upgrade_entry_key(t.table_name, t.pk), t.deleted_at, t.bucket_snapshot
  FROM kizunasync.tombstones t
  JOIN kizunasync.synced_tables s ON s.table_name OPERATOR(pg_catalog.=) t.table_name;
INSERT INTO kizunasync.buckets (id, tid, label)
SELECT DISTINCT kizunasync._upgrade_bucket(s.id, l.label), s.id, l.label
  FROM (SELECT c.table_name, c.bucket_value FROM kizunasync.changelog c
		 WHERE c.bucket_value IS NOT NULL
		UNION
		SELECT t.table_name, t.bucket_value FROM kizunasync.tombstones t
		  JOIN kizunasync.synced_tables u ON u.table_name OPERATOR(pg_catalog.=) t.table_name
		 WHERE u.bucket_column IS NULL
			OR pg_catalog.jsonb_typeof(t.bucket_snapshot OPERATOR(pg_catalog.->) u.bucket_column)
			   OPERATOR(pg_catalog.<>) 'null') l (table_name, label)
  JOIN kizunasync.synced_tables s ON s.table_name OPERATOR(pg_catalog.=) l.table_name;
DROP FUNCTION kizunasync._upgrade_entry_key(pg_catalog.text, pg_catalog.text);
DROP FUNCTION kizunasync._upgrade_bucket(pg_catalog.int4, pg_catalog.text);

-- (out of the extension first: that also takes them off the list of tables
-- pg_dump dumps, which DROP TABLE alone leaves behind)
ALTER EXTENSION kizunasync DROP TABLE kizunasync.changelog;
ALTER EXTENSION kizunasync DROP TABLE kizunasync.tombstones;
DROP TABLE kizunasync.changelog;
DROP TABLE kizunasync.tombstones;
-- the indexes once the rows are in (one sort each)
CREATE INDEX entries_pair_idx ON kizunasync.entries (bucket, seq);
CREATE INDEX entries_key_idx ON kizunasync.entries (tid, key, bucket);
CREATE INDEX entries_tomb_idx ON kizunasync.entries (seq) WHERE kind = 'd';
CREATE STATISTICS kizunasync.entries_tid_kind (mcv) ON tid, kind FROM kizunasync.entries;
SELECT pg_catalog.pg_extension_config_dump('kizunasync.buckets', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.entries', '');
ANALYZE kizunasync.entries, kizunasync.buckets;
