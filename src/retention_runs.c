/*-------------------------------------------------------------------------
 *
 * retention_runs.c
 *	  The SQL entry points of the three retention functions
 *	  (reap_tombstones, compact_changelog, prune_clients): each runs the
 *	  function of src/retention.c and, when it returns, records the call in
 *	  kizunasync.retention_runs (issue 31, README "Monitoring"): when it
 *	  started, how long it took, how many bookkeeping rows it deleted and
 *	  what it returned.  The view kizunasync.retention_metrics shows the
 *	  newest call per job.
 *
 *	  The rows deleted are counted by PostgreSQL's statistics of the
 *	  current transaction (pg_stat_get_xact_tuples_deleted) over every
 *	  table of schema kizunasync, before and after the call: so the record
 *	  needs no knowledge of how a job works or which tables it reads, and
 *	  stays right when either changes.  A call that fails records nothing
 *	  (its transaction, or its subtransaction, rolls back).
 *
 *	  The record is an insert of a new row (never an update), so concurrent
 *	  calls never wait for each other here; the recorder then deletes its
 *	  job's rows beyond the newest RUNS_KEPT, skipping rows another
 *	  transaction holds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "spi.h"

PG_FUNCTION_INFO_V1(kz_reap_tombstones_recorded);
PG_FUNCTION_INFO_V1(kz_compact_changelog_recorded);
PG_FUNCTION_INFO_V1(kz_prune_clients_recorded);

/* The functions of src/retention.c (symbols every release keeps, 0080). */
extern PGDLLEXPORT Datum kz_reap_tombstones(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum kz_compact_changelog(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum kz_prune_clients(PG_FUNCTION_ARGS);

/* Calls kept per job. */
#define RUNS_KEPT	10

/* Rows this transaction deleted so far from the tables of schema kizunasync. */
static int64
runs_deleted(void)
{
	int64		n = 0;
	bool		isnull;
	Datum		d;

	kz_spi_connect();
	if (kz_spi_priv("SELECT pg_catalog.sum(pg_catalog.pg_stat_get_xact_tuples_deleted(c.oid))::pg_catalog.int8"
					" FROM pg_catalog.pg_class c"
					" WHERE c.relnamespace OPERATOR(pg_catalog.=) 'kizunasync'::pg_catalog.regnamespace"
					"   AND c.relkind OPERATOR(pg_catalog.=) 'r'",
					0, NULL, NULL, NULL, true, 1, SPI_OK_SELECT) > 0)
	{
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull)
			n = DatumGetInt64(d);
	}
	kz_spi_finish();
	return n;
}

static void
runs_record(const char *job, TimestampTz started, int64 removed, Datum result, bool result_null)
{
	Oid			types[5] = {TEXTOID, TIMESTAMPTZOID, FLOAT8OID, INT8OID, INT8OID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', result_null ? 'n' : ' '};
	long		secs;
	int			usecs;

	TimestampDifference(started, GetCurrentTimestamp(), &secs, &usecs);
	values[0] = CStringGetTextDatum(job);
	values[1] = TimestampTzGetDatum(started);
	values[2] = Float8GetDatum(secs * 1000.0 + usecs / 1000.0);
	values[3] = Int64GetDatum(removed);
	values[4] = result;
	kz_spi_connect();
	kz_spi_priv("INSERT INTO kizunasync.retention_runs (job, started_at, duration_ms, rows_removed, result)"
				" VALUES ($1, $2, $3, $4, $5)",
				5, types, values, nulls, false, 0, SPI_OK_INSERT);
	kz_spi_priv("DELETE FROM kizunasync.retention_runs r"
				" WHERE r.id OPERATOR(pg_catalog.=) ANY (SELECT x.id FROM kizunasync.retention_runs x"
				"   WHERE x.job OPERATOR(pg_catalog.=) $1"
				"   ORDER BY x.id DESC OFFSET " CppAsString2(RUNS_KEPT) " FOR UPDATE SKIP LOCKED)",
				1, types, values, NULL, false, 0, SPI_OK_DELETE);
	kz_spi_finish();
}

/* Run a retention function as the SQL function called, and record it. */
static Datum
runs_call(FunctionCallInfo fcinfo, const char *job, PGFunction fn)
{
	TimestampTz started = GetCurrentTimestamp();
	int64		before = runs_deleted();
	Datum		result;

	result = fn(fcinfo);
	runs_record(job, started, runs_deleted() - before, result, fcinfo->isnull);
	return result;
}

Datum
kz_reap_tombstones_recorded(PG_FUNCTION_ARGS)
{
	return runs_call(fcinfo, "reap_tombstones", kz_reap_tombstones);
}

Datum
kz_compact_changelog_recorded(PG_FUNCTION_ARGS)
{
	return runs_call(fcinfo, "compact_changelog", kz_compact_changelog);
}

Datum
kz_prune_clients_recorded(PG_FUNCTION_ARGS)
{
	return runs_call(fcinfo, "prune_clients", kz_prune_clients);
}
