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
