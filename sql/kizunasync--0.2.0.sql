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

-- The schema must be the one CREATE EXTENSION made: it creates schema
-- kizunasync (owned by the superuser running it) when there is none, and
-- otherwise adopts what it finds.  The library runs its privileged sections
-- as the owner of this schema, so one that a non-superuser owns (a database
-- owner may create it first) or may create objects in would hand that role
-- the extension; objects already in it are not the extension's
-- (decisions/0060).  A restore's CREATE SCHEMA (pg_dump emits one, owned as
-- in the dump, before CREATE EXTENSION and without its grants, which come
-- last) and a schema left behind by DROP EXTENSION pass.
DO $kz$
DECLARE
	owner_name pg_catalog.text;
	creators pg_catalog.text;
	strays pg_catalog.int8;
BEGIN
	SELECT r.rolname INTO owner_name
	  FROM pg_catalog.pg_namespace n
	  JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
	 WHERE n.nspname OPERATOR(pg_catalog.=) 'kizunasync' AND NOT r.rolsuper;
	IF owner_name IS NOT NULL THEN
		RAISE EXCEPTION 'schema "kizunasync" already exists and is owned by role "%", which is not a superuser', owner_name
			USING ERRCODE = '42P06',
				  DETAIL = 'kizunasync runs its privileged code as the owner of its schema.  CREATE EXTENSION creates the schema itself when it does not exist.',
				  HINT = 'Drop the schema (DROP SCHEMA kizunasync), then run CREATE EXTENSION kizunasync again.';
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
		RAISE EXCEPTION 'schema "kizunasync" already exists and roles that are not superusers may create objects in it: %', creators
			USING ERRCODE = '42P06',
				  DETAIL = 'Objects in the extension''s schema are found by the extension''s callers.  CREATE EXTENSION creates the schema itself when it does not exist.',
				  HINT = 'Drop the schema (DROP SCHEMA kizunasync), then run CREATE EXTENSION kizunasync again.';
	END IF;
	SELECT pg_catalog.count(*) INTO strays
	  FROM pg_catalog.pg_depend d
	 WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
	   AND d.refobjid OPERATOR(pg_catalog.=) (SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) 'kizunasync')
	   AND d.classid OPERATOR(pg_catalog.<>) 'pg_catalog.pg_extension'::pg_catalog.regclass;
	IF strays OPERATOR(pg_catalog.>) 0 THEN
		RAISE EXCEPTION 'schema "kizunasync" already exists and is not empty'
			USING ERRCODE = '42P06',
				  DETAIL = pg_catalog.format('It holds %s objects that are not the extension''s.', strays),
				  HINT = 'Move them to another schema or drop the schema, then run CREATE EXTENSION kizunasync again.';
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
-- Every bookkeeping table has a replica identity for UPDATE and DELETE (its
-- primary key; this one, holding no row, the whole row), so a publication
-- FOR ALL TABLES never refuses the extension's writes (decisions/0087).
ALTER TABLE kizunasync.seq_fence REPLICA IDENTITY FULL;

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

-- Deletes and bucket move-outs: one per (table, row key, bucket value left),
-- as the writers keep it.  The key index is not unique: a writer replaces
-- the key's tombstone without waiting for a reap that holds the old one, so
-- when that reap rolls back the key has two for a while (decisions/0003).
-- The reap walks the seq index (src/reap.c); there is no deleted_at index.
CREATE TABLE kizunasync.tombstones (
	seq                 bigint PRIMARY KEY,
	table_name          text COLLATE "C" NOT NULL,
	pk                  text COLLATE "C" NOT NULL,
	bucket_value        text COLLATE "C" NOT NULL DEFAULT '',
	bucket_snapshot     jsonb NOT NULL DEFAULT '{}',
	deleted_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tombstones_key_idx ON kizunasync.tombstones (table_name, pk, bucket_value);
CREATE INDEX tombstones_bucket_idx ON kizunasync.tombstones (table_name, bucket_value, seq);

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

-- Opt-in journal of overwritten values (draws no seq).  id orders the rows
-- and is the key logical replication identifies them by (a publication FOR
-- ALL TABLES publishes its updates and deletes, decisions/0087).  Its
-- sequence starts at the install time in microseconds, so a 0.1.0 dump
-- (which lacks the sequence's state) restores rows numbered from 1 that new
-- entries never collide with (decisions/0081).
CREATE TABLE kizunasync.conflict_journal (
	id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
SELECT pg_catalog.setval('kizunasync.conflict_journal_id_seq',
		(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8,
		false);

-- Exactly-once verdict ledger: what a replay answers, and no more
-- (decisions/0033).  reason is NULL for an applied verdict; server_row says
-- whether the verdict carries a server_row key, which a replay renders
-- again from table_name and pk (kept only then: no row copies are kept).
-- Narrow columns first: the row of an applied verdict is its key, time,
-- flag and user.  verdict is set only in rows a 0.1.0 dump brings (its
-- ledger kept the verdict as jsonb; a replay reads it as 0.1.0 did), and
-- then server_row is NULL.
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
CREATE INDEX verdicts_recorded_at_idx ON kizunasync.verdicts (recorded_at);
-- A user's recorded rejections, newest first: push keeps at most a fixed
-- number of them per user (src/ledger.c, decisions/0033).  Applied
-- verdicts are not in it.
CREATE INDEX verdicts_user_rejected_idx ON kizunasync.verdicts (user_id, recorded_at)
	WHERE reason IS NOT NULL;

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

-- Reap horizon: zero or one row; the highest seq ever reaped, the first
-- seq of this incarnation of the extension (written by provisioning), and
-- where the reap's walks over the tombstones go on (src/reap.c,
-- decisions/0003): walk_seqs[i] is the position of the walk of TTL
-- walk_ttl_days[i]; TTL 0 is the floor walk, below whose position every
-- tombstone is gone.
CREATE TABLE kizunasync.reap_state (
	id                  boolean PRIMARY KEY DEFAULT true CHECK (id),
	reaped_seq          bigint NOT NULL DEFAULT 0,
	reaped_at           timestamptz,
	first_seq           bigint,
	walk_ttl_days       integer[],
	walk_seqs           bigint[]
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

-- What each call of a retention function did (src/retention_runs.c): when
-- it started, how long it took, how many bookkeeping rows it deleted and
-- what it returned.  The recorder keeps the newest few per job; the view
-- kizunasync.retention_metrics shows the newest (issue 31).  Only appended
-- to, so concurrent calls never wait for each other here.  Dumped like
-- every bookkeeping table (decisions/0081).
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
