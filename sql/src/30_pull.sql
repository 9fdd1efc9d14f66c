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
