/*-------------------------------------------------------------------------
 *
 * retention.c
 *	  Operator functions that keep the bookkeeping bounded:
 *
 *	  reap_tombstones()   remove tombstones older than their table's TTL and
 *						  raise the reap horizon to the highest seq reaped
 *	  compact_changelog() remove entries nothing can deliver any more
 *	  prune_clients()	  forget stale clients, old verdicts, orphan grants
 *
 *	  Each call does a bounded amount of work (max_rows) and skips rows other
 *	  transactions hold locked, so it is safe to run beside writers and
 *	  pullers and to call repeatedly from a scheduler.  The reap horizon only
 *	  ever rises; a cursor whose transfer started below it is answered with
 *	  CHECKPOINT_EXPIRED by pull.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"

#include "kizunasync.h"

PG_FUNCTION_INFO_V1(kz_reap_tombstones);
PG_FUNCTION_INFO_V1(kz_compact_changelog);
PG_FUNCTION_INFO_V1(kz_prune_clients);

/*
 * Operator functions are not client RPCs.  EXECUTE is granted to
 * service_role only, but a SECURITY DEFINER function can still be reached
 * through a caller that was granted it; refuse any request whose JWT claims
 * name a role other than service_role.  Sessions without claims (cron,
 * migrations, psql as the owner) pass.
 */
static void
service_guard(const char *fname)
{
	const char *raw = GetConfigOption("request.jwt.claims", true, false);
	Jsonb	   *jb;
	JsonbValue	key;
	JsonbValue *role;

	if (raw == NULL || raw[0] == '\0')
		return;
	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(raw)));
	if (JB_ROOT_IS_OBJECT(jb))
	{
		key.type = jbvString;
		key.val.string.val = "role";
		key.val.string.len = 4;
		role = findJsonbValueFromContainer(&jb->root, JB_FOBJECT, &key);
		if (role != NULL && role->type == jbvString &&
			role->val.string.len == strlen("service_role") &&
			strncmp(role->val.string.val, "service_role", role->val.string.len) == 0)
			return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("kizunasync.%s() is not a client RPC", fname),
			 errhint("Run it as the database owner or with the service_role key.")));
}

static int32
max_rows_arg(FunctionCallInfo fcinfo, const char *fname)
{
	int32		max_rows;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("kizunasync.%s(): max_rows must not be null", fname)));
	max_rows = PG_GETARG_INT32(0);
	if (max_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kizunasync.%s(): max_rows must be at least 1, got %d",
						fname, max_rows)));
	return max_rows;
}

/* Run a statement with one int4 parameter; returns SPI_processed. */
static uint64
exec_int4(const char *sql, int32 arg, int expected)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		values[1];
	int			rc;

	values[0] = Int32GetDatum(arg);
	rc = SPI_execute_with_args(sql, 1, argtypes, values, NULL, false, 0);
	if (rc != expected)
		elog(ERROR, "kizunasync: unexpected SPI result %d for retention statement", rc);
	return SPI_processed;
}

/* First column of the first row as int8, or 0 when NULL / no rows. */
static int64
first_int8(void)
{
	bool		isnull;
	Datum		d;

	if (SPI_processed == 0)
		return 0;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? 0 : DatumGetInt64(d);
}

/*
 * reap_tombstones(max_rows integer DEFAULT 100000) RETURNS bigint
 *
 * Returns the highest seq reaped by this call (0 when nothing was due).
 */
Datum
kz_reap_tombstones(PG_FUNCTION_ARGS)
{
	int32		max_rows;
	int64		max_seq;

	service_guard("reap_tombstones");
	max_rows = max_rows_arg(fcinfo, "reap_tombstones");

	SPI_connect();

	/*
	 * Oldest first, in seq order, skipping tombstones a writer is replacing
	 * right now.  A tombstone of a table that is no longer synced uses the
	 * default TTL.
	 */
	exec_int4("WITH doomed AS ("
			  "  SELECT t.seq FROM kizunasync.tombstones t"
			  "    LEFT JOIN kizunasync.synced_tables c ON c.table_name = t.table_name"
			  "   WHERE t.deleted_at < pg_catalog.now() - pg_catalog.make_interval("
			  "           days => coalesce(c.tombstone_ttl_days,"
			  "                            (SELECT s.tombstone_ttl_days FROM kizunasync.settings s)))"
			  "   ORDER BY t.seq LIMIT $1 FOR UPDATE OF t SKIP LOCKED),"
			  " gone AS ("
			  "  DELETE FROM kizunasync.tombstones t USING doomed"
			  "   WHERE t.seq = doomed.seq RETURNING t.seq)"
			  " SELECT max(seq) FROM gone",
			  max_rows, SPI_OK_SELECT);
	max_seq = first_int8();

	/*
	 * The horizon only rises.  It is written only when this call reaped
	 * something, so a call that found nothing due (or only rows another
	 * reaper holds) never queues behind a concurrent reaper on this row.
	 */
	if (max_seq > 0)
	{
		Oid			argtypes[1] = {INT8OID};
		Datum		values[1];

		values[0] = Int64GetDatum(max_seq);
		if (SPI_execute_with_args("UPDATE kizunasync.reap_state"
								  "   SET reaped_seq = greatest(reaped_seq, $1),"
								  "       reaped_at = pg_catalog.now()"
								  " WHERE id",
								  1, argtypes, values, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "kizunasync: could not update the reap horizon");
	}

	/* Per-row HLC state of tables that are no longer synced. */
	exec_int4("DELETE FROM kizunasync.row_hlc h"
			  " WHERE h.ctid IN (SELECT x.ctid FROM kizunasync.row_hlc x"
			  "   WHERE NOT EXISTS (SELECT 1 FROM kizunasync.synced_tables c"
			  "                      WHERE c.table_name = x.table_name)"
			  "   LIMIT $1 FOR UPDATE SKIP LOCKED)",
			  max_rows, SPI_OK_DELETE);

	SPI_finish();
	PG_RETURN_INT64(max_seq);
}

/*
 * compact_changelog(max_rows integer DEFAULT 100000) RETURNS bigint
 *
 * The changelog keeps one entry per row key by construction, so there are
 * no superseded entries to remove; what can pile up is bookkeeping nothing
 * can deliver any more: entries of tables that are no longer synced, entries
 * whose key has a newer tombstone, and journal rows whose winning entry is
 * gone (pull attaches a conflict only beside its winning entry).  Returns
 * the number of rows removed.
 */
Datum
kz_compact_changelog(PG_FUNCTION_ARGS)
{
	int32		max_rows;
	uint64		n = 0;

	service_guard("compact_changelog");
	max_rows = max_rows_arg(fcinfo, "compact_changelog");

	SPI_connect();
	n += exec_int4("DELETE FROM kizunasync.changelog l"
				   " WHERE l.seq IN (SELECT x.seq FROM kizunasync.changelog x"
				   "   WHERE NOT EXISTS (SELECT 1 FROM kizunasync.synced_tables c"
				   "                      WHERE c.table_name = x.table_name)"
				   "      OR EXISTS (SELECT 1 FROM kizunasync.tombstones t"
				   "                  WHERE t.table_name = x.table_name AND t.pk = x.pk"
				   "                    AND t.seq > x.seq)"
				   "   LIMIT $1 FOR UPDATE SKIP LOCKED)",
				   max_rows, SPI_OK_DELETE);
	n += exec_int4("DELETE FROM kizunasync.conflict_journal j"
				   " WHERE j.id IN (SELECT x.id FROM kizunasync.conflict_journal x"
				   "   WHERE x.winner_seq IS NOT NULL"
				   "     AND NOT EXISTS (SELECT 1 FROM kizunasync.changelog l"
				   "                      WHERE l.seq = x.winner_seq)"
				   "   LIMIT $1 FOR UPDATE SKIP LOCKED)",
				   max_rows, SPI_OK_DELETE);
	SPI_finish();
	PG_RETURN_INT64((int64) n);
}

/*
 * prune_clients(max_rows integer DEFAULT 100000) RETURNS bigint
 *
 * Removes clients not seen for settings.client_ttl_days, verdict-ledger
 * entries older than that (a replay of such a mutation id is decided
 * afresh), and bucket grants of users that no longer exist in auth.users
 * (skipped where there is no auth.users table).  Returns the number of
 * clients removed.
 */
Datum
kz_prune_clients(PG_FUNCTION_ARGS)
{
	int32		max_rows;
	uint64		nclients;

	service_guard("prune_clients");
	max_rows = max_rows_arg(fcinfo, "prune_clients");

	SPI_connect();
	nclients = exec_int4("DELETE FROM kizunasync.clients k"
						 " WHERE k.client_id IN (SELECT x.client_id FROM kizunasync.clients x"
						 "   WHERE x.last_seen < pg_catalog.now() - pg_catalog.make_interval("
						 "           days => (SELECT s.client_ttl_days FROM kizunasync.settings s))"
						 "   LIMIT $1 FOR UPDATE SKIP LOCKED)",
						 max_rows, SPI_OK_DELETE);
	exec_int4("DELETE FROM kizunasync.verdicts v"
			  " WHERE v.mutation_id IN (SELECT x.mutation_id FROM kizunasync.verdicts x"
			  "   WHERE x.recorded_at < pg_catalog.now() - pg_catalog.make_interval("
			  "           days => (SELECT s.client_ttl_days FROM kizunasync.settings s))"
			  "   ORDER BY x.recorded_at LIMIT $1 FOR UPDATE SKIP LOCKED)",
			  max_rows, SPI_OK_DELETE);

	if (SPI_execute("SELECT pg_catalog.to_regclass('auth.users') IS NOT NULL",
					true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		bool		isnull;
		bool		have_users = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
															SPI_tuptable->tupdesc, 1,
															&isnull));

		if (have_users)
			exec_int4("DELETE FROM kizunasync.bucket_grants g"
					  " WHERE (g.user_id, g.table_name, g.bucket_value) IN ("
					  "   SELECT x.user_id, x.table_name, x.bucket_value"
					  "     FROM kizunasync.bucket_grants x"
					  "    WHERE NOT EXISTS (SELECT 1 FROM auth.users u WHERE u.id = x.user_id)"
					  "    LIMIT $1 FOR UPDATE SKIP LOCKED)",
					  max_rows, SPI_OK_DELETE);
	}
	SPI_finish();
	PG_RETURN_INT64((int64) nclients);
}
