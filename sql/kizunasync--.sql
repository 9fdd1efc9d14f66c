-- kizunasync install script.  Assembled from sql/src/*.sql by make.
\echo Use "CREATE EXTENSION kizunasync" to load this file. \quit

-- The extension serves clients through the Supabase Data API, which switches
-- to one of these roles for every request.  They must exist before install.
DO $kz$
DECLARE
	missing text;
BEGIN
	SELECT pg_catalog.string_agg(r, ', ' ORDER BY r) INTO missing
	  FROM pg_catalog.unnest(ARRAY['anon', 'authenticated', 'service_role']) AS r
	 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) r);
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'kizunasync requires the Supabase API roles, missing: %', missing
			USING ERRCODE = '42704',
				  HINT = 'On plain PostgreSQL create them first: CREATE ROLE anon NOLOGIN; CREATE ROLE authenticated NOLOGIN; CREATE ROLE service_role NOLOGIN BYPASSRLS;';
	END IF;
END
$kz$;

-- ---------------------------------------------------------------------------
-- Bookkeeping.  No API role gets any privilege on these tables (see the
-- grants part); every access goes through the extension's functions, which
-- touch them in privileged sections (decisions/0060).  Text keys use the
-- "C" collation: bytewise, and immune to collation library upgrades.
-- Tables that a restore must carry are registered with
-- pg_extension_config_dump; none gets a row at install, so a dump restores
-- into a fresh install without a conflict (decisions/0081).
-- ---------------------------------------------------------------------------

-- One global change sequence across all synced tables.  CACHE 1 matters: a
-- backend-local cache would hand out numbers outside the sequencing fence.
-- A new install starts numbering at the current time in microseconds, so a
-- re-created extension never reuses the seq range of an earlier one
-- (decisions/0084).
CREATE SEQUENCE kizunasync.change_seq AS bigint MINVALUE 1 START 1 CACHE 1;
SELECT pg_catalog.setval('kizunasync.change_seq',
		(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8,
		false);

-- Lock target of the sequencing fence (never holds rows).  Writers take
-- RowExclusiveLock on it around "draw a seq + insert its entry"; a pull takes
-- ShareLock for the instant it reads the sequence's high-water.  See
-- decisions/0010-sequencing.md.
CREATE TABLE kizunasync.seq_fence (dummy boolean);

-- Deployment settings: zero or one row; a NULL or absent value takes the
-- default (src/settings.c).  Changed with kizunasync.configure().
CREATE TABLE kizunasync.settings (
	id                  boolean PRIMARY KEY DEFAULT true CHECK (id),
	max_pull_scan       integer CHECK (max_pull_scan >= 1),
	max_pull_limit      integer CHECK (max_pull_limit >= 1),
	max_batch_size      integer CHECK (max_batch_size BETWEEN 1 AND 1000),
	require_atomic      boolean,
	tombstone_ttl_days  integer CHECK (tombstone_ttl_days >= 1),
	client_ttl_days     integer CHECK (client_ttl_days >= 1),
	hlc_max_skew_ms     integer CHECK (hlc_max_skew_ms >= 0),
	reap_schedule       text,
	compact_schedule    text,
	client_prune_schedule text,
	pull_wait_ms        integer CHECK (pull_wait_ms BETWEEN 0 AND 10000)
);

-- One row per synced table.  table_name is the wire name clients use.
CREATE TABLE kizunasync.synced_tables (
	table_name          text COLLATE "C" PRIMARY KEY,
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
-- as text ('' on an unbucketed table, NULL for a NULL value on a bucketed
-- one); row_xmin is the raw xmin of the row version it was captured from
-- (kizunasync.repair_table compares it).
CREATE TABLE kizunasync.changelog (
	seq                 bigint PRIMARY KEY,
	table_name          text COLLATE "C" NOT NULL,
	pk                  text COLLATE "C" NOT NULL,
	bucket_value        text COLLATE "C",
	row_xmin            xid,
	UNIQUE (table_name, pk)
);
CREATE INDEX changelog_bucket_idx ON kizunasync.changelog (table_name, bucket_value, seq);

-- Deletes and bucket move-outs: one per (table, row key, bucket value left).
CREATE TABLE kizunasync.tombstones (
	seq                 bigint PRIMARY KEY,
	table_name          text COLLATE "C" NOT NULL,
	pk                  text COLLATE "C" NOT NULL,
	bucket_value        text COLLATE "C" NOT NULL DEFAULT '',
	bucket_snapshot     jsonb NOT NULL DEFAULT '{}',
	deleted_at          timestamptz NOT NULL DEFAULT now(),
	UNIQUE (table_name, pk, bucket_value)
);
CREATE INDEX tombstones_bucket_idx ON kizunasync.tombstones (table_name, bucket_value, seq);
CREATE INDEX tombstones_deleted_at_idx ON kizunasync.tombstones (deleted_at);

-- (user, table, bucket value) pairs a user has received a live row from.
-- user_id is the JWT "sub" (any text: third-party auth ids are not uuids).
CREATE TABLE kizunasync.bucket_grants (
	user_id             text COLLATE "C" NOT NULL,
	table_name          text COLLATE "C" NOT NULL,
	bucket_value        text COLLATE "C" NOT NULL,
	granted_at          timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (user_id, table_name, bucket_value)
);

-- Per-row, per-column HLC high-water (hlc conflict mode).
CREATE TABLE kizunasync.row_hlc (
	table_name          text COLLATE "C" NOT NULL,
	pk                  text COLLATE "C" NOT NULL,
	column_hlc          jsonb NOT NULL DEFAULT '{}',
	PRIMARY KEY (table_name, pk)
);

-- Opt-in journal of overwritten values (draws no seq).  id only orders the
-- rows; it is not a key, so a restore of a dump without its sequence never
-- collides.
CREATE TABLE kizunasync.conflict_journal (
	id                  bigint GENERATED ALWAYS AS IDENTITY,
	table_name          text COLLATE "C" NOT NULL,
	pk                  text COLLATE "C" NOT NULL,
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
	user_id             text COLLATE "C",
	table_name          text COLLATE "C",
	pk                  text COLLATE "C",
	verdict             jsonb NOT NULL,
	recorded_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX verdicts_recorded_at_idx ON kizunasync.verdicts (recorded_at);

-- Optional client registry: the last cursor handed out, and the reap
-- horizon when the client's latest bootstrap began (a paused bootstrap
-- expires when a reap passed it since).
CREATE TABLE kizunasync.clients (
	client_id           uuid PRIMARY KEY,
	user_id             text COLLATE "C" NOT NULL,
	cursor              text NOT NULL DEFAULT '0',
	last_mutation_id    uuid,
	schema_version      integer NOT NULL DEFAULT 1,
	last_seen           timestamptz NOT NULL DEFAULT now(),
	bootstrap_horizon   bigint
);
CREATE INDEX clients_user_id_idx ON kizunasync.clients (user_id);
CREATE INDEX clients_last_seen_idx ON kizunasync.clients (last_seen);

-- Reap horizon: zero or one row; the highest seq ever reaped, and the first
-- seq of this incarnation of the extension (written by provisioning).
CREATE TABLE kizunasync.reap_state (
	id                  boolean PRIMARY KEY DEFAULT true CHECK (id),
	reaped_seq          bigint NOT NULL DEFAULT 0,
	reaped_at           timestamptz,
	first_seq           bigint
);

-- pg_dump keeps user state of an extension only for registered objects.
SELECT pg_catalog.pg_extension_config_dump('kizunasync.settings', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.synced_tables', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.changelog', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.tombstones', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.bucket_grants', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.row_hlc', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.conflict_journal', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.conflict_journal_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.verdicts', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.clients', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.reap_state', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.change_seq', '');

-- Attachments: integrity metadata around Supabase Storage objects
-- (sql/src/60_attachments.sql).
CREATE TABLE kizunasync.attachments (
	id            uuid PRIMARY KEY DEFAULT pg_catalog.gen_random_uuid(),
	bucket_id     text COLLATE "C" NOT NULL,
	object_path   text COLLATE "C" NOT NULL,
	sha256        text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
	size          bigint CHECK (size >= 0),
	media_type    text,
	created_by    text COLLATE "C" NOT NULL,
	table_name    text COLLATE "C",
	created_at    timestamptz NOT NULL DEFAULT now(),
	updated_at    timestamptz NOT NULL DEFAULT now(),
	UNIQUE (bucket_id, object_path)
);
SELECT pg_catalog.pg_extension_config_dump('kizunasync.attachments', '');
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
AS 'MODULE_PATHNAME', 'kz_reap_tombstones'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.reap_tombstones(integer) IS
  'removes tombstones older than their table''s TTL (bounded per call) and raises the reap horizon; returns the highest seq reaped';

CREATE OR REPLACE FUNCTION kizunasync.compact_changelog(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_compact_changelog'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.compact_changelog(integer) IS
  'removes bookkeeping nothing can deliver any more (bounded per call); returns rows removed';

CREATE OR REPLACE FUNCTION kizunasync.prune_clients(max_rows integer DEFAULT 100000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'kz_prune_clients'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync.prune_clients(integer) IS
  'removes stale clients, verdicts older than client_ttl_days and grants of deleted users; returns clients removed';

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
	   COALESCE((SELECT r.reaped_seq FROM kizunasync.reap_state r WHERE r.id), 0) AS reap_horizon,
	   (SELECT k.cursor FROM kizunasync.clients k
		 WHERE c.register_clients
		 ORDER BY k.last_seen LIMIT 1) AS oldest_client_cursor,
	   (SELECT min(k.last_seen) FROM kizunasync.clients k WHERE c.register_clients) AS oldest_client_seen
  FROM kizunasync.synced_tables c;
COMMENT ON VIEW kizunasync.status IS 'per synced table: mode, bucket column, changelog size, tombstones, reap horizon, oldest registered client';
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
-- The extension's own triggers (install only: an upgrade keeps them, and
-- replaces their functions in place).
-- ---------------------------------------------------------------------------
-- Both fire in replica mode too (session_replication_role = replica): a
-- configuration change must reach every backend's cache, and a synced table
-- dropped in such a session must still lose its bookkeeping.
CREATE TRIGGER kizunasync_conf_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON kizunasync.synced_tables
	FOR EACH STATEMENT EXECUTE FUNCTION kizunasync._conf_changed();
ALTER TABLE kizunasync.synced_tables ENABLE ALWAYS TRIGGER kizunasync_conf_changed;

CREATE EVENT TRIGGER kizunasync_on_sql_drop ON sql_drop
	EXECUTE FUNCTION kizunasync._on_sql_drop();
ALTER EVENT TRIGGER kizunasync_on_sql_drop ENABLE ALWAYS;
-- ---------------------------------------------------------------------------
-- Privileges (last part of the install script, decisions/0060).  Clients
-- reach the extension only through the granted functions: anon gets nothing
-- at all (not even USAGE); authenticated gets USAGE and EXECUTE on the
-- client RPCs; service_role also the operator functions and the status
-- view; the database owner (pg_database_owner, e.g. Supabase's postgres)
-- provisions the tables it owns, changes settings and runs the operator
-- functions.  Every bookkeeping table and internal helper stays private to
-- the extension owner.
-- ---------------------------------------------------------------------------
REVOKE ALL ON ALL TABLES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL ROUTINES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
GRANT USAGE ON SCHEMA kizunasync TO authenticated, service_role, pg_database_owner;

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
	kizunasync.configure(integer, integer, integer, boolean, integer, integer, integer, integer, text, text, text)
	TO pg_database_owner;
GRANT SELECT ON kizunasync.status TO service_role, pg_database_owner;
