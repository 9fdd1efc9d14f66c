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
	pull_wait_ms        integer CHECK (pull_wait_ms BETWEEN 0 AND 10000),
	max_pull_buckets    integer CHECK (max_pull_buckets BETWEEN 1 AND 10000)
);

-- One row per synced table.  table_name is the wire name clients use; id
-- is the table's number in the entries (stable across dump and restore:
-- the identity's sequence is registered below).
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
	created_at          timestamptz NOT NULL DEFAULT now(),
	id                  integer GENERATED BY DEFAULT AS IDENTITY UNIQUE,
	-- the key of the table's bucket numbers (src/entry.c): random, so that
	-- nobody without it can make two bucket values share a number
	bucket_key          bytea NOT NULL DEFAULT pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
		CHECK (pg_catalog.length(bucket_key) OPERATOR(pg_catalog.=) 16)
);

-- Bucket value labels by number (src/entry.c): the number is a keyed hash
-- (SipHash-2-4 with the table's bucket_key) of the label, which the entries
-- carry instead of the text; a row here gives the text back (repair, push's
-- DELETE_WINS, the views).
-- The write path adds one when it first records an entry under a number it
-- has not seen committed, without waiting for another transaction, so two
-- transactions that meet a new value at once may both add it: id is not
-- unique, and readers take any row.  A NULL value has no number (0).
CREATE TABLE kizunasync.buckets (
	id                  bigint NOT NULL,
	tid                 integer NOT NULL,
	label               text COLLATE "C" NOT NULL
);
CREATE INDEX buckets_id_idx ON kizunasync.buckets (id);
CREATE INDEX buckets_tid_idx ON kizunasync.buckets (tid);
ALTER TABLE kizunasync.buckets REPLICA IDENTITY FULL;

-- The entries (decisions/0092): per (table, row key, bucket) at most one,
-- either the row's latest change ('r': deliver the row as it is now) or a
-- tombstone ('d': the row was deleted, or moved out of that bucket, with
-- the bucket column's value in snapshot and the time in deleted_at).  key is
-- the row key in binary (src/entry.c): an integer key 8 bytes, a uuid 16,
-- text its bytes, several columns the key text.  row_xmin is the raw xmin
-- of the row version a row entry was captured from (repair_table compares
-- it).  The seq index and the (bucket, seq) index are what a pull reads;
-- the key index finds the entries a change supersedes.
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
CREATE INDEX entries_pair_idx ON kizunasync.entries (bucket, seq);
-- Not unique: a writer replaces the key's tombstone of a bucket without
-- waiting for a reap that holds the old one, so when that reap rolls back
-- the key has two there for a while (decisions/0003).
CREATE INDEX entries_key_idx ON kizunasync.entries (tid, key, bucket);
-- The tombstones in seq order, for the reap's walks (src/entry_reap.c).
CREATE INDEX entries_tomb_idx ON kizunasync.entries (seq) WHERE kind = 'd';
-- Each table's rows and tombstones, as ANALYZE estimates them together
-- (kizunasync.table_metrics, sql/src/56_monitoring.sql).
CREATE STATISTICS kizunasync.entries_tid_kind (mcv) ON tid, kind FROM kizunasync.entries;

-- Rows of changelog and tombstones from a dump taken on 0.1.0 or 0.2.0, restored
-- before the synced table they belong to (pg_dump writes table data in name
-- order): held here until its synced_tables row arrives (src/migrate.c).
-- Empty otherwise, and never dumped.
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
SELECT pg_catalog.pg_extension_config_dump('kizunasync.synced_tables_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.buckets', '');
SELECT pg_catalog.pg_extension_config_dump('kizunasync.entries', '');
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
