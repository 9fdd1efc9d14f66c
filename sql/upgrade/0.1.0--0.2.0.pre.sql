-- kizunasync 0.1.0 -> 0.2.0 upgrade script.  Assembled by make from
-- sql/upgrade/0.1.0--0.2.0.pre.sql, the routine parts of sql/src/ (every
-- function, the status view, comments) and
-- sql/upgrade/0.1.0--0.2.0.post.sql; frozen when 0.2.0 is released
-- (decisions/0080).  test/t/upgrade.sh checks that an upgraded database has
-- exactly the objects of a fresh 0.2.0 install.
\echo Use "ALTER EXTENSION kizunasync UPDATE TO '0.2.0'" to load this file. \quit

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

-- The status view's text columns change collation, which CREATE OR REPLACE
-- VIEW cannot do: it is created again below (with its grants).
DROP VIEW kizunasync.status;

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
ALTER TABLE kizunasync.verdicts
	ALTER COLUMN user_id TYPE text COLLATE "C" USING user_id::text,
	ALTER COLUMN table_name TYPE text COLLATE "C",
	ALTER COLUMN pk TYPE text COLLATE "C";
-- A user's recorded rejections are bounded (decisions/0033).  A generated
-- column: computed for the rows kept here, and for the rows a dump of an
-- older version brings (a dump carries no generated values).
ALTER TABLE kizunasync.verdicts ADD COLUMN rejected boolean GENERATED ALWAYS AS
	((verdict OPERATOR(pg_catalog.->>) 'verdict') OPERATOR(pg_catalog.=) 'rejected') STORED;
CREATE INDEX verdicts_user_rejected_idx ON kizunasync.verdicts (user_id, rejected, recorded_at);
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
ALTER TABLE kizunasync.reap_state ADD COLUMN first_seq bigint;
INSERT INTO kizunasync.reap_state (id, reaped_seq, first_seq) VALUES (true, 0, 1)
	ON CONFLICT (id) DO UPDATE SET first_seq = 1;
