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
