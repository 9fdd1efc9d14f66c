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
