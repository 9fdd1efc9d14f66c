/*-------------------------------------------------------------------------
 *
 * retention.c
 *	  The reap horizon, and the operator functions that keep the
 *	  bookkeeping bounded:
 *
 *	  reap_tombstones()   remove tombstones older than their table's TTL and
 *						  raise the reap horizon to the highest seq reaped
 *						  (the walks over the tombstones: entry_reap.c)
 *	  compact_changelog() remove entries nothing can deliver any more
 *	  prune_clients()	  forget stale clients and old verdicts
 *	  schedule_jobs()	  schedule the three with pg_cron when it is there
 *
 *	  Each call does a bounded amount of work (max_rows), costs what it
 *	  removes plus a probe per kind of thing it looks for, and skips rows
 *	  other transactions hold, so it is safe to run beside writers and
 *	  pullers and to call repeatedly from a scheduler; no writer waits for it
 *	  (decisions/0003).  The reap horizon only ever rises; a cursor whose
 *	  transfer started below it is answered with CHECKPOINT_EXPIRED by pull.
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
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "entry_reap.h"
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
 * Tombstones one reap call may pass over without removing them (those of
 * tables with a longer TTL, those other transactions hold): with the rows
 * it removes, what bounds a call.
 */
#define KZ_REAP_MAX_PASSED	100000

/* now - days, as now() - make_interval(days => days) computes it */
static TimestampTz
retention_cutoff(TimestampTz now, int32 days)
{
	Interval	iv;

	memset(&iv, 0, sizeof(iv));
	iv.day = days;
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
												   TimestampTzGetDatum(now),
												   IntervalPGetDatum(&iv)));
}

static int
retention_int32_cmp(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return (x > y) - (x < y);
}

/*
 * Each synced table's TTL, sorted by its id, and the distinct TTLs in use
 * (the default's among them: tables no longer synced use it), ascending.
 * Returns how many TTLs.
 */
static int
retention_ttls(int32 default_days, TimestampTz now, KzReapTtls *ttls, int32 **classes)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		values[1];
	uint64		n;
	uint64		i;
	int			nclasses = 0;

	values[0] = Int32GetDatum(default_days);
	n = kz_spi_priv("SELECT c.id, COALESCE(c.tombstone_ttl_days, $1)"
					"  FROM kizunasync.synced_tables c ORDER BY c.id",
					1, argtypes, values, NULL, true, 0, SPI_OK_SELECT);
	ttls->tables = palloc(sizeof(KzReapTtl) * Max(n, 1));
	ttls->ntables = (int) n;
	ttls->default_days = default_days;
	ttls->default_cutoff = retention_cutoff(now, default_days);
	*classes = palloc(sizeof(int32) * (n + 1));
	(*classes)[nclasses++] = default_days;
	for (i = 0; i < n; i++)
	{
		KzReapTtl  *t = &ttls->tables[i];
		bool		isnull;
		int			k;

		t->tid = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
											 1, &isnull));
		t->ttl_days = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
												  2, &isnull));
		t->cutoff = retention_cutoff(now, t->ttl_days);
		for (k = 0; k < nclasses && (*classes)[k] != t->ttl_days; k++)
			;
		if (k == nclasses)
			(*classes)[nclasses++] = t->ttl_days;
	}
	SPI_freetuptable(SPI_tuptable);
	qsort(*classes, nclasses, sizeof(int32), retention_int32_cmp);
	return nclasses;
}

/* The walks' positions (reap_state.walk_ttl_days, walk_seqs). */
typedef struct RetentionWalks
{
	int			n;
	int32	   *ttl_days;
	int64	   *next_seq;
	bool		ahead;			/* some were above the change sequence */
} RetentionWalks;

#define RETENTION_WALKS_SQL \
	"SELECT w.t, w.s, w.s OPERATOR(pg_catalog.>) (GREATEST(q.last_value, $1) OPERATOR(pg_catalog.+) 1)" \
	"  FROM kizunasync.reap_state r" \
	"  CROSS JOIN LATERAL ROWS FROM (pg_catalog.unnest(r.walk_ttl_days)," \
	"                                pg_catalog.unnest(r.walk_seqs)) AS w(t, s)," \
	"       kizunasync.change_seq q" \
	" WHERE r.id"

/*
 * The stored positions (read by RETENTION_WALKS_SQL).  A position above
 * both the change sequence's last value and every tombstone can only come
 * from a sequence set back by hand (seqs only rise otherwise, and a new
 * incarnation of the extension starts with none): then none is used, and
 * the walks start from the first tombstone.
 */
static void
retention_walks_load(RetentionWalks *w)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(kz_entry_max_tombstone_seq())};
	uint64		n = kz_spi_priv(RETENTION_WALKS_SQL, 1, types, values, NULL, false, 0, SPI_OK_SELECT);
	uint64		i;

	w->n = (int) n;
	w->ahead = false;
	w->ttl_days = palloc(sizeof(int32) * Max(n, 1));
	w->next_seq = palloc(sizeof(int64) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull1,
					isnull2,
					isnull3;

		w->ttl_days[i] = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull1));
		w->next_seq[i] = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull2));
		if (isnull1 || isnull2 || DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull3)))
			w->ahead = true;
	}
	SPI_freetuptable(SPI_tuptable);
	if (w->ahead)
		w->n = 0;
}

/* The stored position of walk ttl_days, if there is one. */
static bool
retention_walk_at(const RetentionWalks *w, int32 ttl_days, int64 *next_seq)
{
	int			i;

	for (i = 0; i < w->n; i++)
		if (w->ttl_days[i] == ttl_days)
		{
			*next_seq = w->next_seq[i];
			return true;
		}
	return false;
}

/*
 * Store the walks' new positions and, when this call reaped something, the
 * horizon.  Each position is merged with what a concurrent call stored
 * meanwhile (the higher one: it is as safe, being that call's guarantee);
 * the walks of TTLs no longer in use are forgotten.  A call that reaped
 * nothing and whose walks did not move touches no row; one that reaped
 * nothing never waits for the row either: when another call holds it (a
 * concurrent reap), its positions are left for a later call.
 */
static void
retention_walks_store(const RetentionWalks *stored, int32 *ttl_days, int64 *next_seq, int n,
					  int64 max_seq)
{
	RetentionWalks latest;
	Oid			argtypes[3] = {INT8OID, INT4ARRAYOID, INT8ARRAYOID};
	Datum		values[3];
	Datum	   *d;
	int			i;

	if (max_seq == 0)
	{
		bool		moved = stored->ahead || stored->n != n;

		for (i = 0; i < n && !moved; i++)
		{
			int64		old;

			moved = !retention_walk_at(stored, ttl_days[i], &old) || old != next_seq[i];
		}
		if (!moved)
			return;
		if (kz_spi_priv("SELECT 1 FROM kizunasync.reap_state r WHERE r.id FOR UPDATE SKIP LOCKED",
						0, NULL, NULL, NULL, false, 0, SPI_OK_SELECT) == 0)
			return;				/* none yet, or a concurrent reap holds it */
	}
	else
		(void) kz_spi_priv("SELECT 1 FROM kizunasync.reap_state r WHERE r.id FOR UPDATE",
						   0, NULL, NULL, NULL, false, 0, SPI_OK_SELECT);

	/* now locked (or absent): what committed last */
	retention_walks_load(&latest);
	for (i = 0; i < n; i++)
	{
		int64		other;

		if (!stored->ahead && retention_walk_at(&latest, ttl_days[i], &other) &&
			other > next_seq[i])
			next_seq[i] = other;
	}
	values[0] = Int64GetDatum(max_seq);
	d = palloc(sizeof(Datum) * n);
	for (i = 0; i < n; i++)
		d[i] = Int32GetDatum(ttl_days[i]);
	values[1] = PointerGetDatum(construct_array(d, n, INT4OID, sizeof(int32), true, TYPALIGN_INT));
	for (i = 0; i < n; i++)
		d[i] = Int64GetDatum(next_seq[i]);
	values[2] = PointerGetDatum(construct_array(d, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));

	/*
	 * The horizon only rises, and only a call that reaped something raises
	 * it (max_seq > 0): a call that found nothing due never queues behind a
	 * concurrent reaper on this row.
	 */
	if (max_seq > 0)
		kz_spi_priv("INSERT INTO kizunasync.reap_state AS r"
					"   (id, reaped_seq, reaped_at, walk_ttl_days, walk_seqs)"
					" VALUES (true, $1, pg_catalog.now(), $2, $3)"
					" ON CONFLICT (id) DO UPDATE"
					" SET reaped_seq = GREATEST(r.reaped_seq, EXCLUDED.reaped_seq),"
					"     reaped_at = EXCLUDED.reaped_at,"
					"     walk_ttl_days = EXCLUDED.walk_ttl_days, walk_seqs = EXCLUDED.walk_seqs",
					3, argtypes, values, NULL, false, 0, SPI_OK_INSERT);
	else
		kz_spi_priv("UPDATE kizunasync.reap_state r SET walk_ttl_days = $1, walk_seqs = $2 WHERE r.id",
					2, argtypes + 1, values + 1, NULL, false, 0, SPI_OK_UPDATE);
}

/*
 * The table names a bookkeeping table holds rows of, found by a loose scan
 * of its index led by table_name (one probe per name, whatever the rows),
 * that sql's condition keeps: sql is a statement over "names(n)", ending
 * with its order (by name, so that a call bounded by max_rows works through
 * the same names first every time).
 */
#define RETENTION_NAMES(rel) \
	"WITH RECURSIVE names(n) AS (" \
	"  (SELECT x.table_name FROM kizunasync." rel " x ORDER BY x.table_name LIMIT 1)" \
	"  UNION ALL" \
	"  SELECT (SELECT x.table_name FROM kizunasync." rel " x" \
	"           WHERE x.table_name OPERATOR(pg_catalog.>) names.n ORDER BY x.table_name LIMIT 1)" \
	"    FROM names WHERE names.n IS NOT NULL)" \
	" SELECT names.n FROM names WHERE names.n IS NOT NULL"

static List *
retention_names(const char *sql)
{
	List	   *names = NIL;
	uint64		n = kz_spi_priv(sql, 0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
	uint64		i;

	for (i = 0; i < n; i++)
		names = lappend(names, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	SPI_freetuptable(SPI_tuptable);
	return names;
}

/* Run a bookkeeping statement with (table name, max_rows); returns SPI_processed. */
static uint64
retention_exec_name(const char *sql, const char *name, int64 max_rows, int expected)
{
	Oid			argtypes[2] = {TEXTOID, INT8OID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(name);
	values[1] = Int64GetDatum(max_rows);
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

/*
 * The walks (reap.c): the floor first, which removes due tombstones oldest
 * seq first and keeps the position below which none is left; then one walk
 * per TTL in use, shortest first, each from where it stopped last (never
 * below the floor), so that a table with a shorter TTL is reaped on time
 * past another's tombstones that are not due yet, and each tombstone is
 * passed over at most once per TTL.  Returns the highest seq removed.
 */
static int64
retention_reap_walks(int32 max_rows, int32 default_days)
{
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	KzReapTtls	ttls;
	int32	   *classes;
	int			nclasses = retention_ttls(default_days, now, &ttls, &classes);
	RetentionWalks stored;
	KzReapBudget b;
	int32	   *walk_ttl = palloc(sizeof(int32) * (nclasses + 1));
	int64	   *walk_next = palloc(sizeof(int64) * (nclasses + 1));
	int64		from;
	int			i;

	retention_walks_load(&stored);
	memset(&b, 0, sizeof(b));
	b.max_rows = max_rows;
	b.max_passed = KZ_REAP_MAX_PASSED;
	if (!retention_walk_at(&stored, 0, &from))
		from = 0;
	walk_ttl[0] = 0;
	walk_next[0] = kz_reap_walk(0, 0, from, &ttls, &b);
	for (i = 0; i < nclasses; i++)
	{
		if (!retention_walk_at(&stored, classes[i], &from) || from < walk_next[0])
			from = walk_next[0];
		walk_ttl[i + 1] = classes[i];
		walk_next[i + 1] = kz_reap_walk(classes[i], retention_cutoff(now, classes[i]), from,
										&ttls, &b);
	}
	CommandCounterIncrement();
	retention_walks_store(&stored, walk_ttl, walk_next, nclasses + 1, b.max_seq);
	return b.max_seq;
}

static Datum
retention_reap_body(FunctionCallInfo fcinfo)
{
	const char *fname = "kizunasync.reap_tombstones()";
	int32		max_rows;
	int64		max_seq;
	KzSettings	s;
	List	   *names;
	ListCell   *lc;
	int64		left;

	retention_entry(fcinfo, fname);
	max_rows = retention_max_rows(fcinfo, fname);
	kz_spi_connect();
	kz_settings_read(&s);
	max_seq = retention_reap_walks(max_rows, s.tombstone_ttl_days);

	/*
	 * Per-row HLC state of tables that are no longer synced, or no longer
	 * resolve by hlc (sync_table removes those stamps when it switches a
	 * table to arrival; a push in flight meanwhile may still add one).
	 * Found by table name: one probe per name, not per stamp.
	 */
	names = retention_names(RETENTION_NAMES("row_hlc")
							" AND NOT EXISTS (SELECT 1 FROM kizunasync.synced_tables c"
							"  WHERE c.table_name OPERATOR(pg_catalog.=) names.n"
							"    AND c.conflict_mode OPERATOR(pg_catalog.=) 'hlc')"
							" ORDER BY names.n");
	left = max_rows;
	foreach(lc, names)
	{
		if (left <= 0)
			break;
		left -= (int64) retention_exec_name(
			"DELETE FROM kizunasync.row_hlc h"
			" WHERE h.ctid OPERATOR(pg_catalog.=) ANY (SELECT x.ctid FROM kizunasync.row_hlc x"
			"   WHERE x.table_name OPERATOR(pg_catalog.=) $1"
			"   LIMIT $2 FOR UPDATE SKIP LOCKED)",
			(const char *) lfirst(lc), left, SPI_OK_DELETE);
	}

	kz_spi_finish();
	PG_RETURN_INT64(max_seq);
}

/*
 * compact_changelog(max_rows integer DEFAULT 100000) RETURNS bigint
 *
 * The changelog keeps one entry per row key by construction, and a row
 * key's entry is deleted by every change that supersedes it, tombstones
 * included (decisions/0003), so there are no superseded entries to remove;
 * what can pile up is bookkeeping nothing can deliver any more: entries of
 * tables that are no longer synced (left by a transaction that raced
 * unsync_table), found by table name, and journal rows whose winning entry
 * is gone (pull attaches a conflict only beside its winning entry).
 * Returns the number of rows removed.
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
	List	   *tids;
	ListCell   *lc;

	retention_entry(fcinfo, fname);
	max_rows = retention_max_rows(fcinfo, fname);
	kz_spi_connect();
	tids = kz_entry_orphan_tables();
	if (tids != NIL)
	{
		/*
		 * Before removing anything, keep sync_table from bringing such a
		 * table back until this transaction ends: its writers would meet
		 * the entries removed here and wait for this call.  Then look again
		 * (READ COMMITTED: a fresh snapshot after the wait).
		 */
		kz_spi_priv("LOCK TABLE kizunasync.synced_tables IN SHARE MODE",
					0, NULL, NULL, NULL, false, 0, SPI_OK_UTILITY);
		tids = kz_entry_orphan_tables();
	}
	foreach(lc, tids)
	{
		if ((int64) n >= max_rows)
			break;
		n += kz_entry_remove_table(lfirst_int(lc), max_rows - (int64) n);
	}
	n += kz_entry_compact_journal(max_rows);
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
