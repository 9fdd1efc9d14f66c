/*-------------------------------------------------------------------------
 *
 * retention.c
 *	  The reap horizon, and the operator functions that keep the
 *	  bookkeeping bounded:
 *
 *	  reap_tombstones()   remove tombstones older than their table's TTL and
 *						  raise the reap horizon to the highest seq reaped
 *	  compact_changelog() remove entries nothing can deliver any more
 *	  prune_clients()	  forget stale clients and old verdicts
 *	  schedule_jobs()	  schedule the three with pg_cron when it is there
 *
 *	  Each call does a bounded amount of work (max_rows) and skips rows other
 *	  transactions hold locked, so it is safe to run beside writers and
 *	  pullers and to call repeatedly from a scheduler.  The reap horizon only
 *	  ever rises; a cursor whose transfer started below it is answered with
 *	  CHECKPOINT_EXPIRED by pull.
 *
 *	  kizunasync.reap_state has no row after CREATE EXTENSION (so a dump
 *	  restores without a conflict): provisioning inserts it with the first
 *	  seq of this incarnation, and the first reap that removes something
 *	  raises the horizon.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#include "entry_read.h"
#include "identity.h"
#include "jsonbutil.h"
#include "retention.h"
#include "settings.h"
#include "spi.h"

PG_FUNCTION_INFO_V1(kz_reap_tombstones);
PG_FUNCTION_INFO_V1(kz_compact_changelog);
PG_FUNCTION_INFO_V1(kz_prune_clients);
PG_FUNCTION_INFO_V1(kz_schedule_jobs);

void
kz_reap_state_read(KzReapState *rs)
{
	memset(rs, 0, sizeof(*rs));
	if (kz_spi_priv("SELECT reaped_seq, reaped_at, first_seq FROM kizunasync.reap_state WHERE id",
					0, NULL, NULL, NULL, true, 1, SPI_OK_SELECT) > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		d;

		rs->reaped_seq = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		d = SPI_getbinval(tup, desc, 2, &isnull);
		if (!isnull)
			rs->reaped_at = DatumGetTimestampTz(d);
		d = SPI_getbinval(tup, desc, 3, &isnull);
		if (!isnull)
		{
			rs->have_first_seq = true;
			rs->first_seq = DatumGetInt64(d);
		}
	}
	SPI_freetuptable(SPI_tuptable);
}

void
kz_reap_state_init(void)
{
	/* the next value change_seq gives is this incarnation's first seq */
	kz_spi_priv("INSERT INTO kizunasync.reap_state (id, reaped_seq, first_seq)"
				" SELECT true, 0, CASE WHEN s.is_called THEN s.last_value OPERATOR(pg_catalog.+) 1"
				"   ELSE s.last_value END FROM kizunasync.change_seq s"
				" ON CONFLICT (id) DO NOTHING",
				0, NULL, NULL, NULL, false, 0, SPI_OK_INSERT);
}

/*
 * Operator functions are not client RPCs.  EXECUTE is granted to
 * service_role and the database owner only, but a role granted it can
 * still be reached with a client JWT; refuse any request whose JWT claims
 * name a role other than service_role.  Sessions without claims (cron,
 * migrations, psql as the owner) pass.
 */
static void
retention_entry(FunctionCallInfo fcinfo, const char *fname)
{
	KzCaller	caller;
	const char *raw = GetConfigOption("request.jwt.claims", true, false);
	char	   *role;

	kz_entry(fcinfo, fname, true, &caller);
	if (raw == NULL || raw[0] == '\0')
		return;
	role = kz_jwt_role();
	if (role != NULL && strcmp(role, "service_role") == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("%s is not a client RPC", fname),
			 errhint("Run it as the database owner or with the service_role key.")));
}

static int32
retention_max_rows(FunctionCallInfo fcinfo, const char *fname)
{
	int32		max_rows;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("max_rows of %s must not be null", fname)));
	max_rows = PG_GETARG_INT32(0);
	if (max_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows of %s must be at least 1", fname),
				 errdetail("The call asked for %d.", max_rows)));
	return max_rows;
}

/* Run a bookkeeping statement with (max_rows, days); returns SPI_processed. */
static uint64
retention_exec(const char *sql, int32 max_rows, int32 days, int expected)
{
	Oid			argtypes[2] = {INT4OID, INT4OID};
	Datum		values[2];

	values[0] = Int32GetDatum(max_rows);
	values[1] = Int32GetDatum(days);
	return kz_spi_priv(sql, 2, argtypes, values, NULL, false, 0, expected);
}

/*
 * reap_tombstones(max_rows integer DEFAULT 100000) RETURNS bigint
 *
 * Returns the highest seq reaped by this call (0 when nothing was due).
 */
static Datum retention_reap_body(FunctionCallInfo fcinfo);

Datum
kz_reap_tombstones(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.reap_tombstones()", retention_reap_body);
}

static Datum
retention_reap_body(FunctionCallInfo fcinfo)
{
	const char *fname = "kizunasync.reap_tombstones()";
	int32		max_rows;
	int64		max_seq;
	KzSettings	s;

	retention_entry(fcinfo, fname);
	max_rows = retention_max_rows(fcinfo, fname);
	kz_spi_connect();
	kz_settings_read(&s);

	/*
	 * Oldest first, in seq order, skipping tombstones a writer is replacing
	 * right now.  A tombstone of a table that is no longer synced uses the
	 * default TTL.
	 */
	max_seq = kz_entry_reap(max_rows, s.tombstone_ttl_days);

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
		kz_spi_priv("INSERT INTO kizunasync.reap_state AS r (id, reaped_seq, reaped_at)"
					" VALUES (true, $1, pg_catalog.now())"
					" ON CONFLICT (id) DO UPDATE"
					" SET reaped_seq = GREATEST(r.reaped_seq, EXCLUDED.reaped_seq),"
					"     reaped_at = EXCLUDED.reaped_at",
					1, argtypes, values, NULL, false, 0, SPI_OK_INSERT);
	}

	/*
	 * Per-row HLC state of tables that are no longer synced, or no longer
	 * resolve by hlc (sync_table removes those stamps when it switches a
	 * table to arrival; a push in flight meanwhile may still add one).
	 */
	retention_exec("DELETE FROM kizunasync.row_hlc h"
				   " WHERE h.ctid OPERATOR(pg_catalog.=) ANY (SELECT x.ctid FROM kizunasync.row_hlc x"
				   "   WHERE NOT EXISTS (SELECT 1 FROM kizunasync.synced_tables c"
				   "                      WHERE c.table_name OPERATOR(pg_catalog.=) x.table_name"
				   "                        AND c.conflict_mode OPERATOR(pg_catalog.=) 'hlc')"
				   "   LIMIT $1 FOR UPDATE SKIP LOCKED)",
				   max_rows, 0, SPI_OK_DELETE);

	kz_spi_finish();
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
static Datum retention_compact_body(FunctionCallInfo fcinfo);

Datum
kz_compact_changelog(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.compact_changelog()", retention_compact_body);
}

static Datum
retention_compact_body(FunctionCallInfo fcinfo)
{
	const char *fname = "kizunasync.compact_changelog()";
	int32		max_rows;
	uint64		n = 0;

	retention_entry(fcinfo, fname);
	max_rows = retention_max_rows(fcinfo, fname);
	kz_spi_connect();
	n = kz_entry_compact(max_rows);
	kz_spi_finish();
	PG_RETURN_INT64((int64) n);
}

/*
 * prune_clients(max_rows integer DEFAULT 100000) RETURNS bigint
 *
 * Removes clients not seen for client_ttl_days and verdict-ledger entries
 * older than that (a replay of such a mutation id is decided afresh).
 * Returns the number of clients removed.
 *
 * It removes no bucket grant.  A grant is what entitles a user's devices
 * to the deletions of a bucket value they received rows of; a device
 * cannot tell a grant that was removed from one it never had, so removing
 * the grant of a user who still syncs would let its devices keep deleted
 * rows without a signal.  Nothing here can tell such a user from a gone
 * one: a third-party auth sub is never in auth.users (decisions/0003).
 * Grants go with their table (unsync_table, a changed bucket column).
 */
static Datum retention_prune_body(FunctionCallInfo fcinfo);

Datum
kz_prune_clients(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.prune_clients()", retention_prune_body);
}

static Datum
retention_prune_body(FunctionCallInfo fcinfo)
{
	const char *fname = "kizunasync.prune_clients()";
	int32		max_rows;
	uint64		nclients;
	KzSettings	s;

	retention_entry(fcinfo, fname);
	max_rows = retention_max_rows(fcinfo, fname);
	kz_spi_connect();
	kz_settings_read(&s);
	nclients = retention_exec("DELETE FROM kizunasync.clients k"
							  " WHERE k.client_id OPERATOR(pg_catalog.=) ANY ("
							  "   SELECT x.client_id FROM kizunasync.clients x"
							  "   WHERE x.last_seen OPERATOR(pg_catalog.<) (pg_catalog.now()"
							  "         OPERATOR(pg_catalog.-) pg_catalog.make_interval(days => $2))"
							  "   LIMIT $1 FOR UPDATE SKIP LOCKED)",
							  max_rows, s.client_ttl_days, SPI_OK_DELETE);
	retention_exec("DELETE FROM kizunasync.verdicts v"
				   " WHERE v.mutation_id OPERATOR(pg_catalog.=) ANY ("
				   "   SELECT x.mutation_id FROM kizunasync.verdicts x"
				   "   WHERE x.recorded_at OPERATOR(pg_catalog.<) (pg_catalog.now()"
				   "         OPERATOR(pg_catalog.-) pg_catalog.make_interval(days => $2))"
				   "   ORDER BY x.recorded_at LIMIT $1 FOR UPDATE SKIP LOCKED)",
				   max_rows, s.client_ttl_days, SPI_OK_DELETE);

	kz_spi_finish();
	PG_RETURN_INT64((int64) nclients);
}

/*
 * schedule_jobs() RETURNS jsonb
 *
 * Schedules the three retention jobs with pg_cron when it is installed in
 * this database (cron.schedule(name, schedule, command) replaces a job of
 * the same name; the jobs run as the caller); never requires it.  Returns
 * {"jobs": {name: schedule}, "pg_cron": bool}.
 */
static Datum retention_schedule_body(FunctionCallInfo fcinfo);

Datum
kz_schedule_jobs(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.schedule_jobs()", retention_schedule_body);
}

static Datum
retention_schedule_body(FunctionCallInfo fcinfo)
{
	static const char *const names[3] = {
		"kizunasync-reap-tombstones", "kizunasync-compact-changelog", "kizunasync-prune-clients"
	};
	static const char *const commands[3] = {
		"SELECT kizunasync.reap_tombstones()", "SELECT kizunasync.compact_changelog()",
		"SELECT kizunasync.prune_clients()"
	};
	KzSettings	s;
	const char *schedules[3];
	bool		have_cron;
	Oid			fn = InvalidOid;
	JsonbParseState *ps = NULL;
	JsonbValue *res;
	Jsonb	   *result;
	int			i;

	retention_entry(fcinfo, "kizunasync.schedule_jobs()");
	kz_spi_connect();
	kz_settings_read(&s);
	schedules[0] = s.reap_schedule;
	schedules[1] = s.compact_schedule;
	schedules[2] = s.client_prune_schedule;

	have_cron = OidIsValid(get_extension_oid("pg_cron", true));
	if (have_cron)
	{
		Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};

		fn = LookupFuncName(list_make2(makeString("cron"), makeString("schedule")),
							3, argtypes, true);
		if (!OidIsValid(fn) || !superuser_arg(kz_namespace_owner("cron")))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("pg_cron is installed but cron.schedule(text, text, text) was not found"
							" in a schema owned by a superuser")));
		for (i = 0; i < 3; i++)
			(void) OidFunctionCall3(fn, CStringGetTextDatum(names[i]),
									CStringGetTextDatum(schedules[i]),
									CStringGetTextDatum(commands[i]));
	}

	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_key(&ps, "jobs");
	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	for (i = 0; i < 3; i++)
		kz_jsonb_push_kv_string(&ps, names[i], schedules[i]);
	pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	kz_jsonb_push_kv_bool(&ps, "pg_cron", have_cron);
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	result = (Jsonb *) SPI_datumTransfer(JsonbPGetDatum(JsonbValueToJsonb(res)), false, -1);
	kz_spi_finish();
	PG_RETURN_JSONB_P(result);
}
