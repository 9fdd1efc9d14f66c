-- ---------------------------------------------------------------------------
-- push (src/push.c): verdicts, transforms, conflict modes, exactly-once
-- ledger.  SECURITY DEFINER for the bookkeeping; every application-table
-- read and write inside runs as the caller, so RLS and column privileges
-- apply.  The argument names are the wire keys of the rpc body.
-- ---------------------------------------------------------------------------
CREATE FUNCTION kizunasync.push(batch jsonb, last_mutation_id uuid, schema_version integer,
								client_id uuid DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'kz_push'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = '';

COMMENT ON FUNCTION kizunasync.push(jsonb, uuid, integer, uuid) IS
'Apply a batch of client mutations; one verdict per mutation (or a batch abort, or RESET_REQUIRED)';
