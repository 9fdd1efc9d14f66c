-- kizunasync 0.2.0 -> 0.3.0 upgrade script.  Assembled by make from
-- sql/upgrade/0.2.0--0.3.0.pre.sql, the routine parts of sql/src/ (every
-- function, the views, comments) and sql/upgrade/0.2.0--0.3.0.post.sql;
-- frozen when 0.3.0 is released (decisions/0080).  test/t/upgrade.sh checks
-- that an upgraded database has exactly the objects of a fresh 0.3.0
-- install, and that devices continue from cursors issued before it.
\echo Use "ALTER EXTENSION kizunasync UPDATE TO '0.3.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- 0. Objects of other roles over what the update drops: the tables changelog
-- and tombstones and their row types (3).  As in the update from 0.1.0: no
-- role but the extension owner may read them, but PostgreSQL checks SELECT
-- when a view runs, not when it is created, so any role with USAGE on the
-- schema can make one.  Such an object in a temporary schema is dropped,
-- with a WARNING naming it, as its session's end would drop it; any other
-- stops the update (2BP01), naming each object, its owner and what it
-- depends on.  The extension's own views over them are replaced in place
-- (1), so views over those stay valid.
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
			-- the tables dropped in 2 and their row types
			SELECT x.classid, x.objid
			  FROM pg_catalog.pg_class c
			  JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) c.reltype
			 CROSS JOIN LATERAL (VALUES ('pg_catalog.pg_class'::pg_catalog.regclass, c.oid),
										('pg_catalog.pg_type'::pg_catalog.regclass, c.reltype),
										('pg_catalog.pg_type'::pg_catalog.regclass, t.typarray)) x (classid, objid)
			 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'kizunasync'::pg_catalog.regnamespace
			   AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['changelog', 'tombstones']::pg_catalog.name[])
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

-- The grants are made again at the end, in the order of a fresh install
-- (an ACL lists its grantees in the order they were granted).
REVOKE ALL ON ALL ROUTINES IN SCHEMA kizunasync FROM authenticated, service_role, pg_database_owner, pg_monitor;

-- ---------------------------------------------------------------------------
-- 1. The extension's views over changelog and tombstones read nothing until
-- the routines below replace them in place (CREATE OR REPLACE VIEW keeps
-- their OIDs, grants and every view over them), with the same columns.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE VIEW kizunasync.status AS
SELECT NULL::pg_catalog.text AS table_name, NULL::pg_catalog.regclass AS relation,
	   NULL::pg_catalog.text AS sync_mode, NULL::pg_catalog.text AS bucket_column,
	   NULL::pg_catalog.text[] AS key_columns, NULL::pg_catalog.text AS conflict_mode,
	   NULL::pg_catalog.int8 AS changelog_entries, NULL::pg_catalog.int8 AS tombstones,
	   NULL::pg_catalog.int8 AS reap_horizon, NULL::pg_catalog.text AS oldest_client_cursor,
	   NULL::pg_catalog.timestamptz AS oldest_client_seen
 WHERE false;
CREATE OR REPLACE VIEW kizunasync.table_metrics AS
SELECT NULL::pg_catalog.text AS table_name, NULL::pg_catalog.regclass AS relation,
	   NULL::pg_catalog.int8 AS entries, NULL::pg_catalog.int8 AS tombstones,
	   NULL::pg_catalog.int4 AS tombstone_ttl_days
 WHERE false;
CREATE OR REPLACE VIEW kizunasync.metrics AS
SELECT NULL::pg_catalog.int8 AS last_seq, NULL::pg_catalog.int8 AS changes,
	   NULL::pg_catalog.int8 AS reap_horizon, NULL::pg_catalog.timestamptz AS reap_horizon_raised_at,
	   NULL::pg_catalog.timestamptz AS oldest_tombstone_at, NULL::pg_catalog.text AS oldest_tombstone_table,
	   NULL::pg_catalog.int4 AS oldest_tombstone_ttl_days, NULL::pg_catalog.int8 AS clients,
	   NULL::pg_catalog.timestamptz AS oldest_client_seen, NULL::pg_catalog.int8 AS ledger_verdicts,
	   NULL::pg_catalog.int8 AS ledger_rejections, NULL::pg_catalog.int4 AS pull_wait_ms
 WHERE false;

-- ---------------------------------------------------------------------------
-- 2. Synced tables are numbered: the entries carry the number, not the name
-- (decisions/0092).  Last column, as in a fresh install.
-- ---------------------------------------------------------------------------
ALTER TABLE kizunasync.synced_tables ADD COLUMN id integer GENERATED BY DEFAULT AS IDENTITY UNIQUE;
-- and each gets the random key of its bucket numbers (a volatile default:
-- one key per row)
ALTER TABLE kizunasync.synced_tables ADD COLUMN bucket_key bytea NOT NULL
	DEFAULT pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
	CHECK (pg_catalog.length(bucket_key) OPERATOR(pg_catalog.=) 16);
SELECT pg_catalog.pg_extension_config_dump('kizunasync.synced_tables_id_seq', '');

-- ---------------------------------------------------------------------------
-- 3. The entries (decisions/0092) take over from changelog and tombstones,
-- with every seq kept, so every cursor issued before the update stays
-- valid: a changelog row becomes a row entry ('r'), a tombstone a tombstone
-- entry ('d') with its snapshot and time.  Keys and bucket numbers are
-- encoded as the write path encodes them (src/migrate.c; the two functions
-- exist for this update only and run no code of a column type: key types
-- come from the catalog).  A tombstone's label '' of a bucketed table whose
-- snapshot holds JSON null is the NULL value (bucket 0), as capture records
-- it now.  Entries of tables that are no longer synced (left when a table
-- was dropped by a release before 0.2.0, or by a write that raced
-- unsync_table) are not carried over: no pull can ask for them.
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

-- ---------------------------------------------------------------------------
-- 4. How many bucket entries a pull may name is a setting (issue 30,
-- decisions/0022; 64 before): a column last, as in a fresh install, and an
-- argument last of configure(), which the routines below create with it.
-- The old configure() goes first (CREATE OR REPLACE would add a second one
-- beside it); EXECUTE on it is granted again at the end as a fresh install
-- grants it (an operator's own grants on it have to be made again).
-- ---------------------------------------------------------------------------
ALTER TABLE kizunasync.settings
	ADD COLUMN max_pull_buckets integer CHECK (max_pull_buckets BETWEEN 1 AND 10000);
DROP FUNCTION kizunasync.configure(integer, integer, integer, boolean, integer, integer, integer,
	integer, text, text, text);
